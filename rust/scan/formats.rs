//! The built-in formats, named as vLLM's `--tool-call-parser`; delimiters as
//! in `shared/FORMATS.md`.

use super::lexer::{StructStart, Syntax};
use super::spec::{Anchor, Body, FormatSpec, Framing, Reasoning};
use crate::error::CoreError;

/// Every built-in format name, in the order `inert.formats()` lists them.
pub const NAMES: &[&str] = &[
    "hermes",
    "qwen3_coder",
    "llama3_json",
    "pythonic",
    "mistral",
    "deepseek_v3",
    "deepseek_v31",
    "deepseek_v32",
    "kimi_k2",
    "glm45",
    "glm47",
    "openai",
    "granite",
    "internlm",
    "jamba",
    "xlam",
    "phi4_mini_json",
    "minimax",
    "minimax_m2",
];

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// A format whose calls sit between one opener and one closer.
fn delimited(name: &str, open: &[&str], close: &[&str], syntax: Syntax, body: Body) -> FormatSpec {
    FormatSpec {
        name: name.to_owned(),
        section_open: Vec::new(),
        section_close: Vec::new(),
        call_open: strings(open),
        call_close: strings(close),
        anchor: None,
        syntax,
        struct_start: StructStart::FirstBracket,
        body,
        reasoning: Some(Reasoning::pair("<think>", "</think>")),
        name_chars: String::new(),
        framing: None,
        arguments_required: false,
    }
}

/// A delimited format whose calls must sit inside a section.
fn sectioned(
    name: &str,
    section: (&[&str], &[&str]),
    call: (&[&str], &[&str]),
    syntax: Syntax,
    body: Body,
) -> FormatSpec {
    FormatSpec {
        section_open: strings(section.0),
        section_close: strings(section.1),
        ..delimited(name, call.0, call.1, syntax, body)
    }
}

/// Where a call may start without an opener: after `arm`, at a byte of `starts`.
fn anchor(arm: &[&str], starts: &[u8], separators: &[u8], at_start: bool) -> Anchor {
    Anchor { arm: strings(arm), starts: starts.to_vec(), separators: separators.to_vec(), at_start }
}

/// A whole-message format: the call starts at an anchor and ends structurally.
fn anchored(name: &str, arm: &[&str], starts: &[u8], separators: &[u8], syntax: Syntax, body: Body) -> FormatSpec {
    FormatSpec { anchor: Some(anchor(arm, starts, separators, true)), ..delimited(name, &[], &[], syntax, body) }
}

const DS_SECTION: (&[&str], &[&str]) = (&["<｜tool▁calls▁begin｜>"], &["<｜tool▁calls▁end｜>"]);
const DS_CALL: (&[&str], &[&str]) = (&["<｜tool▁call▁begin｜>"], &["<｜tool▁call▁end｜>"]);

