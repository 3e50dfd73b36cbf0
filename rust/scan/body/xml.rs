//! XML-style bodies: parameter values are raw text (they hold code), typed by
//! the tool's schema when one is given. `values.rs` decides where each value
//! ends; this file reads each layout's head, openers and values.

use super::super::call::Call;
use super::super::malformed::{Malformed, MalformedKind};
use super::super::spec::Body;
use super::schema::Schemas;
use super::values::{params, Layout, Opener};
use super::{check_name, excerpt, Context, Item};
use serde_json::{Map, Value};

fn layout(at: usize, message: impl Into<String>) -> Malformed {
    Malformed::new(MalformedKind::Layout, at, message)
}

/// A key as it may appear in a tag: no tag or line break inside it.
fn key_ok(key: &str) -> bool {
    !key.is_empty() && !key.contains(['<', '>', '\n'])
}

/// Where a tag that started before `body` ends: its `>`, unless a `<` comes
/// first (no key holds one). Looking no further keeps each candidate opener
/// O(its length), however many a hostile value holds.
fn tag_end(body: &str) -> Option<usize> {
    body.find(['>', '<']).filter(|&i| body.as_bytes()[i] == b'>')
}

/// `<parameter=KEY>`.
fn qwen_opener(rest: &str) -> Option<Opener<'_>> {
    let body = rest.strip_prefix("<parameter=")?;
    let end = tag_end(body)?;
    let key = body[..end].trim();
    key_ok(key).then_some(Opener { key, attrs: "", len: "<parameter=".len() + end + 1 })
}

/// `<arg_key>KEY</arg_key>` then `<arg_value>`, with whitespace between.
fn glm_opener(rest: &str) -> Option<Opener<'_>> {
    let body = rest.strip_prefix("<arg_key>")?;
    let end = body.find('<').filter(|&i| body[i..].starts_with("</arg_key>"))?;
    let key = body[..end].trim();
    let after = &body[end + "</arg_key>".len()..];
    let value = after.trim_start().strip_prefix("<arg_value>")?;
    key_ok(key).then_some(Opener { key, attrs: "", len: rest.len() - value.len() })
}

/// `<TAG name="KEY" …>` for `tag` = `<parameter` or `<｜DSML｜parameter`.
fn named_opener<'a>(rest: &'a str, tag: &str) -> Option<Opener<'a>> {
    let body = rest.strip_prefix(tag)?;
    if !body.starts_with(char::is_whitespace) {
        return None;
    }
    let end = tag_end(body)?;
    let attrs = &body[..end];
    let key = attr(attrs, "name")?;
    key_ok(key).then_some(Opener { key, attrs, len: tag.len() + end + 1 })
}

fn attr<'a>(attrs: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("{key}=\"");
    let start = attrs.find(&pat)? + pat.len();
    let end = attrs[start..].find('"')? + start;
    Some(&attrs[start..end])
}

pub(super) const QWEN: Layout = Layout {
    open: "<parameter=",
    close: "</parameter>",
    end: Some("</function>"),
    opener: qwen_opener,
    opener_end: ">",
};
const GLM: Layout =
    Layout { open: "<arg_key>", close: "</arg_value>", end: None, opener: glm_opener, opener_end: "<arg_value>" };
fn minimax_opener(rest: &str) -> Option<Opener<'_>> {
    named_opener(rest, "<parameter")
}

fn dsml_opener(rest: &str) -> Option<Opener<'_>> {
    named_opener(rest, "<｜DSML｜parameter")
}

const MINIMAX: Layout =
    Layout { open: "<parameter", close: "</parameter>", end: None, opener: minimax_opener, opener_end: ">" };
const DSML: Layout = Layout {
    open: "<｜DSML｜parameter",
    close: "</｜DSML｜parameter>",
    end: None,
    opener: dsml_opener,
    opener_end: ">",
};

