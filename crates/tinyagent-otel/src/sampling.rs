//! Head sampling: whether a trace is kept is decided when its first span starts, so a trace
//! that is not kept costs (almost) nothing.
//!
//! The OpenTelemetry SDK samples a span when `tracing-opentelemetry` hands it over, that is
//! when the span ends: by then it has been built, its fields visited and its attributes
//! collected. Here the decision is a per-layer filter on the exporting layer: a trace's root
//! span is kept with the configured probability, every span under a kept span is kept, and
//! every span under a dropped one is dropped, so a trace is exported whole or not at all, and
//! the spans of a dropped trace never reach `tracing-opentelemetry` or the SDK. (The `tracing`
//! registry still makes them: it keeps a span that every per-layer filter turned down.)

use opentelemetry_sdk::trace::Sampler;
use tracing::{Level, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Filter};
use tracing_subscriber::registry::LookupSpan;

/// Reads a variable (`None` when unset or blank).
pub(crate) type Var<'a> = dyn Fn(&str) -> Option<String> + 'a;

/// Which traces are kept: the `OTEL_TRACES_SAMPLER` (and `..._ARG`) variables, read as the
/// OpenTelemetry SDK reads them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Sampling {
    /// The probability that a trace starting in this process is kept.
    pub(crate) ratio: f64,
    /// Whether a caller's decision (a `traceparent`'s sampled flag) counts: the `parentbased_*`
    /// samplers, the default.
    pub(crate) parent_based: bool,
}

impl Default for Sampling {
    /// `parentbased_always_on`, the SDK's default.
    fn default() -> Self {
        Self {
            ratio: 1.0,
            parent_based: true,
        }
    }
}

impl Sampling {
    /// A ratio set in code (parent-based), else what the variables `var` reads say, else the
    /// default.
    pub(crate) fn chosen(ratio: Option<f64>, var: Option<&Var<'_>>) -> Self {
        match (ratio, var) {
            (Some(ratio), _) => Self {
                ratio,
                parent_based: true,
            },
            (None, Some(var)) => Self::from_vars(
                var("OTEL_TRACES_SAMPLER").as_deref(),
                var("OTEL_TRACES_SAMPLER_ARG").as_deref(),
            ),
            (None, None) => Self::default(),
        }
    }

    /// The sampling `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` name; a sampler this
    /// SDK does not have (`jaeger_remote`, `xray`) keeps every trace, as the SDK falls back
    /// to, and a missing or bad ratio is 1.
    pub(crate) fn from_vars(sampler: Option<&str>, arg: Option<&str>) -> Self {
        let ratio = || {
            arg.and_then(|a| a.trim().parse::<f64>().ok())
                .filter(|r| (0.0..=1.0).contains(r))
                .unwrap_or(1.0)
        };
        let (ratio, parent_based) = match sampler.map(|s| s.trim().to_ascii_lowercase()) {
            None => (1.0, true),
            Some(name) => match name.as_str() {
                "always_on" => (1.0, false),
                "always_off" => (0.0, false),
                "traceidratio" => (ratio(), false),
                "parentbased_always_on" => (1.0, true),
                "parentbased_always_off" => (0.0, true),
                "parentbased_traceidratio" => (ratio(), true),
                _ => (1.0, true),
            },
        };
        Self {
            ratio,
            parent_based,
        }
    }

    /// The sampler the SDK is given: the ratio is applied here, at the root, so the SDK keeps
    /// what it gets, and honours a caller's "not sampled" when parent-based.
    pub(crate) fn sdk_sampler(&self) -> Sampler {
        if self.parent_based {
            Sampler::ParentBased(Box::new(Sampler::AlwaysOn))
        } else {
            Sampler::AlwaysOn
        }
    }

    /// The filter that applies the ratio, when some traces are to be dropped.
    pub(crate) fn filter(&self) -> Option<HeadSampler> {
        (self.ratio < 1.0).then_some(HeadSampler { ratio: self.ratio })
    }
}

/// The per-layer filter that keeps a trace's spans with probability `ratio`, deciding at its
/// root.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HeadSampler {
    ratio: f64,
}

/// Whether `meta` is one of the spans the exporting layer takes (a tinyagent span at `INFO`
/// or above), so that its being filtered out means its trace was dropped.
fn exportable(meta: &Metadata<'_>) -> bool {
    meta.target().starts_with(crate::SCOPE) && *meta.level() <= Level::INFO
}

impl<S> Filter<S> for HeadSampler
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn enabled(&self, meta: &Metadata<'_>, cx: &Context<'_, S>) -> bool {
        if !meta.is_span() {
            // An event goes to the span it is in, which is there only if its trace is kept.
            return true;
        }
        // The nearest enclosing span this layer exports: the trace is being kept.
        if cx.lookup_current().is_some() {
            return true;
        }
        match cx.current_span().metadata() {
            // Inside one of tinyagent's spans that this layer does not export: a dropped trace.
            Some(parent) if exportable(parent) => false,
            // A new trace (or one whose spans are not tinyagent's): decide.
            _ => fastrand::f64() < self.ratio,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variables_are_read_as_the_sdk_reads_them() {
        assert_eq!(Sampling::from_vars(None, None), Sampling::default());
        let read = |s, a| {
            let sampling = Sampling::from_vars(Some(s), a);
            (sampling.ratio, sampling.parent_based)
        };
        assert_eq!(read("always_on", None), (1.0, false));
        assert_eq!(read("always_off", Some("0.5")), (0.0, false));
        assert_eq!(read("traceidratio", Some("0.25")), (0.25, false));
        assert_eq!(
            read(" ParentBased_TraceIdRatio ", Some(" 0.01 ")),
            (0.01, true)
        );
        assert_eq!(read("parentbased_always_off", None), (0.0, true));
        // A bad or missing ratio keeps everything, as the SDK does; so does a sampler it lacks.
        assert_eq!(read("traceidratio", Some("2")), (1.0, false));
        assert_eq!(read("traceidratio", Some("a tenth")), (1.0, false));
        assert_eq!(read("parentbased_traceidratio", None), (1.0, true));
        assert_eq!(read("xray", Some("0.1")), (1.0, true));
    }

    #[test]
    fn a_ratio_set_in_code_wins_over_the_variables() {
        let var = |name: &str| match name {
            "OTEL_TRACES_SAMPLER" => Some("always_off".to_owned()),
            _ => None,
        };
        assert_eq!(Sampling::chosen(None, Some(&var)).ratio, 0.0);
        assert_eq!(Sampling::chosen(Some(0.5), Some(&var)).ratio, 0.5);
        assert_eq!(Sampling::chosen(None, None), Sampling::default());
    }

    #[test]
    fn a_filter_only_when_traces_are_dropped() {
        assert!(Sampling::default().filter().is_none());
        assert!(
            Sampling::from_vars(Some("always_on"), None)
                .filter()
                .is_none()
        );
        assert!(
            Sampling::from_vars(Some("always_off"), None)
                .filter()
                .is_some()
        );
        assert!(
            Sampling::from_vars(Some("traceidratio"), Some("0.5"))
                .filter()
                .is_some()
        );
    }
}
