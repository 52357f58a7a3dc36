//! The questions of the `tool_eval` example, each with the call it needs: the tuning part the
//! defaults were chosen on ([`cases`]) and the reporting part they never saw
//! ([`reporting_cases`]).

/// What an argument must be.
#[derive(Debug, Clone)]
pub enum Want {
    /// Equal to one of these strings (case and surrounding space ignored).
    Text(&'static [&'static str]),
    /// This number.
    Number(f64),
    /// Contains this text (case ignored).
    Contains(&'static str),
    /// Absent, or equal to this string.
    AbsentOr(&'static str),
}

/// One question and the call it needs (`None`: no tool).
pub struct Case {
    pub question: &'static str,
    pub tool: Option<&'static str>,
    pub args: Vec<(&'static str, Want)>,
}

fn call(question: &'static str, tool: &'static str, args: Vec<(&'static str, Want)>) -> Case {
    Case {
        question,
        tool: Some(tool),
        args,
    }
}

fn none(question: &'static str) -> Case {
    Case {
        question,
        tool: None,
        args: Vec::new(),
    }
}

fn weather(
    question: &'static str,
    city: &'static [&'static str],
    unit: Option<&'static str>,
) -> Case {
    let unit = match unit {
        Some(u) => Want::Text(match u {
            "fahrenheit" => &["fahrenheit"],
            _ => &["celsius"],
        }),
        None => Want::AbsentOr("celsius"),
    };
    call(
        question,
        "get_weather",
        vec![("city", Want::Text(city)), ("unit", unit)],
    )
}

fn calc(question: &'static str, operation: &'static str, a: f64, b: Option<f64>) -> Case {
    let operation = Want::Text(match operation {
        "add" => &["add"],
        "subtract" => &["subtract"],
        "multiply" => &["multiply"],
        "divide" => &["divide"],
        "sqrt" => &["sqrt"],
        _ => &["power"],
    });
    let mut args = vec![("operation", operation), ("a", Want::Number(a))];
    if let Some(b) = b {
        args.push(("b", Want::Number(b)));
    }
    call(question, "calculator", args)
}

fn time(question: &'static str, zone: &'static [&'static str]) -> Case {
    call(
        question,
        "get_current_time",
        vec![("timezone", Want::Text(zone))],
    )
}

fn translate(question: &'static str, text: &'static str) -> Case {
    call(
        question,
        "translator",
        vec![("message", Want::Contains(text))],
    )
}

/// The tuning part (the defaults were chosen on it): weather for many cities and both units,
/// every calculator operation, time zones by city name, the translator, and questions that
/// need no tool.
pub fn cases() -> Vec<Case> {
    vec![
        weather("北京天气怎么样？", &["北京"], None),
        weather("上海今天的天气如何？", &["上海"], None),
        weather("广州现在下雨吗？", &["广州"], None),
        weather(
            "深圳天气怎么样？用华氏度告诉我。",
            &["深圳"],
            Some("fahrenheit"),
        ),
        weather("杭州的气温是多少摄氏度？", &["杭州"], Some("celsius")),
        weather("成都明天冷不冷？", &["成都"], None),
        weather("查一下南京的天气", &["南京"], None),
        weather(
            "What is the weather in Beijing?",
            &["Beijing", "北京"],
            None,
        ),
        weather(
            "How is the weather in Shanghai today?",
            &["Shanghai", "上海"],
            None,
        ),
        weather(
            "What's the weather like in London, in Fahrenheit?",
            &["London", "伦敦"],
            Some("fahrenheit"),
        ),
        weather("Is it raining in Paris?", &["Paris", "巴黎"], None),
        weather(
            "Tell me the temperature in Tokyo in celsius.",
            &["Tokyo", "东京"],
            Some("celsius"),
        ),
        weather("Weather in New York please", &["New York", "纽约"], None),
        weather(
            "Do I need an umbrella in Seattle today?",
            &["Seattle", "西雅图"],
            None,
        ),
        calc("帮我算一下 7 乘以 8 等于多少。", "multiply", 7.0, Some(8.0)),
        calc("3 加 5 等于几？", "add", 3.0, Some(5.0)),
        calc("100 减去 37 是多少？", "subtract", 100.0, Some(37.0)),
        calc("144 除以 12 等于多少？", "divide", 144.0, Some(12.0)),
        calc("81 的平方根是多少？", "sqrt", 81.0, None),
        calc("2 的 10 次方是多少？", "power", 2.0, Some(10.0)),
        calc("What is 12 plus 30?", "add", 12.0, Some(30.0)),
        calc("What is 9 minus 4?", "subtract", 9.0, Some(4.0)),
        calc("Calculate 6 times 7.", "multiply", 6.0, Some(7.0)),
        calc("What is 56 divided by 8?", "divide", 56.0, Some(8.0)),
        calc("What is the square root of 49?", "sqrt", 49.0, None),
        calc("What is 3 to the power of 4?", "power", 3.0, Some(4.0)),
        time("东京现在几点？", &["Asia/Tokyo"]),
        time("纽约现在是什么时间？", &["America/New_York"]),
        time("What time is it in London?", &["Europe/London"]),
        time("What is the current time in Shanghai?", &["Asia/Shanghai"]),
        time("现在巴黎几点了？", &["Europe/Paris"]),
        time(
            "What time is it now in Los Angeles?",
            &["America/Los_Angeles"],
        ),
        translate("把“你好，世界”翻译成英文。", "你好，世界"),
        translate("请翻译：今天天气很好", "今天天气很好"),
        translate("Translate \"good morning\" into Chinese.", "good morning"),
        translate(
            "How do you say \"thank you very much\" in Chinese?",
            "thank you very much",
        ),
        none("你好！"),
        none("你是谁？"),
        none("谢谢你的帮助。"),
        none("Hello! How are you?"),
        none("Tell me a short joke."),
        none("Write one sentence about spring."),
    ]
}

/// The reporting part: questions no default was tuned on (the tuning part is [`cases`]), new
/// wordings, cities and operations, and more that need no tool (greetings, thanks, small talk,
/// questions about the assistant, requests no offered tool serves).
pub fn reporting_cases() -> Vec<Case> {
    vec![
        weather("深圳现在多少度？", &["深圳"], None),
        weather("广州天气如何？", &["广州"], None),
        weather("伦敦今天天气怎么样？", &["伦敦", "London"], None),
        weather("Is it cold in Beijing today?", &["Beijing", "北京"], None),
        weather(
            "How warm is it in Shanghai, in Fahrenheit?",
            &["Shanghai", "上海"],
            Some("fahrenheit"),
        ),
        weather("Sydney weather right now?", &["Sydney", "悉尼"], None),
        calc("What is 15 divided by 3?", "divide", 15.0, Some(3.0)),
        calc("帮我算 25 加 17", "add", 25.0, Some(17.0)),
        calc("9 乘以 12 是多少？", "multiply", 9.0, Some(12.0)),
        calc("What is 2 to the power of 8?", "power", 2.0, Some(8.0)),
        calc("64 的平方根？", "sqrt", 64.0, None),
        time("首尔现在几点？", &["Asia/Seoul"]),
        time("What's the time in Berlin right now?", &["Europe/Berlin"]),
        translate("把“早上好”翻译成英文", "早上好"),
        none("早上好！"),
        none("谢谢！"),
        none("Thanks, that's all."),
        none("你能做什么？"),
        none("What's your name?"),
        none("晚安"),
        none("好的，明白了。"),
        none("Good morning!"),
        none("给我讲个笑话吧。"),
        none("用一句话介绍一下你自己。"),
        none("Can you write a haiku about the sea?"),
        none("不用了，谢谢。"),
        none("Bye!"),
        none("What is the capital of France?"),
        none("推荐一本好书。"),
        none("How are you today?"),
    ]
}
