//! The tools' JSON schemas, as the raw-text XML formats need them: which
//! parameters a tool has (only those open a parameter), and what each value's
//! raw text means (typing by the JSON types the schema allows).

use super::super::malformed::{Malformed, MalformedKind};
use super::literal::{is_non_finite_word, literal};
use super::numbers::{first_refusal, shown};
use serde_json::Value;
use std::collections::HashMap;

/// The JSON types a parameter's schema allows, as bits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Types(u8);

impl Types {
    const STRING: u8 = 1;
    const NUMBER: u8 = 2;
    const BOOLEAN: u8 = 4;
    const NULL: u8 = 8;
    const OBJECT: u8 = 16;
    const ARRAY: u8 = 32;
    /// The schema does not say: decoded when the text is a literal, else a string.
    const ANY: u8 = 64;

    fn has(self, bits: u8) -> bool {
        self.0 & bits != 0
    }

    fn of_name(name: &str) -> u8 {
        match name {
            "string" => Self::STRING,
            "number" | "integer" => Self::NUMBER,
            "boolean" => Self::BOOLEAN,
            "null" => Self::NULL,
            "object" => Self::OBJECT,
            "array" => Self::ARRAY,
            _ => Self::ANY,
        }
    }

    fn of_value(v: &Value) -> u8 {
        match v {
            Value::Null => Self::NULL,
            Value::Bool(_) => Self::BOOLEAN,
            Value::Number(_) => Self::NUMBER,
            Value::String(_) => Self::STRING,
            Value::Array(_) => Self::ARRAY,
            Value::Object(_) => Self::OBJECT,
        }
    }

    /// The types a property schema allows: `type` (a name or a list), the
    /// branches of `anyOf`/`oneOf`/`allOf`, and the values of `enum`/`const`.
    fn of_schema(prop: &Value, depth: usize) -> Self {
        if depth > 16 {
            return Self(Self::ANY);
        }
        let mut bits = 0;
        match prop.get("type") {
            Some(Value::String(t)) => bits |= Self::of_name(t),
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).for_each(|t| bits |= Self::of_name(t)),
            _ => {}
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            if let Some(Value::Array(branches)) = prop.get(key) {
                bits |= branches.iter().fold(0, |acc, b| acc | Self::of_schema(b, depth + 1).0);
            }
        }
        if let Some(Value::Array(values)) = prop.get("enum") {
            bits |= values.iter().fold(0, |acc, v| acc | Self::of_value(v));
        }
        if let Some(v) = prop.get("const") {
            bits |= Self::of_value(v);
        }
        Self(if bits == 0 { Self::ANY } else { bits })
    }
}

/// One parameter of a tool: its place among the tool's parameters, and its types.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Param {
    pub(crate) index: u32,
    types: Types,
}

/// A tool whose schema lists its parameters.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tool {
    params: HashMap<String, Param>,
}

impl Tool {
    pub(crate) fn param(&self, name: &str) -> Option<Param> {
        self.params.get(name).copied()
    }
}

/// Tool name -> its parameters, from `{tool: json_schema}`.
#[derive(Debug, Clone, Default)]
pub struct Schemas {
    tools: HashMap<String, Tool>,
}

impl Schemas {
    /// Reads `{tool: json_schema}`, each an object schema with `properties`. A
    /// tool whose schema has no `properties` object is as if it had no schema.
    #[must_use]
    pub fn from_json(doc: &Value) -> Self {
        let mut tools = HashMap::new();
        if let Value::Object(map) = doc {
            for (tool, schema) in map {
                if let Some(Value::Object(props)) = schema.get("properties") {
                    let params = (0u32..)
                        .zip(props)
                        .map(|(index, (name, prop))| (name.clone(), Param { index, types: Types::of_schema(prop, 0) }))
                        .collect();
                    tools.insert(tool.clone(), Tool { params });
                }
            }
        }
        Self { tools }
    }

    /// The tool's parameters, when its schema lists them.
    pub(crate) fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.get(name)
    }

    /// The value of `tool`'s parameter `param` written as the raw text `raw`.
    /// Without a schema for it, the text. With one: a parameter that may be a
    /// string stays the text (so `anyOf [string, null]` keeps `42` a string),
    /// except `null`/`None` where null is allowed; any other is decoded as JSON,
    /// else as a Python literal (`{'k': 'v'}`, `None`, `True`), and a JSON string
    /// that holds the object or array the schema asks for is that value. Text
    /// that decodes to nothing stays the text; a non-finite number is malformed.
    /// `marked_string` says the model itself marked the value a string
    /// (DeepSeek V3.2 `string="true"`): only a schema that rules strings out decodes it.
    pub(crate) fn typed(&self, tool: &str, param: &str, raw: &str, marked_string: bool) -> Result<Value, Malformed> {
        let Some(types) = self.tools.get(tool).and_then(|t| t.param(param)).map(|p| p.types) else {
            return Ok(Value::String(raw.to_owned()));
        };
        if types.has(Types::STRING) || (marked_string && types.has(Types::ANY)) {
            let null = types.has(Types::NULL) && matches!(raw.trim(), "null" | "None");
            return Ok(if null { Value::Null } else { Value::String(raw.to_owned()) });
        }
        match decode(raw)? {
            Some(Value::String(s)) if types.has(Types::OBJECT | Types::ARRAY) => {
                Ok(decode(&s)?.filter(|v| v.is_object() || v.is_array()).unwrap_or(Value::String(s)))
            }
            Some(v) => Ok(v),
            None => Ok(Value::String(raw.to_owned())),
        }
    }

    /// Whether `typed(tool, param, raw, marked_string)` is `raw` as a string
    /// whatever `raw` holds: streaming output sends such a value as it is read.
    pub(crate) fn always_text(&self, tool: &str, param: &str, marked_string: bool) -> bool {
        let Some(types) = self.tools.get(tool).and_then(|t| t.param(param)).map(|p| p.types) else {
            return true;
        };
        (types.has(Types::STRING) || (marked_string && types.has(Types::ANY))) && !types.has(Types::NULL)
    }
}

