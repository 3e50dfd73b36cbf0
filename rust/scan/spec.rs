//! The declarative description of a tool-call format: the delimiters the
//! scanner searches for, how a block ends, and how its body becomes calls.
//! Built-in formats are values of this type (`formats.rs`); users describe
//! models not in the list the same way.

use super::lexer::{StructStart, Syntax};
use serde::Deserialize;
use serde_json::Value;

/// How a block's body turns into calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// One JSON object `{"name": …, "arguments"|"parameters": {…}}`.
    JsonObject,
    /// JSON call objects: an array of them, or one or more objects separated by
    /// whitespace, `;` or `,`.
    JsonObjects,
    /// `NAME<sep>{…}`, where `<sep>` is `sep` (DeepSeek V3.1).
    NameSepJson { sep: String },
    /// `ID<sep>{…}` where the call id `[functions.]NAME:IDX` names the tool (Kimi K2).
    IdSepJson { sep: String },
    /// `TYPE<｜tool▁sep｜>NAME⏎` then a fenced JSON block (DeepSeek V3).
    DeepSeekV3,
    /// `<function=NAME><parameter=K>V</parameter>…</function>` (Qwen3-Coder).
    QwenXml,
    /// `NAME<arg_key>K</arg_key><arg_value>V</arg_value>…` (GLM-4.5/4.7).
    GlmXml,
    /// `NAME"><｜DSML｜parameter name="K" string="true|false">V</｜DSML｜parameter>…` (DeepSeek V3.2).
    DsmlXml,
    /// `NAME"><parameter name="K">V</parameter>…` (MiniMax M2).
    MinimaxXml,
    /// `NAME …<|message|>{…}` (gpt-oss Harmony, after `to=functions.`).
    Harmony,
    /// `[f(a=1), g()]`: Python call syntax with literal arguments.
    Pythonic,
    /// `[{…}, …]` or `NAME[CALL_ID]ID[ARGS]{…}` / `NAME{…}` (Mistral, old and new).
    Mistral,
}

/// Where a block may start in formats whose calls have no opening delimiter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anchor {
    /// Delimiters after which a call may start (the message start always arms).
    pub arm: Vec<String>,
    /// Bytes that may open a call while armed.
    pub starts: Vec<u8>,
    /// Bytes skipped while armed (whitespace always is): separators between calls.
    pub separators: Vec<u8>,
    /// Whether the start of the message (and the end of a reasoning section) arms
    /// too; false where only an `arm` delimiter may start a call (`functools[`).
    pub at_start: bool,
}

/// Reasoning sections: the text between `open` and `close` is the model's
/// thinking, and a call inside it is a thought, never a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reasoning {
    pub open: Vec<String>,
    pub close: Vec<String>,
    /// A call or section opener that arrives as a special token ends an unclosed
    /// section: for models documented to call from inside their thinking (Kimi
    /// K2-Thinking, K2.5), whose control token is emitted only to call. Spelled in
    /// text it stays a thought.
    pub ended_by_call_token: bool,
    /// Whether a closer that arrives outside reasoning is reported: it means the
    /// prompt opened the section. Off where the closer also ends other messages
    /// (Harmony's `<|end|>`).
    pub report_unopened: bool,
}

impl Reasoning {
    /// A section between `open` and `close`, reported when its closer comes unopened.
    #[must_use]
    pub fn pair(open: &str, close: &str) -> Self {
        Self {
            open: vec![open.to_owned()],
            close: vec![close.to_owned()],
            ended_by_call_token: false,
            report_unopened: true,
        }
    }
}

/// Message framing outside calls (gpt-oss Harmony): control text that is never
/// content. Only streaming output reads it; calls are found the same either way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Framing {
    /// Open a message header (`<|start|>`): what follows is hidden up to a `close`
    /// (`<|message|>`), or up to a call opener (a recipient in the header).
    pub open: Vec<String>,
    pub close: Vec<String>,
    /// Control tokens hidden wherever they stand outside calls (`<|return|>`).
    pub hidden: Vec<String>,
}

/// A tool-call format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatSpec {
    pub name: String,
    /// Optional wrapper around the calls: calls are searched only inside it.
    pub section_open: Vec<String>,
    pub section_close: Vec<String>,
    /// Opening delimiters of one call block (empty: calls start at an anchor).
    pub call_open: Vec<String>,
    /// Closing delimiters (empty: the block ends when its value is
    /// structurally complete, confirmed by the next token or the end of turn).
    pub call_close: Vec<String>,
    pub anchor: Option<Anchor>,
    /// The body's string and bracket syntax: closers inside strings are text.
    pub syntax: Syntax,
    pub struct_start: StructStart,
    pub body: Body,
    /// The format's reasoning sections by default (`None`: it has none).
    pub reasoning: Option<Reasoning>,
    /// Characters a tool name may hold besides ASCII letters, digits, `_`, `-`, `.`, `:`.
    pub name_chars: String,
    /// The format's message framing, hidden from streamed content (`None`: none).
    pub framing: Option<Framing>,
    /// JSON call objects always write their arguments (MiniMax's template): an
    /// object without them is `missing_arguments`, not a call with none.
    pub arguments_required: bool,
}

