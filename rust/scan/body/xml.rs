//! XML-style bodies: parameter values are raw text, typed by the tool's
//! schema when one is given. A closing tag inside a value counts only when
//! structure follows it.

use super::super::call::Call;
use super::super::malformed::{Malformed, MalformedKind};
use super::schema::Schemas;
use serde_json::{Map, Value};

/// The end of a value starting at `from`: the first `close` followed (after
/// whitespace) by one of `next` or the end, or else the next `open` (a missing
/// closer), or else the end of the text.
fn value_end(text: &str, from: usize, close: &str, next: &[&str], open: &str) -> (usize, usize) {
    let missing = text[from..].find(open).map(|i| from + i);
    let mut search = from;
    while let Some(i) = text[search..].find(close) {
        let at = search + i;
        if missing.is_some_and(|m| m < at) {
            break;
        }
        let follow = text[at + close.len()..].trim_start();
        if follow.is_empty() || next.iter().any(|n| follow.starts_with(n)) {
            return (at, at + close.len());
        }
        search = at + close.len();
    }
    missing.map_or((text.len(), text.len()), |m| (m, m))
}

fn strip_newlines(v: &str) -> &str {
    let v = v.strip_prefix('\n').unwrap_or(v);
    v.strip_suffix('\n').unwrap_or(v)
}

fn call(name: &str, arguments: Map<String, Value>) -> Call {
    let raw_arguments = Value::Object(arguments.clone()).to_string();
    Call { name: name.trim().to_owned(), arguments, raw_arguments, id: None }
}

fn layout(at: usize, message: impl Into<String>) -> Malformed {
    Malformed::new(MalformedKind::Layout, at, message)
}

/// `<function=NAME><parameter=K>V</parameter>…</function>` (Qwen3-Coder).
pub(super) fn qwen(text: &str, schemas: &Schemas) -> Result<Call, Malformed> {
    let start =
        text.find("<function=").ok_or_else(|| layout(0, "no <function=NAME> in the block"))? + "<function=".len();
    let name_end = text[start..].find('>').ok_or_else(|| layout(start, "the <function= tag is not closed"))? + start;
    let name = text[start..name_end].trim();
    let region_end = text.rfind("</function>").filter(|&e| e > name_end).unwrap_or(text.len());
    let region = &text[..region_end];
    let mut args = Map::new();
    let mut pos = name_end + 1;
    while let Some(i) = region[pos..].find("<parameter=") {
        let key_start = pos + i + "<parameter=".len();
        let key_end =
            region[key_start..].find('>').ok_or_else(|| layout(key_start, "a <parameter= tag is not closed"))?
                + key_start;
        let key = region[key_start..key_end].trim();
        let (value_end, next) =
            value_end(region, key_end + 1, "</parameter>", &["<parameter=", "</function>"], "<parameter=");
        let raw = strip_newlines(&region[key_end + 1..value_end]);
        args.insert(key.to_owned(), schemas.typed(name, key, raw));
        pos = next;
    }
    Ok(call(name, args))
}

/// `NAME<arg_key>K</arg_key><arg_value>V</arg_value>…`, with or without newlines (GLM-4.5/4.7).
pub(super) fn glm(text: &str, schemas: &Schemas) -> Result<Call, Malformed> {
    let first = text.find("<arg_key>").unwrap_or(text.len());
    let name = text[..first].trim();
    let mut args = Map::new();
    let mut pos = first;
    while let Some(i) = text[pos..].find("<arg_key>") {
        let key_start = pos + i + "<arg_key>".len();
        let key_end =
            text[key_start..].find("</arg_key>").ok_or_else(|| layout(key_start, "an <arg_key> is not closed"))?
                + key_start;
        let key = text[key_start..key_end].trim();
        let after = &text[key_end + "</arg_key>".len()..];
        let value_rel =
            after.find("<arg_value>").ok_or_else(|| layout(key_end, format!("argument {key:?} has no <arg_value>")))?;
        let value_start = key_end + "</arg_key>".len() + value_rel + "<arg_value>".len();
        let (value_end, next) = value_end(text, value_start, "</arg_value>", &["<arg_key>"], "<arg_key>");
        args.insert(key.to_owned(), schemas.typed(name, key, &text[value_start..value_end]));
        pos = next;
    }
    Ok(call(name, args))
}