/// `raw` as a JSON value, else as a Python literal; `None` when it is neither.
pub(crate) fn decode(raw: &str) -> Result<Option<Value>, Malformed> {
    let text = raw.trim();
    match serde_json::from_str(text) {
        Ok(v) => {
            return match first_refusal(&v) {
                Some(why) => Err(Malformed::new(MalformedKind::NonFinite, 0, why)),
                None => Ok(Some(v)),
            }
        }
        Err(e) if e.to_string().starts_with("number out of range") => return Err(non_finite_value(text)),
        Err(_) => {}
    }
    match literal(text) {
        Ok(v) => Ok(Some(v)),
        Err(m) if m.kind == MalformedKind::NonFinite => Err(m),
        Err(_) if is_non_finite_word(text) => Err(non_finite_value(text)),
        Err(_) => Ok(None),
    }
}

fn non_finite_value(text: &str) -> Malformed {
    Malformed::new(MalformedKind::NonFinite, 0, format!("{:?} holds a number no tool can receive", shown(text)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schemas() -> Schemas {
        Schemas::from_json(&json!({"f": {"properties": {
            "n": {"type": "integer"}, "s": {"type": "string"}, "o": {"type": "object"},
            "sn": {"anyOf": [{"type": "string"}, {"type": "null"}]}, "on": {"anyOf": [{"type": "object"}, {"type": "null"}]},
            "b": {"type": "boolean"}, "a": {"type": "array"}, "u": {}, "e": {"enum": ["x", "y"]},
        }}}))
    }

    fn typed(param: &str, raw: &str) -> Value {
        schemas().typed("f", param, raw, false).unwrap()
    }

    #[test]
    fn types_by_schema() {
        assert_eq!(typed("n", " 42\n"), json!(42));
        assert_eq!(typed("s", "42"), json!("42"));
        assert_eq!(typed("s", "null"), json!("null"), "a plain string keeps null as text");
        assert_eq!(typed("sn", "42"), json!("42"), "anyOf [string, null] keeps 42 a string");
        assert_eq!(typed("sn", "None"), json!(null));
        assert_eq!(typed("o", "{\"a\": 1}"), json!({"a": 1}));
        assert_eq!(typed("o", "{'key': 'value'}"), json!({"key": "value"}), "a Python literal");
        assert_eq!(typed("o", "\"{'key': 'value', 'n': 1}\""), json!({"key": "value", "n": 1}), "a string holding it");
        assert_eq!(typed("on", "\"{\\\"k\\\": 42}\""), json!({"k": 42}));
        assert_eq!(typed("b", "True"), json!(true));
        assert_eq!(typed("a", "[{\"s\": 'pending'}]"), json!([{"s": "pending"}]));
        assert_eq!(typed("n", "None"), json!(null));
        assert_eq!(typed("n", "not json"), json!("not json"), "text that decodes to nothing stays text");
        assert_eq!(typed("u", "3"), json!(3), "an untyped parameter is decoded when it can be");
        assert_eq!(typed("e", "x"), json!("x"));
        assert_eq!(schemas().typed("g", "n", "1", false).unwrap(), json!("1"), "no schema: text");
        for bad in ["1e999", "inf", "-Infinity", "[1, nan]"] {
            assert_eq!(schemas().typed("f", "n", bad, false).unwrap_err().kind, MalformedKind::NonFinite, "{bad}");
        }
    }

    #[test]
    fn marked_strings_are_decoded_only_when_the_schema_rules_strings_out() {
        let s = schemas();
        assert_eq!(s.typed("f", "n", "42", true).unwrap(), json!(42));
        assert_eq!(s.typed("f", "o", "{\"a\":1}", true).unwrap(), json!({"a": 1}));
        assert_eq!(s.typed("f", "u", "42", true).unwrap(), json!("42"));
        assert_eq!(s.typed("f", "s", "42", true).unwrap(), json!("42"));
    }
}
