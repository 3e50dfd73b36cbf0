//! JSON call objects: `{"name": …, "arguments"|"parameters": {…}}`, alone,
//! in an array, or as a sequence.

use super::super::call::Call;
use super::super::malformed::{json_error_offset, Malformed, MalformedKind};
use super::excerpt;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

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
    fn into_call(self, text: &str) -> Result<Call, Malformed> {
        let raw = self.arguments.or(self.parameters);
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

/// A call from its name and argument text, which must be a JSON object (or null).
pub(super) fn arguments_call(name: String, raw_arguments: &str) -> Result<Call, Malformed> {
    let arguments: Map<String, Value> = match serde_json::from_str(raw_arguments) {
        Ok(Value::Object(map)) => map,
        Ok(Value::Null) => Map::new(),
        Ok(other) => {
            let at = raw_arguments.len() - raw_arguments.trim_start().len();
            return Err(Malformed::new(
                MalformedKind::ArgumentsNotObject,
                at,
                format!("the arguments of {name:?} must be a JSON object, got {}", kind_of(&other)),
            ));
        }
        Err(e) => {
            return Err(Malformed::new(
                MalformedKind::InvalidJson,
                json_error_offset(raw_arguments, &e),
                format!("invalid arguments JSON for {name:?}: {e}"),
            ))
        }
    };
    Ok(Call { name, arguments, raw_arguments: raw_arguments.trim().to_owned(), id: None })
}

/// A serde error on `text` as a malformed block; a missing `name` field is its own kind.
fn wire_error(text: &str, e: &serde_json::Error, what: &str) -> Malformed {
    let kind = if e.is_data() && e.to_string().starts_with("missing field `name`") {
        MalformedKind::MissingName
    } else {
        MalformedKind::InvalidJson
    };
    Malformed::new(kind, json_error_offset(text, e), format!("invalid tool-call JSON {what}{}: {e}", excerpt(text)))
}

/// Exactly one call object.
pub(super) fn object_call(text: &str) -> Result<Call, Malformed> {
    let wire: Wire<'_> = serde_json::from_str(text).map_err(|e| wire_error(text, &e, ""))?;
    wire.into_call(text)
}

/// An array of call objects, or call objects separated by whitespace, `;` or `,`.
pub(super) fn object_calls(text: &str) -> Result<Vec<Call>, Malformed> {
    let trimmed = text.trim();
    let base = offset_in(text, trimmed);
    if trimmed.starts_with('[') {
        let wires: Vec<Wire<'_>> =
            serde_json::from_str(trimmed).map_err(|e| wire_error(trimmed, &e, "array ").shifted(base))?;
        return wires.into_iter().map(|w| w.into_call(text)).collect();
    }
    let mut calls = Vec::new();
    let mut rest = trimmed;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ';' || c == ',');
        if rest.is_empty() {
            return Ok(calls);
        }
        let at = offset_in(text, rest);
        let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Wire<'_>>();
        match stream.next() {
            Some(Ok(wire)) => calls.push(wire.into_call(text)?),
            Some(Err(e)) => return Err(wire_error(rest, &e, "").shifted(at)),
            None => return Ok(calls),
        }
        rest = &rest[stream.byte_offset()..];
    }
}

fn kind_of(v: &Value) -> &'static str {
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

    #[test]
    fn keys_in_either_order_and_parameters_alias() {
        let a = object_call(r#"{"name": "f", "arguments": {"x": 1}}"#).unwrap();
        let b = object_call("\n{\"parameters\": {\"x\": 1}, \"name\": \"f\"}\n").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.raw_arguments, r#"{"x": 1}"#);
        assert!(object_call(r#"{"name": "f"}"#).unwrap().arguments.is_empty());
    }

    #[test]
    fn arrays_and_sequences() {
        let arr = object_calls(r#"[{"name": "a"}, {"name": "b", "arguments": {"k": [1]}}]"#).unwrap();
        let seq = object_calls("{\"name\": \"a\"}\n{\"name\": \"b\", \"arguments\": {\"k\": [1]}}\n").unwrap();
        assert_eq!(arr, seq);
        assert_eq!(object_calls(r#"{"name": "a"}; {"name": "b"}"#).unwrap().len(), 2);
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
        assert!(object_calls(r#"[{"name": "a"}, 3]"#).is_err());
        let second = object_calls("{\"name\": \"a\"}\n{\"name\": \"b\", \"arguments\": {\"k\": }}").unwrap_err();
        assert_eq!((second.kind, second.offset), (MalformedKind::InvalidJson, 47));
    }
}