impl FormatSpec {
    /// Whether blocks opened by `call_open` end structurally rather than at a
    /// closing delimiter (blocks an anchor starts always do).
    #[must_use]
    pub fn structural(&self) -> bool {
        self.call_close.is_empty()
    }
}

/// A custom format as users describe it (a dict in Python); see the README.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Custom {
    name: String,
    #[serde(default)]
    section_open: Vec<String>,
    #[serde(default)]
    section_close: Vec<String>,
    #[serde(default)]
    call_open: Vec<String>,
    #[serde(default)]
    call_close: Vec<String>,
    #[serde(default)]
    anchor: Option<CustomAnchor>,
    #[serde(default = "json_syntax")]
    syntax: String,
    #[serde(default)]
    struct_start: Option<String>,
    body: String,
    #[serde(default)]
    sep: Option<String>,
    #[serde(default = "think")]
    reasoning: Option<(String, String)>,
    #[serde(default)]
    calls_end_reasoning: bool,
    #[serde(default)]
    name_chars: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CustomAnchor {
    #[serde(default)]
    arm: Vec<String>,
    starts: String,
    #[serde(default)]
    separators: String,
    #[serde(default = "yes")]
    at_start: bool,
}

fn json_syntax() -> String {
    "json".to_owned()
}

#[allow(clippy::unnecessary_wraps)] // serde's `default` must return the field's type
fn think() -> Option<(String, String)> {
    Some(("<think>".to_owned(), "</think>".to_owned()))
}

fn yes() -> bool {
    true
}

/// The longest delimiter a custom format may have: a delimiter byte costs about
/// 250 bytes of automaton in every stream of the format, so a 2 MB delimiter made
/// a 500 MB stream that took 2.5 s to start, and a 20 kB arm took 11 s to build.
/// Real formats' delimiters are a few dozen bytes each, a few hundred together.
pub(crate) const MAX_DELIMITER_BYTES: usize = 256;
/// The most bytes a custom format's delimiters may come to together (see `MAX_DELIMITER_BYTES`).
pub(crate) const MAX_DELIMITERS_BYTES: usize = 4096;

/// The body layouts a custom format can name.
pub(crate) const BODY_NAMES: &[&str] = &[
    "json_object",
    "json_objects",
    "name_sep_json",
    "id_sep_json",
    "deepseek_v3",
    "qwen_xml",
    "glm_xml",
    "dsml_xml",
    "minimax_xml",
    "harmony",
    "pythonic",
    "mistral",
];

impl FormatSpec {
    /// A format from a user's description, or what is wrong with it.
    pub fn custom(doc: &Value) -> Result<Self, String> {
        let c = Custom::deserialize(doc).map_err(|e| format!("custom format: {e}"))?;
        let body = match (c.body.as_str(), c.sep) {
            ("name_sep_json", Some(sep)) if !sep.is_empty() => Body::NameSepJson { sep },
            ("id_sep_json", Some(sep)) if !sep.is_empty() => Body::IdSepJson { sep },
            ("name_sep_json" | "id_sep_json", _) => {
                return Err(format!("custom format: body {:?} needs a non-empty \"sep\"", c.body))
            }
            ("json_object", _) => Body::JsonObject,
            ("json_objects", _) => Body::JsonObjects,
            ("deepseek_v3", _) => Body::DeepSeekV3,
            ("qwen_xml", _) => Body::QwenXml,
            ("glm_xml", _) => Body::GlmXml,
            ("dsml_xml", _) => Body::DsmlXml,
            ("minimax_xml", _) => Body::MinimaxXml,
            ("harmony", _) => Body::Harmony,
            ("pythonic", _) => Body::Pythonic,
            ("mistral", _) => Body::Mistral,
            (other, _) => {
                return Err(format!("custom format: unknown body {other:?}; use one of {}", BODY_NAMES.join(", ")))
            }
        };
        let syntax = match c.syntax.as_str() {
            "json" => Syntax::Json,
            "python" => Syntax::Python,
            "raw" => Syntax::Raw,
            other => return Err(format!("custom format: unknown syntax {other:?}; use json, python or raw")),
        };
        let struct_start = match c.struct_start.as_deref() {
            None | Some("first_bracket") => StructStart::FirstBracket,
            Some("leading_bracket_or_brace") => StructStart::LeadingBracketOrBrace,
            Some(other) => {
                return Err(format!(
                    "custom format: unknown struct_start {other:?}; use first_bracket or leading_bracket_or_brace"
                ))
            }
        };
        let anchor = c.anchor.map(|a| Anchor {
            arm: a.arm,
            starts: a.starts.into_bytes(),
            separators: a.separators.into_bytes(),
            at_start: a.at_start,
        });
        let reasoning = c.reasoning.map(|(open, close)| Reasoning {
            ended_by_call_token: c.calls_end_reasoning,
            ..Reasoning::pair(&open, &close)
        });
        let spec = Self {
            name: c.name,
            section_open: c.section_open,
            section_close: c.section_close,
            call_open: c.call_open,
            call_close: c.call_close,
            anchor,
            syntax,
            struct_start,
            body,
            reasoning,
            name_chars: c.name_chars,
            framing: None,
            arguments_required: false,
        };
        spec.check()?;
        Ok(spec)
    }

