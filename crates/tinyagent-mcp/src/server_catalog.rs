//! How an [`McpServer`] is given prompts and resources, and which resources a client may
//! subscribe to.

use rmcp::ErrorData;

use crate::server::McpServer;

impl McpServer {
    /// Adds a prompt (see [`McpPrompt`](crate::McpPrompt)); clients list it, get it rendered
    /// and complete its arguments.
    #[must_use]
    pub fn prompt(self, prompt: crate::McpPrompt) -> Self {
        self.configure(|inner| inner.catalog.prompts.push(prompt))
    }

    /// Adds a resource (see [`McpResource`](crate::McpResource)); clients list, read and
    /// subscribe to it.
    #[must_use]
    pub fn resource(self, resource: crate::McpResource) -> Self {
        self.configure(|inner| inner.catalog.resources.push(resource))
    }

    /// Adds resources under a URI template (see
    /// [`McpResourceTemplate`](crate::McpResourceTemplate)).
    #[must_use]
    pub fn resource_template(self, template: crate::McpResourceTemplate) -> Self {
        self.configure(|inner| inner.catalog.templates.push(template))
    }

    /// Subscribing needs a resource the server has.
    pub(crate) fn known_resource(&self, uri: &str) -> Result<(), ErrorData> {
        if self.inner.catalog.knows(uri) {
            Ok(())
        } else {
            Err(ErrorData::new(
                rmcp::model::ErrorCode::RESOURCE_NOT_FOUND,
                format!("no resource has the URI {uri:?}"),
                None,
            ))
        }
    }
}
