//! [`ProviderInfo`]: what sets one provider apart besides its wire format: its environment
//! variables, defaults, user agent, key header and fixed headers, what its API takes.

use tinyagent_core::model::SamplingOption;

/// A provider's names and defaults: its environment variables, its own base URL, how its key
/// is sent, the headers every request carries.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ProviderInfo {
    /// The variables of the key, the base URL and the model, in this order.
    pub env: [&'static str; 3],
    /// What to set when none of them is
    /// ([`ConfigError::NotConfigured`](crate::ConfigError::NotConfigured)).
    pub not_configured: &'static str,
    /// The provider's own base URL, the example of a valid one.
    pub default_base_url: &'static str,
    /// The `User-Agent` of its requests.
    pub user_agent: &'static str,
    /// The header that carries the key, and what comes before the key in it (`Bearer `).
    pub key_header: (&'static str, &'static str),
    /// Headers every request carries besides the key (an API version).
    pub headers: &'static [(&'static str, &'static str)],
    /// The token limit the API applies when a request sends none (the one named in the
    /// error of a reply that grows too large).
    pub implied_max_tokens: Option<u32>,
    /// What a request the API rejects most often gets wrong (said in the error of a 4xx
    /// with no words of its own); empty for nothing.
    pub rejected_hint: &'static str,
    /// The sampling options the API takes ([`Model::supports`](tinyagent_core::Model::supports));
    /// only the temperature until [`sampling`](Self::sampling) says more.
    pub sampling: &'static [SamplingOption],
    /// Who serves the API, in OpenTelemetry's words (`gen_ai.provider.name`); `None` until
    /// [`provider`](Self::provider) says.
    pub provider: Option<&'static str>,
}

impl ProviderInfo {
    /// A provider with these environment variables (key, base URL, model), the help of
    /// [`ConfigError::NotConfigured`](crate::ConfigError::NotConfigured), its own base URL and
    /// its user agent; its key is sent as `Authorization: Bearer …` until
    /// [`key_header`](Self::key_header) says otherwise.
    pub const fn new(
        env: [&'static str; 3],
        not_configured: &'static str,
        default_base_url: &'static str,
        user_agent: &'static str,
    ) -> Self {
        Self {
            env,
            not_configured,
            default_base_url,
            user_agent,
            key_header: ("authorization", "Bearer "),
            headers: &[],
            implied_max_tokens: None,
            rejected_hint: "",
            sampling: &[SamplingOption::Temperature],
            provider: None,
        }
    }

    /// Names who serves the API, as OpenTelemetry's GenAI conventions do (`"openai"`,
    /// `"anthropic"`, `"gcp.gemini"`): the `gen_ai.provider.name` of its model calls.
    #[must_use]
    pub const fn provider(mut self, name: &'static str) -> Self {
        self.provider = Some(name);
        self
    }

    /// Takes these sampling options (the request body sends each one a request sets).
    #[must_use]
    pub const fn sampling(mut self, options: &'static [SamplingOption]) -> Self {
        self.sampling = options;
        self
    }

    /// Sends the key in the header `name`, as it is.
    #[must_use]
    pub const fn key_header(mut self, name: &'static str) -> Self {
        self.key_header = (name, "");
        self
    }

    /// Sends these headers with every request.
    #[must_use]
    pub const fn headers(mut self, headers: &'static [(&'static str, &'static str)]) -> Self {
        self.headers = headers;
        self
    }

    /// Says what a rejected request most often gets wrong.
    #[must_use]
    pub const fn rejected_hint(mut self, hint: &'static str) -> Self {
        self.rejected_hint = hint;
        self
    }

    /// Names this token limit when a request sends none.
    #[must_use]
    pub const fn implied_max_tokens(mut self, max_tokens: u32) -> Self {
        self.implied_max_tokens = Some(max_tokens);
        self
    }
}
