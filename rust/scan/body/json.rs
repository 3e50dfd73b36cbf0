//! JSON call objects: `{"name": …, "arguments"|"parameters": {…}}`, alone, in
//! an array, or as a sequence. Each object of an array or sequence is its own
//! item, so one broken object keeps its siblings.

use super::super::call::Call;
use super::super::lexer::{InString, JsonStrings};
use super::super::malformed::{json_error_offset, Malformed, MalformedKind};
use super::numbers::{first_refusal, refused_at};
use super::{excerpt, Item};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::ops::Range;

#[derive(Deserialize)]
struct Wire<'a> {
    name: String,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
    #[serde(borrow, default)]
    parameters: Option<&'a RawValue>,
    #[serde(default)]
    id: Option<String>,
}

impl Wire<'_> {
    /// The call; `text` is the JSON the wire was read from, for error offsets.
    /// `required`: the format always writes the arguments, so an object without
    /// them is not a whole call (MiniMax's lines), never a call with none.
    fn into_call(self, text: &str, required: bool) -> Item {
        let raw = self.arguments.or(self.parameters);
        if required && raw.is_none() {
            // A name that is no name says more (the formats that require arguments
            // widen no names).
            super::check_name(&self.name, "")?;
            return Err(Malformed::new(
                MalformedKind::MissingArguments,
                text.len(),
                format!("the call of {:?} has no \"arguments\"", self.name),
            ));
        }
        let raw_text = raw.map_or("{}", RawValue::get);
        let base = raw.map_or(0, |r| offset_in(text, r.get()));
        let mut call = arguments_call(self.name, raw_text).map_err(|m| m.shifted(base))?;
        call.id = self.id;
        Ok(call)
    }
}

/// Where `inner` (a sub-slice of `outer`) starts in `outer`.
pub(super) fn offset_in(outer: &str, inner: &str) -> usize {
    (inner.as_ptr() as usize).saturating_sub(outer.as_ptr() as usize).min(outer.len())
}

/// A call from its name and argument text: a JSON object, null, or a JSON
/// string that holds an object (Granite 4 writes `"arguments": "{\"a\": 1}"`).
pub(super) fn arguments_call(name: String, raw_arguments: &str) -> Item {
    let not_object = |what: &str| {
        let at = raw_arguments.len() - raw_arguments.trim_start().len();
        Malformed::new(
            MalformedKind::ArgumentsNotObject,
            at,
            format!("the arguments of {name:?} must be a JSON object, got {what}"),
        )
    };
    let parsed = serde_json::from_str(raw_arguments);
    if let Some(why) = parsed.as_ref().ok().and_then(first_refusal) {
        return Err(refused(raw_arguments, &why, &name));
    }
    let (arguments, raw) = match parsed {
        Ok(Value::Object(map)) => (map, raw_arguments.trim()),
        Ok(Value::Null) => (Map::new(), "{}"),
        Ok(Value::String(inner)) => match serde_json::from_str::<Map<String, Value>>(&inner) {
            Ok(map) => {
                if let Some(why) = map.values().find_map(first_refusal) {
                    return Err(refused(raw_arguments, &why, &name));
                }
                let raw = inner.trim().to_owned();
                return Ok(Call { name, arguments: map, raw_arguments: raw, id: None });
            }
            Err(_) => return Err(not_object("a string that does not hold one")),
        },
        Ok(other) => return Err(not_object(kind_of(&other))),
        Err(e) => return Err(json_error(raw_arguments, &e, &format!("invalid arguments JSON for {name:?}"))),
    };
    Ok(Call { name, arguments, raw_arguments: raw.to_owned(), id: None })
}

/// Arguments holding a number no tool can receive (`numbers::refusal`), at that number.
fn refused(raw_arguments: &str, why: &str, name: &str) -> Malformed {
    let at = refused_at(raw_arguments).unwrap_or(0);
    Malformed::new(MalformedKind::NonFinite, at, format!("invalid arguments JSON for {name:?}: {why}"))
}

