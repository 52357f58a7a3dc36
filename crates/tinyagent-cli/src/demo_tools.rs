//! The demo tools as the command offers them to models and MCP clients.
//!
//! They are the tutorial's tools, with the tutorial's names, schemas and results. Two of them return
//! canned data: the weather tool knows three cities' fixed sample values, and the translator
//! always gives the same sample translation. The tutorial describes them as real-time weather and
//! as a translation expert; offered to a real model or MCP client, those descriptions would
//! mislead, so here they say plainly that the data is demo data, and say what each tool gives
//! (the weather's temperature, conditions and humidity; the clock's time zone), which is what a
//! model reads to choose among them.

use std::sync::Arc;

use serde_json::Value;
use tinyagent::{BoxFuture, Tool, ToolContext, ToolError, ToolHints, demo};

/// What `get_weather` says it does when the command offers it.
pub const WEATHER_DESCRIPTION: &str =
    "获取指定城市的当前天气：温度、天气状况（晴、雨、雪等）和湿度（演示数据 demo data）";

/// What `translator` says it does when the command offers it.
pub const TRANSLATOR_DESCRIPTION: &str =
    "把文本翻译成另一种语言（演示数据 demo data：返回固定的示例译文）";

/// What `get_current_time` says it does when the command offers it.
pub const TIME_DESCRIPTION: &str = "获取某个时区（如 Asia/Shanghai）当前的日期和时间";

/// TinyAgent's `get_weather`, described as the demo data it returns.
pub fn weather_tool() -> Arc<dyn Tool> {
    described(demo::weather_tool(), WEATHER_DESCRIPTION)
}

/// TinyAgent's `calculator` (it really calculates: the tutorial's description stays).
pub fn calculator_tool() -> Arc<dyn Tool> {
    demo::calculator_tool()
}

/// TinyAgent's `get_current_time` (it reads the real clock), described with what it takes.
pub fn time_tool() -> Arc<dyn Tool> {
    described(demo::time_tool(), TIME_DESCRIPTION)
}

/// TinyAgent's `translator`, described as the demo data it returns.
pub fn translator_tool() -> Arc<dyn Tool> {
    described(demo::translator_tool(), TRANSLATOR_DESCRIPTION)
}

/// All four, in the tutorial's order: weather, calculator, current time, translator.
pub fn all_tools() -> Vec<Arc<dyn Tool>> {
    vec![
        weather_tool(),
        calculator_tool(),
        time_tool(),
        translator_tool(),
    ]
}

/// `tool` with another description; its name, schema, hints and calls are its own.
fn described(tool: Arc<dyn Tool>, description: &'static str) -> Arc<dyn Tool> {
    Arc::new(Described { tool, description })
}

struct Described {
    tool: Arc<dyn Tool>,
    description: &'static str,
}

impl Tool for Described {
    fn name(&self) -> &str {
        self.tool.name()
    }

    fn description(&self) -> &str {
        self.description
    }

    fn input_schema(&self) -> &Value {
        self.tool.input_schema()
    }

    fn hints(&self) -> ToolHints {
        self.tool.hints()
    }

    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: tinyagent::tools::ToolInput,
    ) -> BoxFuture<'a, Result<tinyagent::tools::ToolOutput, ToolError>> {
        self.tool.call(ctx, input)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_descriptions_of_the_canned_tools_change() {
        let pairs = [
            (weather_tool(), demo::weather_tool()),
            (calculator_tool(), demo::calculator_tool()),
            (time_tool(), demo::time_tool()),
            (translator_tool(), demo::translator_tool()),
        ];
        for (offered, seed) in &pairs {
            assert_eq!(offered.name(), seed.name());
            assert_eq!(offered.input_schema(), seed.input_schema());
            assert_eq!(offered.hints(), seed.hints());
        }
        assert_eq!(pairs[0].0.description(), WEATHER_DESCRIPTION);
        assert_eq!(pairs[2].0.description(), TIME_DESCRIPTION);
        assert_eq!(pairs[3].0.description(), TRANSLATOR_DESCRIPTION);
        assert_eq!(pairs[1].0.description(), pairs[1].1.description());
        for text in [WEATHER_DESCRIPTION, TRANSLATOR_DESCRIPTION] {
            assert!(
                text.contains("demo data") && text.contains("演示数据"),
                "{text}"
            );
        }
        let (offered, seed) = (all_tools(), demo::seed_tools());
        let names = |tools: &[Arc<dyn Tool>]| -> Vec<String> {
            tools.iter().map(|t| t.name().to_owned()).collect()
        };
        assert_eq!(names(&offered), names(&seed));
    }

    #[tokio::test]
    async fn calls_go_to_the_seed_tools() {
        let ctx = ToolContext::new();
        let out = weather_tool()
            .handle(&ctx, r#"{"city": "上海"}"#)
            .await
            .unwrap();
        let out: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(out["temperature"], 25.0);
        let err = weather_tool()
            .handle(&ctx, r#"{"city": "火星"}"#)
            .await
            .unwrap_err();
        assert!(err.message().contains("火星"), "{err}");
        let out = translator_tool()
            .handle(&ctx, r#"{"message": "你好"}"#)
            .await
            .unwrap();
        assert!(out.contains("Hello, World!"), "{out}");
    }
}
