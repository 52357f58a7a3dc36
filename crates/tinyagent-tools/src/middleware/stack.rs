//! [`ToolStack`]: middleware stacked for a tool, outermost first.

use std::sync::Arc;

use super::layer::ToolMiddleware;
use super::logging::LoggingLayer;
use super::retry::RetryLayer;
use super::timeout::TimeoutLayer;
use super::wrap;
use crate::Tool;

/// Middleware stacked for a tool, outermost first: tower's `ServiceBuilder` for tools.
///
/// [`layer`](Self::layer) adds any [`ToolLayer`](super::ToolLayer) (or [`ToolMiddleware`]); [`logging`],
/// [`timeout`] and [`retry`] add the usual three. [`wrap`](Self::wrap) applies the stack to a
/// tool, as [`wrap_tool`](crate::wrap_tool) does; a stack can wrap many tools, each
/// getting its own layer state (its own cache, its own limits).
///
/// [`logging`]: Self::logging
/// [`timeout`]: Self::timeout
/// [`retry`]: Self::retry
#[derive(Clone, Debug, Default)]
pub struct ToolStack {
    layers: Vec<ToolMiddleware>,
}

impl ToolStack {
    /// An empty stack: wrapping with it changes nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `layer` inside the layers added before it.
    #[must_use]
    pub fn layer(mut self, layer: impl Into<ToolMiddleware>) -> Self {
        self.layers.push(layer.into());
        self
    }

    /// Adds a [`LoggingLayer`].
    #[must_use]
    pub fn logging(self) -> Self {
        self.layer(LoggingLayer::new())
    }

    /// Adds a [`TimeoutLayer`] of `duration`.
    #[must_use]
    pub fn timeout(self, duration: std::time::Duration) -> Self {
        self.layer(TimeoutLayer::new(duration))
    }

    /// Adds a [`RetryLayer`] of up to `max_retries` retries.
    #[must_use]
    pub fn retry(self, max_retries: u32) -> Self {
        self.layer(RetryLayer::new(max_retries))
    }

    /// The tool with every layer of the stack around it.
    pub fn wrap(&self, tool: impl crate::IntoTool) -> Arc<dyn Tool> {
        wrap::wrap_tool(tool, self.layers.iter().cloned())
    }
}