/// How a raw-text XML layout writes its values: its tags, and how a value's
/// raw text becomes the argument (shared by the parser and streaming output).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Flavor {
    pub(super) layout: &'static Layout,
    /// One newline after an opener and one before a closer are layout, not
    /// value (Qwen3-Coder, MiniMax M2).
    pub(super) strip: bool,
    /// Values are marked `string="true"|"false"` (DeepSeek V3.2).
    marked: bool,
}

const QWEN_FLAVOR: Flavor = Flavor { layout: &QWEN, strip: true, marked: false };
const GLM_FLAVOR: Flavor = Flavor { layout: &GLM, strip: false, marked: false };
const MINIMAX_FLAVOR: Flavor = Flavor { layout: &MINIMAX, strip: true, marked: false };
const DSML_FLAVOR: Flavor = Flavor { layout: &DSML, strip: false, marked: true };

impl Flavor {
    /// The flavor of a raw-text XML body layout; `None` for the others.
    pub(crate) fn of(body: &Body) -> Option<Self> {
        match body {
            Body::QwenXml => Some(QWEN_FLAVOR),
            Body::GlmXml => Some(GLM_FLAVOR),
            Body::MinimaxXml => Some(MINIMAX_FLAVOR),
            Body::DsmlXml => Some(DSML_FLAVOR),
            _ => None,
        }
    }

    fn string_false(self, attrs: &str) -> bool {
        self.marked && attr(attrs, "string") == Some("false")
    }

    /// The part of a value's raw text that is the value's text.
    pub(super) fn text(self, raw: &str) -> &str {
        if !self.strip {
            return raw;
        }
        let v = raw.strip_prefix('\n').unwrap_or(raw);
        v.strip_suffix('\n').unwrap_or(v)
    }

    /// Tool `name`'s parameter `key` (opener attributes `attrs`) written as `raw`,
    /// typed by the schema (see `Schemas::typed`). `string="false"` values are
    /// read as JSON (`Schemas::typed_json`); the marker decides where no schema
    /// types the parameter.
    pub(super) fn value(
        self,
        schemas: &Schemas,
        name: &str,
        key: &str,
        attrs: &str,
        raw: &str,
    ) -> Result<Value, Malformed> {
        let raw = self.text(raw);
        if !self.string_false(attrs) {
            return schemas.typed(name, key, raw, self.marked);
        }
        schemas.typed_json(name, key, raw)?.ok_or_else(|| {
            Malformed::new(
                MalformedKind::InvalidJson,
                0,
                format!("parameter {key:?} is marked string=\"false\" but is no JSON value: {}", excerpt(raw)),
            )
        })
    }

    /// Whether the value is its text whatever the text holds, so it can go out
    /// as a JSON string while it is read.
    pub(super) fn always_text(self, schemas: &Schemas, name: &str, key: &str, attrs: &str) -> bool {
        !self.string_false(attrs) && schemas.always_text(name, key, self.marked)
    }
}

/// The call `name` with the parameters its list starting at `from` holds.
fn call(text: &str, name: &str, from: usize, flavor: Flavor, cx: Context<'_>) -> Item {
    check_name(name, cx.name_chars)?;
    let mut arguments = Map::new();
    for p in params(text, from, flavor.layout, cx.schemas.tool(name), cx.cut)? {
        let raw = &text[p.value.clone()];
        let v = flavor.value(cx.schemas, name, p.key, p.attrs, raw).map_err(|m| m.shifted(p.value.start))?;
        arguments.insert(p.key.to_owned(), v);
    }
    let raw_arguments = Value::Object(arguments.clone()).to_string();
    Ok(Call { name: name.to_owned(), arguments, raw_arguments, id: None })
}

