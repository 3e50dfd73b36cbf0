//! One two-call sample per built-in format, shared by the scanner's and the turn's tests.

/// One two-call sample per format, with what the calls must be.
pub(crate) fn samples() -> Vec<(&'static str, String)> {
    vec![
        ("hermes", "hi <tool_call>\n{\"name\": \"a\", \"arguments\": {\"q\": \"</tool_call><tool_call>\"}}\n</tool_call><tool_call>{\"arguments\": {}, \"name\": \"b\"}</tool_call> bye".into()),
        ("qwen3_coder", "<tool_call>\n<function=a>\n<parameter=q>\na </parameter> b\n</parameter>\n</function>\n</tool_call><tool_call>\n<function=b>\n</function>\n</tool_call>".into()),
        ("llama3_json", "<|python_tag|>{\"name\": \"a\", \"parameters\": {\"q\": \"}{\"}}; {\"name\": \"b\", \"parameters\": {}}".into()),
        ("pythonic", "[a(q='])'), b()]".into()),
        ("mistral", "[TOOL_CALLS]a[ARGS]{\"q\": \"}\"}[TOOL_CALLS]b{}".into()),
        ("deepseek_v3", "ok<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>a\n```json\n{\"q\": 1}\n```<｜tool▁call▁end｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>b\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>".into()),
        ("deepseek_v31", "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>a<｜tool▁sep｜>{\"q\": 1}<｜tool▁call▁end｜><｜tool▁call▁begin｜>b<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>".into()),
        ("deepseek_v32", "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"a\">\n<｜DSML｜parameter name=\"q\" string=\"false\">1</｜DSML｜parameter>\n</｜DSML｜invoke>\n<｜DSML｜invoke name=\"b\">\n</｜DSML｜invoke>\n</｜DSML｜function_calls>".into()),
        ("kimi_k2", "<|tool_calls_section_begin|><|tool_call_begin|>functions.a:0<|tool_call_argument_begin|>{\"q\": 1}<|tool_call_end|><|tool_call_begin|>functions.b:1<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>".into()),
        ("glm45", "<tool_call>a\n<arg_key>q</arg_key>\n<arg_value>1</arg_value>\n</tool_call><tool_call>b\n</tool_call>".into()),
        ("glm47", "<tool_call>a<arg_key>q</arg_key><arg_value>1</arg_value></tool_call><tool_call>b</tool_call>".into()),
        ("openai", "<|channel|>commentary to=functions.a <|constrain|>json<|message|>{\"q\": 1}<|call|><|start|>assistant to=functions.b<|channel|>commentary json<|message|>{}<|call|>".into()),
        ("granite", "<|tool_call|>[{\"name\": \"a\", \"arguments\": {\"q\": 1}}, {\"name\": \"b\", \"arguments\": {}}]".into()),
        ("internlm", "<|action_start|><|plugin|>\n{\"name\": \"a\", \"parameters\": {\"q\": 1}}<|action_end|><|action_start|><|plugin|>{\"name\": \"b\"}<|action_end|>".into()),
        ("jamba", "<tool_calls>[{\"name\": \"a\", \"arguments\": {\"q\": 1}}, {\"name\": \"b\", \"arguments\": {}}]</tool_calls>".into()),
        ("xlam", "```json\n[{\"name\": \"a\", \"arguments\": {\"q\": 1}}, {\"name\": \"b\", \"arguments\": {}}]\n```".into()),
        ("phi4_mini_json", "<|tool_call|>[{\"name\": \"a\", \"arguments\": {\"q\": 1}}, {\"name\": \"b\", \"arguments\": {}}]<|/tool_call|>".into()),
        ("minimax", "<tool_calls>\n{\"name\": \"a\", \"arguments\": {\"q\": 1}}\n{\"name\": \"b\", \"arguments\": {}}\n</tool_calls>".into()),
        ("minimax_m2", "<minimax:tool_call>\n<invoke name=\"a\">\n<parameter name=\"q\">1</parameter>\n</invoke>\n<invoke name=\"b\">\n</invoke>\n</minimax:tool_call>".into()),
    ]
}