    /// Every delimiter the format's automata are built from: reasoning tags,
    /// section and call delimiters, and the arms of an anchored format.
    fn delimiters(&self) -> impl Iterator<Item = &String> {
        let arm = self.anchor.as_ref().map(|a| a.arm.as_slice()).unwrap_or_default();
        let (open, close) =
            self.reasoning.as_ref().map_or((&[][..], &[][..]), |r| (r.open.as_slice(), r.close.as_slice()));
        [open, close, &self.section_open, &self.section_close, &self.call_open, &self.call_close, arm]
            .into_iter()
            .flatten()
    }

    fn check(&self) -> Result<(), String> {
        let none = Vec::new();
        let (think_open, think_close) = self.reasoning.as_ref().map_or((&none, &none), |r| (&r.open, &r.close));
        let all = [&self.section_open, &self.section_close, &self.call_open, &self.call_close, think_open, think_close];
        if all.iter().any(|d| d.iter().any(String::is_empty)) {
            return Err("custom format: delimiters must not be empty strings".into());
        }
        if let Some(d) = self.delimiters().find(|d| d.len() > MAX_DELIMITER_BYTES) {
            let start: String = d.chars().take(24).collect();
            return Err(format!(
                "custom format: the delimiter {start:?}... is {} bytes; a delimiter may be at most {MAX_DELIMITER_BYTES}",
                d.len()
            ));
        }
        let total: usize = self.delimiters().map(String::len).sum();
        if total > MAX_DELIMITERS_BYTES {
            return Err(format!(
                "custom format: the delimiters come to {total} bytes; together they may be at most \
                 {MAX_DELIMITERS_BYTES} (each byte costs about 250 bytes of automaton in every stream)"
            ));
        }
        if let Some(c) = self.name_chars.chars().find(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!("custom format: name_chars cannot widen names to whitespace or controls ({c:?})"));
        }
        if self.call_open.is_empty() && self.anchor.is_none() {
            return Err(
                "custom format: give call_open delimiters, or an anchor for calls that start the message".into()
            );
        }
        if self.anchor.as_ref().is_some_and(|a| a.starts.is_empty()) {
            return Err("custom format: anchor.starts must list the bytes a call may start with".into());
        }
        if self.section_open.is_empty() != self.section_close.is_empty() {
            return Err("custom format: section_open and section_close go together".into());
        }
        if (self.structural() || self.anchor.is_some()) && self.syntax == Syntax::Raw {
            return Err(
                "custom format: without call_close a block ends structurally, which needs syntax json or python".into(),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builtin_formats_are_within_the_custom_limits() {
        for name in crate::scan::formats::NAMES {
            let spec = crate::scan::formats::builtin(name).unwrap();
            let lens: Vec<usize> = spec.delimiters().map(String::len).collect();
            assert!(lens.iter().all(|&n| n <= MAX_DELIMITER_BYTES), "{name}");
            assert!(lens.iter().sum::<usize>() * 8 <= MAX_DELIMITERS_BYTES, "{name}: far from the limit");
        }
    }

    #[test]
    fn custom_specs_and_their_errors() {
        let ok = FormatSpec::custom(
            &json!({"name": "x", "call_open": ["<c>"], "call_close": ["</c>"], "body": "json_object"}),
        );
        assert_eq!(ok.unwrap().body, Body::JsonObject);
        let cases = [
            (json!({"name": "x", "body": "json_object"}), "call_open"),
            (json!({"name": "x", "call_open": ["<c>"], "body": "nope"}), "unknown body"),
            (json!({"name": "x", "call_open": ["<c>"], "body": "name_sep_json"}), "sep"),
            (json!({"name": "x", "call_open": ["<c>"], "body": "json_object", "syntax": "raw"}), "structurally"),
            (json!({"name": "x", "call_open": ["<c>"], "body": "json_object", "typo": 1}), "unknown field"),
            (json!({"name": "x", "call_open": ["a".repeat(257)], "body": "json_object"}), "257 bytes"),
            (json!({"name": "x", "call_open": vec!["b".repeat(256); 17], "body": "json_object"}), "at most 4096"),
            (
                json!({"name": "x", "call_open": ["<c>"], "body": "json_object", "anchor": {"arm": ["a".repeat(300)], "starts": "{"}}),
                "300 bytes",
            ),
        ];
        for (doc, words) in cases {
            let err = FormatSpec::custom(&doc).unwrap_err();
            assert!(err.contains(words), "{err}");
        }
    }
}