/// `<function=NAME><parameter=K>V</parameter>…</function>` (Qwen3-Coder).
pub(super) fn qwen(text: &str, cx: Context<'_>) -> Item {
    let head = text.trim_start();
    let Some(rest) = head.strip_prefix("<function=") else {
        let kind = if text.contains("<function=") { MalformedKind::Layout } else { MalformedKind::MissingName };
        return Err(Malformed::new(kind, 0, format!("the block holds no <function=NAME>: {}", excerpt(text))));
    };
    let start = text.len() - rest.len();
    let name_end = rest.find('>').ok_or_else(|| layout(start, "the <function= tag is not closed"))? + start;
    let name = text[start..name_end].trim();
    call(text, name, name_end + 1, QWEN_FLAVOR, cx)
}

/// `NAME<arg_key>K</arg_key><arg_value>V</arg_value>…`, with or without newlines (GLM-4.5/4.7).
pub(super) fn glm(text: &str, cx: Context<'_>) -> Item {
    let first = text.find("<arg_key>").unwrap_or(text.len());
    let name = text[..first].trim();
    if cx.cut && first == text.len() {
        // Only a name, and the turn ended: the name itself may be cut.
        return Err(layout(0, "the block ends before its arguments"));
    }
    call(text, name, first, GLM_FLAVOR, cx)
}

/// The `NAME">` head after `<invoke name="`; returns the name and where the parameters start.
fn invoke_head(text: &str) -> Result<(&str, usize), Malformed> {
    let end = text.find("\">").ok_or_else(|| layout(0, "the invoke name is not closed with \">"))?;
    Ok((&text[..end], end + 2))
}

/// After `<｜DSML｜invoke name="` (DeepSeek V3.2).
pub(super) fn dsml(text: &str, cx: Context<'_>) -> Item {
    let (name, from) = invoke_head(text)?;
    call(text, name, from, DSML_FLAVOR, cx)
}

/// After `<invoke name="`: `<parameter name="K">V</parameter>` (MiniMax M2).
pub(super) fn minimax(text: &str, cx: Context<'_>) -> Item {
    let (name, from) = invoke_head(text)?;
    call(text, name, from, MINIMAX_FLAVOR, cx)
}

#[cfg(test)]
mod tests {
    use super::super::Schemas;
    use super::*;
    use serde_json::json;

    fn schemas() -> Schemas {
        Schemas::from_json(&json!({
            "f": {"properties": {"n": {"type": "integer"}, "s": {"type": "string"}}},
            "write_file": {"properties": {"path": {"type": "string"}, "content": {"type": "string"}}},
        }))
    }