/// One `NAME">` head, then `<TAG name="K"…>V</TAG>` parameters; `value(tool, key, attrs, raw)` types each.
fn named_params(
    text: &str,
    open: &str,
    close: &str,
    value: impl Fn(&str, &str, &str, &str) -> Value,
) -> Result<Call, Malformed> {
    let name_end = text.find("\">").ok_or_else(|| layout(0, "the invoke name is not closed with \">"))?;
    let name = &text[..name_end];
    let mut args = Map::new();
    let mut pos = name_end + 2;
    while let Some(i) = text[pos..].find(open) {
        let attrs_start = pos + i + open.len();
        let attrs_end =
            text[attrs_start..].find('>').ok_or_else(|| layout(attrs_start, "a parameter tag is not closed"))?
                + attrs_start;
        let attrs = &text[attrs_start..attrs_end];
        let key =
            attr(attrs, "name").ok_or_else(|| layout(attrs_start, format!("a parameter of {name:?} has no name")))?;
        let (value_end, next) = value_end(text, attrs_end + 1, close, &[open], open);
        args.insert(key.to_owned(), value(name, key, attrs, &text[attrs_end + 1..value_end]));
        pos = next;
    }
    Ok(call(name, args))
}

fn attr<'a>(attrs: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("{key}=\"");
    let start = attrs.find(&pat)? + pat.len();
    let end = attrs[start..].find('"')? + start;
    Some(&attrs[start..end])
}

/// After `<｜DSML｜invoke name="`: `string="false"` values are JSON, `string="true"` raw (DeepSeek V3.2).
pub(super) fn dsml(text: &str) -> Result<Call, Malformed> {
    named_params(text, "<｜DSML｜parameter", "</｜DSML｜parameter>", |_, _, attrs, raw| {
        if attr(attrs, "string") == Some("false") {
            serde_json::from_str(raw.trim()).unwrap_or_else(|_| Value::String(raw.to_owned()))
        } else {
            Value::String(raw.to_owned())
        }
    })
}

/// After `<invoke name="`: `<parameter name="K">V</parameter>` (MiniMax M2).
pub(super) fn minimax(text: &str, schemas: &Schemas) -> Result<Call, Malformed> {
    named_params(text, "<parameter", "</parameter>", |tool, key, _, raw| schemas.typed(tool, key, strip_newlines(raw)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schemas() -> Schemas {
        Schemas::from_json(&serde_json::json!({"f": {"properties": {"n": {"type": "integer"}}}}))
    }

    #[test]
    fn qwen_values_typed_and_literal_closer_kept() {
        let body = "\n<function=f>\n<parameter=n>\n7\n</parameter>\n<parameter=s>\na </parameter> b\n</parameter>\n</function>\n";
        let c = qwen(body, &schemas()).unwrap();
        assert_eq!(c.name, "f");
        assert_eq!(c.arguments["n"], serde_json::json!(7));
        assert_eq!(c.arguments["s"], "a </parameter> b");
    }

    #[test]
    fn qwen_missing_closer_ends_at_next_parameter() {
        let c = qwen("<function=f><parameter=a>1<parameter=b>2</parameter></function>", &Schemas::default()).unwrap();
        assert_eq!((c.arguments["a"].as_str(), c.arguments["b"].as_str()), (Some("1"), Some("2")));
    }

    #[test]
    fn glm_with_and_without_newlines() {
        let a = glm(
            "f\n<arg_key>n</arg_key>\n<arg_value>3</arg_value>\n<arg_key>s</arg_key>\n<arg_value>x</arg_value>\n",
            &schemas(),
        )
        .unwrap();
        let b = glm(
            "f<arg_key>n</arg_key><arg_value>3</arg_value><arg_key>s</arg_key><arg_value>x</arg_value>",
            &schemas(),
        )
        .unwrap();
        assert_eq!(a, b);
        assert_eq!(a.arguments["n"], serde_json::json!(3));
    }

    #[test]
    fn dsml_string_attribute() {
        let c = dsml("f\">\n<｜DSML｜parameter name=\"a\" string=\"true\">12</｜DSML｜parameter>\n<｜DSML｜parameter name=\"b\" string=\"false\">12</｜DSML｜parameter>\n")
            .unwrap();
        assert_eq!(
            (c.arguments["a"].clone(), c.arguments["b"].clone()),
            (serde_json::json!("12"), serde_json::json!(12))
        );
    }

    #[test]
    fn minimax_params() {
        let c =
            minimax("f\">\n<parameter name=\"n\">5</parameter>\n<parameter name=\"s\">hi</parameter>\n", &schemas())
                .unwrap();
        assert_eq!(
            (c.arguments["n"].clone(), c.arguments["s"].clone()),
            (serde_json::json!(5), serde_json::json!("hi"))
        );
    }
}
