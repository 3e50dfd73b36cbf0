//! Block bodies to calls, one parser per body layout. Each returns the block's
//! items in order: a call, or why that call (or the whole block) is malformed.
//! A broken call never takes its valid siblings with it.

mod json;
mod literal;
mod named;
mod numbers;
mod pythonic;
mod pythonic_stream;
mod schema;
mod values;
mod xml;
mod xml_stream;

#[cfg(feature = "python")]
pub(crate) use numbers::decimal_digits;
pub(crate) use pythonic_stream::{PythonCalls, PythonFound};
pub use schema::Schemas;
pub(crate) use xml::Flavor;
pub(crate) use xml_stream::XmlArguments;

use super::call::Call;
use super::malformed::{Malformed, MalformedKind};
use super::spec::Body;

/// One item of a block: a call, or why it is not one.
pub(crate) type Item = Result<Call, Malformed>;

/// What a body parser reads besides the text.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Context<'a> {
    pub(crate) schemas: &'a Schemas,
    /// Characters a tool name may hold besides the built-in ones.
    pub(crate) name_chars: &'a str,
    /// The turn ended inside the block: its closer never came. The body is
    /// read strictly (every value closed, every list element complete), and
    /// what is missing at its end is `unterminated`.
    pub(crate) cut: bool,
    /// Every JSON call object must write its arguments (`FormatSpec::arguments_required`).
    pub(crate) arguments_required: bool,
}

/// Parses the text of one block body into its items.
pub(crate) fn parse(body: &Body, text: &str, cx: Context<'_>) -> Vec<Item> {
    let mut items = match body {
        Body::JsonObject => vec![json::object_call(text)],
        Body::JsonObjects => json::object_calls(text, cx.cut, cx.arguments_required),
        Body::NameSepJson { sep } => vec![named::name_sep_json(text, sep)],
        Body::IdSepJson { sep } => vec![named::id_sep_json(text, sep)],
        Body::DeepSeekV3 => vec![named::deepseek_v3(text)],
        Body::Harmony => vec![named::harmony(text)],
        Body::Mistral => named::mistral(text, cx),
        Body::QwenXml => vec![xml::qwen(text, cx)],
        Body::GlmXml => vec![xml::glm(text, cx)],
        Body::DsmlXml => vec![xml::dsml(text, cx)],
        Body::MinimaxXml => vec![xml::minimax(text, cx)],
        Body::Pythonic => pythonic::calls(text, cx.cut),
    };
    for item in &mut items {
        if let Ok(call) = item {
            if let Err(bad) = check_name(&call.name, cx.name_chars) {
                *item = Err(bad);
            }
        }
    }
    if cx.cut {
        cut_short(&mut items, text.len());
    }
    items
}

/// Where in `text`, a body, each of the items `parse` reads starts, for the layouts
/// whose items are JSON values one after another (an array, or objects per line);
/// `None` for the others, whose items streaming output numbers as the parse does.
pub(crate) fn item_starts(body: &Body, text: &str) -> Option<Vec<usize>> {
    match body {
        Body::JsonObjects => Some(json::object_item_starts(text)),
        Body::Mistral => {
            let trimmed = text.trim_start();
            let base = text.len() - trimmed.len();
            let starts = trimmed.starts_with('[').then(|| json::object_item_starts(trimmed))?;
            Some(starts.into_iter().map(|at| base + at).collect())
        }
        _ => None,
    }
}

/// The name (and the model's own id) of the first call in `text`, a body that
/// parses whole: how streaming output learns a call's name from the head of its
/// block, completed with empty arguments, by the very parser that reads the block.
pub(crate) fn head_call(body: &Body, text: &str, name_chars: &str) -> Option<(String, Option<String>)> {
    let schemas = Schemas::default();
    let cx = Context { schemas: &schemas, name_chars, cut: false, arguments_required: false };
    match parse(body, text, cx).into_iter().next()? {
        Ok(call) => Some((call.name, call.id)),
        Err(_) => None,
    }
}

/// A tool name is ASCII letters, digits, `_`, `-`, `.`, `:` and the format's
/// `name_chars`; anything else (spaces, brackets, newlines, unrendered template
/// text such as `{{ tc.name }}`) is not a name, so the call is malformed.
pub(crate) fn check_name(name: &str, extra: &str) -> Result<(), Malformed> {
    if name.is_empty() {
        return Err(Malformed::new(MalformedKind::MissingName, 0, "a call has an empty tool name"));
    }
    if name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':')) {
        return Ok(());
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':') || extra.contains(c);
    match name.chars().find(|&c| !allowed(c)) {
        None => Ok(()),
        Some(c) => Err(Malformed::new(
            MalformedKind::InvalidName,
            0,
            format!("{} is not a tool name (it holds {c:?})", excerpt(name)),
        )),
    }
}

/// The turn ended inside the block. What ran out of text is `unterminated`: the
/// last item when it failed to parse (a complete call before it still counts),
/// or the whole block when it holds nothing. Semantic faults (a bad name, a
/// duplicate, arguments that are not an object) keep their kind.
pub(crate) fn cut_short(items: &mut Vec<Item>, body_len: usize) {
    let unterminated = |reason: &str, at: usize| {
        Malformed::new(
            MalformedKind::Unterminated,
            at,
            format!("the turn ended inside the block (it never closed): {reason}"),
        )
    };
    match items.last_mut() {
        None => items.push(Err(unterminated("it holds no call", body_len))),
        Some(Err(bad)) if bad.is_syntax() => *bad = unterminated(&bad.message, body_len),
        Some(_) => {}
    }
}

/// A short, single-line excerpt of model text for error messages.
fn excerpt(text: &str) -> String {
    let t: String = text.trim().chars().take(40).collect();
    if t.len() < text.trim().len() {
        format!("{t:?}…")
    } else {
        format!("{t:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["get_weather", "mcp__portal__search-documents", "github.create_issue", "fs:read", "A1"] {
            assert!(check_name(ok, "").is_ok(), "{ok}");
        }
        for bad in ["get weather", "junk [", "{{ tc.name }}", "f\n</function", "é", "a/b"] {
            assert_eq!(check_name(bad, "").unwrap_err().kind, MalformedKind::InvalidName, "{bad}");
        }
        assert_eq!(check_name("", "").unwrap_err().kind, MalformedKind::MissingName);
        assert!(check_name("a/b", "/").is_ok(), "a custom format widens names");
    }
}
