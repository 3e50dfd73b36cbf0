//! The body of a Hermes block: one JSON object with `name` and `arguments`,
//! keys in either order.

use super::event::Call;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

#[derive(Deserialize)]
struct Wire<'a> {
    name: String,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
}

/// Parses a block body, or says why it is malformed.
pub fn parse_body(body: &str) -> Result<Call, String> {
    let wire: Wire<'_> = serde_json::from_str(body).map_err(|e| format!("invalid tool-call JSON: {e}"))?;
    if wire.name.is_empty() {
        return Err("the tool name is empty".to_owned());
    }
    let raw_arguments = wire.arguments.map_or("{}", RawValue::get);
    let arguments: Map<String, Value> = match serde_json::from_str(raw_arguments) {
        Ok(Value::Object(map)) => map,
        Ok(Value::Null) => Map::new(),
        Ok(other) => return Err(format!("\"arguments\" must be a JSON object, got {}", kind_of(&other))),
        Err(e) => return Err(format!("invalid arguments JSON: {e}")),
    };
    Ok(Call { name: wire.name, arguments, raw_arguments: raw_arguments.to_owned() })
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
    fn keys_in_either_order() {
        let a = parse_body(r#"{"name": "f", "arguments": {"x": 1}}"#).unwrap();
        let b = parse_body("\n{\"arguments\": {\"x\": 1}, \"name\": \"f\"}\n").unwrap();
        assert_eq!(a.arguments, b.arguments);
        assert_eq!(a.name, "f");
        assert_eq!(a.raw_arguments, r#"{"x": 1}"#);
    }

    #[test]
    fn missing_arguments_are_empty() {
        assert!(parse_body(r#"{"name": "f"}"#).unwrap().arguments.is_empty());
    }

    #[test]
    fn malformed_reasons() {
        assert!(parse_body(r#"{"name": "f", "arguments": [1]}"#).unwrap_err().contains("an array"));
        assert!(parse_body(r#"{"arguments": {}}"#).unwrap_err().contains("name"));
        assert!(parse_body(r#"{"name": "f", "arguments": {"#).unwrap_err().contains("invalid"));
        assert!(parse_body(r#"{"name": ""}"#).unwrap_err().contains("empty"));
        assert!(parse_body(r#"{"name": "f", "name": "g"}"#).unwrap_err().contains("duplicate"));
    }
}
