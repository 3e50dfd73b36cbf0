//! JSON call objects: `{"name": …, "arguments"|"parameters": {…}}`, alone,
//! in an array, or as a sequence.

use super::super::event::Call;
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
    fn into_call(self) -> Result<Call, String> {
        let raw = self.arguments.or(self.parameters);
        let mut call = arguments_call(self.name, raw.map_or("{}", RawValue::get))?;
        call.id = self.id;
        Ok(call)
    }
}

/// A call from its name and argument text, which must be a JSON object (or null).
pub fn arguments_call(name: String, raw_arguments: &str) -> Result<Call, String> {
    let arguments: Map<String, Value> = match serde_json::from_str(raw_arguments) {
        Ok(Value::Object(map)) => map,
        Ok(Value::Null) => Map::new(),
        Ok(other) => return Err(format!("the arguments of {name:?} must be a JSON object, got {}", kind_of(&other))),
        Err(e) => return Err(format!("invalid arguments JSON for {name:?}: {e}")),
    };
    Ok(Call { name, arguments, raw_arguments: raw_arguments.trim().to_owned(), id: None })
}

/// Exactly one call object.
pub fn object_call(text: &str) -> Result<Call, String> {
    let wire: Wire<'_> =
        serde_json::from_str(text).map_err(|e| format!("invalid tool-call JSON {}: {e}", excerpt(text)))?;
    wire.into_call()
}

/// An array of call objects, or call objects separated by whitespace, `;` or `,`.
pub fn object_calls(text: &str) -> Result<Vec<Call>, String> {
    let trimmed = text.trim();
    if trimmed.starts_with('[') {
        let wires: Vec<Wire<'_>> = serde_json::from_str(trimmed)
            .map_err(|e| format!("invalid tool-call JSON array {}: {e}", excerpt(trimmed)))?;
        return wires.into_iter().map(Wire::into_call).collect();
    }
    let mut calls = Vec::new();
    let mut rest = trimmed;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ';' || c == ',');
        if rest.is_empty() {
            return Ok(calls);
        }
        let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Wire<'_>>();
        match stream.next() {
            Some(Ok(wire)) => calls.push(wire.into_call()?),
            Some(Err(e)) => return Err(format!("invalid tool-call JSON {}: {e}", excerpt(rest))),
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
        assert!(object_call(r#"{"name": "f", "arguments": [1]}"#).unwrap_err().contains("an array"));
        assert!(object_call(r#"{"arguments": {}}"#).unwrap_err().contains("name"));
        assert!(object_call(r#"{"name": "f", "arguments": {"#).unwrap_err().contains("invalid"));
        assert!(object_call(r#"{"name": "f", "name": "g"}"#).unwrap_err().contains("duplicate"));
        assert!(object_calls(r#"[{"name": "a"}, 3]"#).is_err());
    }
}
