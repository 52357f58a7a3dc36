//! The call syntax each chat template gets.
use super::*;

#[test]
fn the_call_syntax_follows_the_chat_template() {
    // Qwen 2.5's template (its tool section, as the GGUF file stores it).
    let qwen = r#"{{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }} {{- '\n<tool_response>\n' }}"#;
    assert_eq!(Format::of_template(qwen), Format::Hermes);
    let listed =
        "<tools>{{ tools }}</tools> reply <tool_call>[...]</tool_call>, results <tool_response>";
    assert_eq!(Format::of_template(listed), Format::Tagged);
    let smollm2 = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}";
    assert_eq!(Format::of_template(smollm2), Format::Json);
}