/// A serde error as a malformed item: numbers JSON cannot hold are their own kind.
fn json_error(text: &str, e: &serde_json::Error, what: &str) -> Malformed {
    let kind = if e.to_string().starts_with("number out of range") {
        MalformedKind::NonFinite
    } else {
        MalformedKind::InvalidJson
    };
    Malformed::new(kind, json_error_offset(text, e), format!("{what}: {e}"))
}

/// A serde error reading a call object; a missing `name` field is its own kind.
fn wire_error(text: &str, e: &serde_json::Error) -> Malformed {
    let mut m = json_error(text, e, &format!("invalid tool-call JSON {}", excerpt(text)));
    if e.is_data() && e.to_string().starts_with("missing field `name`") {
        m.kind = MalformedKind::MissingName;
    }
    m
}

/// Exactly one call object.
pub(super) fn object_call(text: &str) -> Item {
    call_object(text, false)
}

/// One call object; `required`: its arguments must be written.
fn call_object(text: &str, required: bool) -> Item {
    let wire: Wire<'_> = serde_json::from_str(text).map_err(|e| wire_error(text, &e))?;
    wire.into_call(text, required)
}

/// The call object at `at` in `text`.
fn element(text: &str, at: Range<usize>, required: bool) -> Item {
    call_object(&text[at.clone()], required).map_err(|m| m.shifted(at.start))
}

/// An array of call objects, or call objects separated by whitespace, `;` or `,`.
/// Read in one pass while every object is a call object; from the first that is
/// not, each element is split out and read on its own, so it keeps its siblings.
/// `required`: every call object must write its arguments (see `Wire::into_call`).
pub(super) fn object_calls(text: &str, cut: bool, required: bool) -> Vec<Item> {
    let start = text.len() - text.trim_start().len();
    if !text[start..].starts_with('[') {
        let (leading, rest) = leading_objects(text, start, required);
        let mut items: Vec<Item> = leading.into_iter().map(|(_, item)| item).collect();
        items.extend(sequence(text, rest).into_iter().map(|r| element(text, r, required)));
        return items;
    }
    if let Ok(wires) = serde_json::from_str::<Vec<Wire<'_>>>(&text[start..]) {
        return wires.into_iter().map(|w| w.into_call(text, required)).collect();
    }
    let (elements, end) = array(text, start + 1);
    let mut items: Vec<Item> = elements.into_iter().map(|r| element(text, r, required)).collect();
    match end {
        // More after the array (MiniMax's lines, one of which was an array): read on, each its own item.
        Some(end) => items.extend(sequence(text, end).into_iter().map(|r| element(text, r, required))),
        // An array that never closed, after objects that all parsed: say so once.
        None if !cut && items.last().is_none_or(Result::is_ok) => {
            items.push(Err(Malformed::new(MalformedKind::Layout, text.len(), "the call array is not closed")));
        }
        _ => {}
    }
    items
}

/// Where each item `object_calls` reads from `text` starts, in order (the `Layout`
/// item of an array never closed has none): what ties a call that streaming output
/// sent, from its object's first byte, to the item the block's parse made of it.
pub(super) fn object_item_starts(text: &str) -> Vec<usize> {
    let start = text.len() - text.trim_start().len();
    if !text[start..].starts_with('[') {
        let (leading, rest) = leading_objects(text, start, false);
        let starts = leading.into_iter().map(|(at, _)| at);
        return starts.chain(sequence(text, rest).into_iter().map(|r| r.start)).collect();
    }
    // A whole array that parses holds the elements `array` splits it into.
    let (elements, end) = array(text, start + 1);
    let after = end.map(|end| sequence(text, end)).unwrap_or_default();
    elements.into_iter().chain(after).map(|r| r.start).collect()
}

