//! [`ContentSlot`]: where a tool leaves the rich part of its result for whoever runs it.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use crate::content::RichContent;

/// Where a tool call leaves what its result holds besides text (content parts, structured
/// content), for whoever ran the call to pick up.
///
/// [`Tool::handle`](crate::Tool::handle) returns text; a tool whose result is richer (an
/// image, a resource, structured content) returns the text rendering and puts the rest here
/// through [`ToolContext::put_rich_content`](crate::ToolContext::put_rich_content). Typed tools
/// that return a [`ToolOutput`](crate::tools::ToolOutput) do this without further ado. Agents
/// and MCP servers attach a fresh slot to every call's context and take its content after the
/// call; without a slot the rich part is dropped and the text stands alone.
///
/// ```
/// use tinyagent::{ContentPart, ContentSlot, RichContent, ToolContext};
///
/// let slot = ContentSlot::new();
/// let ctx = ToolContext::new().with_content_slot(slot.clone());
/// assert!(ctx.put_rich_content(RichContent::new(vec![ContentPart::image("AAAA", "image/png")], None)));
/// assert_eq!(slot.take().unwrap().parts.len(), 1);
/// assert!(slot.take().is_none());
/// assert!(!ToolContext::new().put_rich_content(RichContent::default()));
/// ```
#[derive(Clone, Default)]
pub struct ContentSlot(Arc<Mutex<Option<RichContent>>>);

impl ContentSlot {
    /// An empty slot.
    pub fn new() -> Self {
        Self::default()
    }

    /// Leaves content in the slot, replacing what was there (a retried call's last attempt
    /// wins).
    pub fn put(&self, content: RichContent) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(content);
    }

    /// Takes the content out of the slot.
    pub fn take(&self) -> Option<RichContent> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    /// Empties the slot.
    pub fn clear(&self) {
        let _ = self.take();
    }
}

impl fmt::Debug for ContentSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let full = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some();
        f.debug_tuple("ContentSlot")
            .field(&if full { "full" } else { "empty" })
            .finish()
    }
}