/// The spec of a built-in format.
pub fn builtin(name: &str) -> Result<FormatSpec, CoreError> {
    let unknown = || CoreError::UnknownFormat {
        name: name.to_owned(),
        known: NAMES,
        suggestion: crate::error::closest(name, NAMES),
    };
    Ok(match name {
        "hermes" => delimited(name, &["<tool_call>"], &["</tool_call>"], Syntax::Json, Body::JsonObject),
        "qwen3_coder" => delimited(name, &["<tool_call>"], &["</tool_call>"], Syntax::Raw, Body::QwenXml),
        "llama3_json" => anchored(name, &["<|python_tag|>"], b"{", b";", Syntax::Json, Body::JsonObject),
        // A list at the message start or after <|python_start|> (Llama), or Olmo 3's
        // <function_calls> block with one call per line.
        "pythonic" => FormatSpec {
            anchor: Some(anchor(&["<|python_start|>"], b"[", b"", true)),
            ..delimited(name, &["<function_calls>"], &["</function_calls>"], Syntax::Python, Body::Pythonic)
        },
        "mistral" => FormatSpec {
            struct_start: StructStart::LeadingBracketOrBrace,
            reasoning: Some(Reasoning::pair("[THINK]", "[/THINK]")),
            ..delimited(name, &["[TOOL_CALLS]"], &[], Syntax::Json, Body::Mistral)
        },
        // JSON argument bodies use Syntax::Json even after a plain-text name, so
        // a closer spelled inside an argument string is text.
        "deepseek_v3" => sectioned(name, DS_SECTION, DS_CALL, Syntax::Json, Body::DeepSeekV3),
        "deepseek_v31" => {
            sectioned(name, DS_SECTION, DS_CALL, Syntax::Json, Body::NameSepJson { sep: "<｜tool▁sep｜>".to_owned() })
        }
        "deepseek_v32" => sectioned(
            name,
            (&["<｜DSML｜function_calls>"], &["</｜DSML｜function_calls>"]),
            (&["<｜DSML｜invoke name=\""], &["</｜DSML｜invoke>"]),
            Syntax::Raw,
            Body::DsmlXml,
        ),
        "kimi_k2" => FormatSpec {
            reasoning: Some(Reasoning { ended_by_call_token: true, ..Reasoning::pair("<think>", "</think>") }),
            ..sectioned(
                name,
                (
                    &["<|tool_calls_section_begin|>", "<|tool_call_section_begin|>"],
                    &["<|tool_calls_section_end|>", "<|tool_call_section_end|>"],
                ),
                (&["<|tool_call_begin|>"], &["<|tool_call_end|>"]),
                Syntax::Json,
                Body::IdSepJson { sep: "<|tool_call_argument_begin|>".to_owned() },
            )
        },
        "glm45" | "glm47" => delimited(name, &["<tool_call>"], &["</tool_call>"], Syntax::Raw, Body::GlmXml),
        // Harmony's reasoning is the analysis channel; a message with a recipient is a
        // call on any channel, and `<|end|>` ends every message, so it says nothing unopened.
        "openai" => FormatSpec {
            reasoning: Some(Reasoning {
                report_unopened: false,
                ..Reasoning::pair("<|channel|>analysis<|message|>", "<|end|>")
            }),
            // Headers (`<|start|>assistant<|channel|>final<|message|>`) and control tokens
            // frame every message: never content.
            framing: Some(Framing {
                open: strings(&["<|start|>", "<|channel|>"]),
                close: strings(&["<|message|>"]),
                hidden: strings(&["<|return|>", "<|constrain|>", "<|call|>", "<|end|>"]),
            }),
            ..delimited(name, &["to=functions."], &["<|call|>"], Syntax::Json, Body::Harmony)
        },
        // Granite 3.2 reasons in prose ("Here is my thought process:"): nothing to bind.
        "granite" => FormatSpec {
            reasoning: None,
            ..delimited(name, &["<|tool_call|>", "<tool_call>"], &[], Syntax::Json, Body::JsonObjects)
        },
        // Intern-S1 writes its two special tokens with a space between them.
        "internlm" => delimited(
            name,
            &["<|action_start|><|plugin|>", "<|action_start|> <|plugin|>"],
            &["<|action_end|>"],
            Syntax::Json,
            Body::JsonObject,
        ),
        // Jamba writes an array, MiniMax one object per line; JsonObjects reads both.
        "jamba" => delimited(name, &["<tool_calls>"], &["</tool_calls>"], Syntax::Json, Body::JsonObjects),
        // MiniMax's template writes every call's arguments: a line without them is no whole call.
        "minimax" => FormatSpec {
            arguments_required: true,
            ..delimited(name, &["<tool_calls>"], &["</tool_calls>"], Syntax::Json, Body::JsonObjects)
        },
        "xlam" => anchored(name, &["```json", "```", "</think>"], b"[", b"", Syntax::Json, Body::JsonObjects),
        // Phi-4-mini also writes `functools[…]`, which ends on its bracket.
        "phi4_mini_json" => FormatSpec {
            anchor: Some(anchor(&["functools"], b"[", b"", false)),
            ..delimited(name, &["<|tool_call|>"], &["<|/tool_call|>"], Syntax::Json, Body::JsonObjects)
        },
        "minimax_m2" => sectioned(
            name,
            (&["<minimax:tool_call>"], &["</minimax:tool_call>"]),
            (&["<invoke name=\""], &["</invoke>"]),
            Syntax::Raw,
            Body::MinimaxXml,
        ),
        _ => return Err(unknown()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_builds_and_unknown_lists_them() {
        for name in NAMES {
            assert_eq!(builtin(name).unwrap().name, *name);
        }
        let err = builtin("nope").unwrap_err().to_string();
        assert!(err.contains("\"nope\"") && err.contains("minimax_m2") && !err.contains("mean"), "{err}");
        let err = builtin("hermess").unwrap_err().to_string();
        assert!(err.contains("did you mean \"hermes\"?"), "{err}");
    }
}