/// The call objects of a sequence from `from`, each with where it starts, read in one
/// pass up to the first that is not one; returns them and where the rest starts.
fn leading_objects(text: &str, from: usize, required: bool) -> (Vec<(usize, Item)>, usize) {
    let mut items = Vec::new();
    let mut at = from;
    loop {
        let rest = &text[at..];
        let skipped = rest.len() - rest.trim_start_matches(|c: char| c.is_whitespace() || c == ';' || c == ',').len();
        at += skipped;
        if at == text.len() {
            return (items, at);
        }
        let mut stream = serde_json::Deserializer::from_str(&text[at..]).into_iter::<Wire<'_>>();
        match stream.next() {
            Some(Ok(wire)) => {
                items.push((at, wire.into_call(text, required)));
                at += stream.byte_offset();
            }
            _ => return (items, at),
        }
    }
}

/// The lexing state of a JSON scan: inside a string, and bracket depth.
#[derive(Default)]
struct Lex {
    strings: JsonStrings,
    depth: usize,
}

impl Lex {
    /// Steps over `b`; returns whether it lies outside every string.
    fn step(&mut self, b: u8) -> bool {
        if self.strings.step(b) != InString::Outside {
            return false;
        }
        match b {
            b'[' | b'{' => self.depth += 1,
            b']' | b'}' => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
        true
    }
}

/// The elements of an array whose body starts at `from`, split at top-level
/// commas, and one past its closing `]` if it has one. Empty elements (a
/// trailing comma) are skipped.
fn array(text: &str, from: usize) -> (Vec<Range<usize>>, Option<usize>) {
    let mut lex = Lex::default();
    let mut elements = Vec::new();
    let mut begin = from;
    let mut push = |r: Range<usize>| {
        if !text[r.clone()].trim().is_empty() {
            elements.push(r);
        }
    };
    for (i, &b) in text.as_bytes().iter().enumerate().skip(from) {
        let top = lex.depth == 0;
        if !lex.step(b) || !top {
            continue;
        }
        match b {
            b']' => {
                push(begin..i);
                return (elements, Some(i + 1));
            }
            b',' => {
                push(begin..i);
                begin = i + 1;
            }
            _ => {}
        }
    }
    push(begin..text.len());
    (elements, None)
}

/// The values of a sequence from `from`: each `{…}` or `[…]` to its balanced
/// end (or the end of the text); text that starts no value runs to the end of
/// its line and is an element too, so it is reported and its siblings kept.
fn sequence(text: &str, from: usize) -> Vec<Range<usize>> {
    let s = text.as_bytes();
    let mut out = Vec::new();
    let mut i = from;
    while i < s.len() {
        let b = s[i];
        if b.is_ascii_whitespace() || b == b';' || b == b',' {
            i += 1;
            continue;
        }
        let start = i;
        if b == b'{' || b == b'[' {
            let mut lex = Lex::default();
            while i < s.len() {
                let outside = lex.step(s[i]);
                i += 1;
                if outside && lex.depth == 0 {
                    break;
                }
            }
        } else {
            i = text[i..].find('\n').map_or(s.len(), |n| i + n);
        }
        out.push(start..i);
    }
    out
}

pub(super) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(items: &[Item]) -> Vec<String> {
        items.iter().map(|i| i.as_ref().map_or_else(|m| format!("!{}", m.kind.name()), |c| c.name.clone())).collect()
    }