    fn cx(s: &Schemas) -> Context<'_> {
        Context { schemas: s, name_chars: "", cut: false, arguments_required: false }
    }

    #[test]
    fn an_opener_ends_at_its_own_tag() {
        assert!(qwen_opener("<parameter=a<parameter=b>").is_none(), "no key holds a <");
        assert_eq!(qwen_opener("<parameter= b \n>x").unwrap().key, "b");
        assert!(glm_opener("<arg_key>a<arg_key>b</arg_key><arg_value>").is_none());
        assert_eq!(
            glm_opener("<arg_key>k</arg_key> <arg_value>v").unwrap().len,
            "<arg_key>k</arg_key> <arg_value>".len()
        );
        assert!(minimax_opener("<parameter name=\"a\" <x>").is_none());
    }

    #[test]
    fn qwen_values_typed_and_literal_closer_kept() {
        let s = schemas();
        let body = "\n<function=f>\n<parameter=n>\n7\n</parameter>\n<parameter=s>\na </parameter> b\n</parameter>\n</function>\n";
        let c = qwen(body, cx(&s)).unwrap();
        assert_eq!(c.name, "f");
        assert_eq!(c.arguments["n"], json!(7));
        assert_eq!(c.arguments["s"], "a </parameter> b");
    }

    #[test]
    fn qwen_nested_call_in_a_value_keeps_the_outer_arguments() {
        let s = schemas();
        let inner =
            "<tool_call>\n<function=write_file>\n<parameter=path>\nnotes.txt\n</parameter>\n</function>\n</tool_call>";
        let body = format!(
            "\n<function=write_file>\n<parameter=path>\nfixture.py\n</parameter>\n<parameter=content>\ndoc = \"\"\"\n{inner}\n\"\"\"\n</parameter>\n</function>\n"
        );
        let c = qwen(&body, cx(&s)).unwrap();
        assert_eq!(c.arguments["path"], "fixture.py");
        assert_eq!(c.arguments["content"], format!("doc = \"\"\"\n{inner}\n\"\"\""));
        assert_eq!(qwen(&body, cx(&Schemas::default())).unwrap_err().kind, MalformedKind::DuplicateArgument);
    }

    #[test]
    fn qwen_bad_heads() {
        let s = Schemas::default();
        let kind = |body: &str| qwen(body, cx(&s)).unwrap_err().kind;
        assert_eq!(kind("\n<function=bad_func_no_gt\n</function>\n"), MalformedKind::InvalidName);
        assert_eq!(kind("\n<function={{ tc.name }}>\n</function>\n"), MalformedKind::InvalidName);
        assert_eq!(kind("example"), MalformedKind::MissingName);
        let cut = Context { cut: true, ..cx(&s) };
        assert!(qwen("<function=f>\n<parameter=a>\n1", cut).is_err(), "a cut value is incomplete");
        assert!(qwen("<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n", cut).is_ok());
    }

    #[test]
    fn glm_with_and_without_newlines() {
        let s = schemas();
        let a = glm(
            "f\n<arg_key>n</arg_key>\n<arg_value>3</arg_value>\n<arg_key>s</arg_key>\n<arg_value>x</arg_value>\n",
            cx(&s),
        )
        .unwrap();
        let b =
            glm("f<arg_key>n</arg_key><arg_value>3</arg_value><arg_key>s</arg_key><arg_value>x</arg_value>", cx(&s))
                .unwrap();
        assert_eq!(a, b);
        assert_eq!(a.arguments["n"], json!(3));
        assert_eq!(glm("", cx(&s)).unwrap_err().kind, MalformedKind::MissingName);
        let dup = "g<arg_key>a</arg_key><arg_value>1</arg_value><arg_key>a</arg_key><arg_value>2</arg_value>";
        assert_eq!(glm(dup, cx(&s)).unwrap_err().kind, MalformedKind::DuplicateArgument);
    }

    #[test]
    fn dsml_string_attribute() {
        let s = schemas();
        let c = dsml("f\">\n<｜DSML｜parameter name=\"n\" string=\"true\">12</｜DSML｜parameter>\n<｜DSML｜parameter name=\"s\" string=\"false\">12</｜DSML｜parameter>\n", cx(&s))
            .unwrap();
        // The schema decides: `n` is an integer whatever the marker says, and a plain
        // string takes the text of a value marked as JSON.
        assert_eq!((c.arguments["n"].clone(), c.arguments["s"].clone()), (json!(12), json!("12")));
        let prose = "g\">\n<｜DSML｜parameter name=\"p\" string=\"false\">Hello, world</｜DSML｜parameter>\n";
        assert_eq!(dsml(prose, cx(&s)).unwrap_err().kind, MalformedKind::InvalidJson);
    }

    #[test]
    fn minimax_params() {
        let s = schemas();
        let c = minimax("f\">\n<parameter name=\"n\">5</parameter>\n<parameter name=\"s\">hi</parameter>\n", cx(&s))
            .unwrap();
        assert_eq!((c.arguments["n"].clone(), c.arguments["s"].clone()), (json!(5), json!("hi")));
        let literal =
            "write_file\"><parameter name=\"content\">Use <parameter name=\"mode\">fast</parameter> here</parameter>";
        assert_eq!(
            minimax(literal, cx(&s)).unwrap().arguments["content"],
            "Use <parameter name=\"mode\">fast</parameter> here"
        );
    }
}