    #[test]
    fn keys_in_either_order_and_parameters_alias() {
        let a = object_call(r#"{"name": "f", "arguments": {"x": 1}}"#).unwrap();
        let b = object_call("\n{\"parameters\": {\"x\": 1}, \"name\": \"f\"}\n").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.raw_arguments, r#"{"x": 1}"#);
        assert!(object_call(r#"{"name": "f"}"#).unwrap().arguments.is_empty());
    }

    #[test]
    fn arguments_as_a_string_holding_the_object() {
        let c = object_call(r#"{"name": "f", "arguments": "{\"param\": \"max_connections\"}"}"#).unwrap();
        assert_eq!(
            (c.arguments["param"].as_str(), c.raw_arguments.as_str()),
            (Some("max_connections"), r#"{"param": "max_connections"}"#)
        );
        for bad in [r#""hello""#, r#""{hello world}""#, r#""[1, 2]""#, r#""{\"a\": 1} tail""#] {
            let err = object_call(&format!(r#"{{"name": "f", "arguments": {bad}}}"#)).unwrap_err();
            assert_eq!(err.kind, MalformedKind::ArgumentsNotObject, "{bad}");
        }
    }

    #[test]
    fn arrays_and_sequences() {
        let arr = object_calls(r#"[{"name": "a"}, {"name": "b", "arguments": {"k": [1]}}]"#, false, false);
        let seq = object_calls("{\"name\": \"a\"}\n{\"name\": \"b\", \"arguments\": {\"k\": [1]}}\n", false, false);
        assert_eq!(arr, seq);
        assert_eq!(names(&object_calls(r#"{"name": "a"}; {"name": "b"}"#, false, false)), ["a", "b"]);
        assert!(object_calls("[]", false, false).is_empty());
    }

    #[test]
    fn broken_elements_keep_their_siblings() {
        let cases: [(&str, &[&str]); 6] = [
            (r#"[{"name": "a"}, {"name": "b", "arguments": {"x": }}]"#, &["a", "!invalid_json"]),
            (r#"[{"name": "a"}, 3, {"name": "c", "arguments": 7}]"#, &["a", "!invalid_json", "!arguments_not_object"]),
            ("{\"name\": \"a\"}\n{invalid json here}\n{\"name\": \"c\"}", &["a", "!invalid_json", "c"]),
            ("{\"name\": \"a\"}\nnot json\n{\"arguments\": {}}", &["a", "!invalid_json", "!missing_name"]),
            (r#"[{"name": "a", "arguments": {"x": 1e999}}]"#, &["!non_finite"]),
            (r#"[{"name": "a"}] tail"#, &["a", "!invalid_json"]),
        ];
        for (text, want) in cases {
            assert_eq!(names(&object_calls(text, false, false)), want, "{text}");
        }
        let cut = object_calls(r#"[{"name": "a"}, {"name": "b", "argu"#, true, false);
        assert_eq!(names(&cut), ["a", "!invalid_json"]);
        let second = object_calls("{\"name\": \"a\"}\n{\"name\": \"b\", \"arguments\": {\"k\": }}", false, false);
        let err = second[1].as_ref().unwrap_err();
        assert_eq!((err.kind, err.offset), (MalformedKind::InvalidJson, 47));
    }

    #[test]
    fn item_starts_are_where_each_item_begins() {
        let f = r#"{"name": "f"}"#;
        for (text, starts) in [
            (format!("{f}\n{f}"), vec![0, 14]),
            (format!("x\n{f}\n{f}"), vec![0, 2, 16]),
            (format!("  {f}; {f}"), vec![2, 17]),
            (format!("[{f}, {f}]"), vec![1, 15]),
            (format!("[{{}}{f}, {f}]"), vec![1, 17]),
            (format!("[,{f},]"), vec![2]),
            (format!("[{f}]\nx\n{f}"), vec![1, 16, 18]),
            (format!("[{f}, {{\"name"), vec![1, 15]),
            (String::new(), vec![]),
        ] {
            assert_eq!(object_item_starts(&text), starts, "{text:?}");
            // One start per item the parse reads (an array never closed adds one item, which has none).
            let items = object_calls(&text, false, false);
            let unclosed = items.last().is_some_and(|i| i.as_ref().is_err_and(|m| m.kind == MalformedKind::Layout));
            assert_eq!(items.len() - usize::from(unclosed), starts.len(), "{text:?}");
        }
    }

    #[test]
    fn malformed_reasons() {
        let not_object = object_call(r#"{"name": "f", "arguments": [1]}"#).unwrap_err();
        assert_eq!((not_object.kind, not_object.offset), (MalformedKind::ArgumentsNotObject, 27));
        assert!(not_object.message.contains("an array"));
        assert_eq!(object_call(r#"{"arguments": {}}"#).unwrap_err().kind, MalformedKind::MissingName);
        let cut = object_call(r#"{"name": "f", "arguments": {"#).unwrap_err();
        assert_eq!((cut.kind, cut.offset), (MalformedKind::InvalidJson, 27));
        assert!(object_call(r#"{"name": "f", "name": "g"}"#).unwrap_err().message.contains("duplicate"));
    }
}
