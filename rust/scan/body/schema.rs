//! The tools' JSON schemas, as the raw-text XML formats need them: which
//! parameters a tool has (only those open a parameter), and what each value's
//! raw text means (typing by the JSON types the schema allows).

use super::super::malformed::{Malformed, MalformedKind};
use super::literal::{is_non_finite_word, literal};
use super::numbers::{decimal_digits, first_refusal, shown};
use serde_json::{Number, Value};
use std::collections::HashMap;

/// The JSON types a parameter's schema allows, as bits, and the order the
/// schema names them in: the first type a value satisfies is the value's type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Types {
    bits: u8,
    order: [u8; 8],
    len: u8,
}

impl Types {
    const STRING: u8 = 1;
    const NUMBER: u8 = 2;
    const BOOLEAN: u8 = 4;
    const NULL: u8 = 8;
    const OBJECT: u8 = 16;
    const ARRAY: u8 = 32;
    /// The schema does not say: decoded when the text is a literal, else a string.
    const ANY: u8 = 64;
    const INTEGER: u8 = 128;

    fn has(self, bits: u8) -> bool {
        self.bits & bits != 0
    }

    /// The types in the schema's order.
    fn in_order(&self) -> &[u8] {
        &self.order[..usize::from(self.len)]
    }

    fn add(&mut self, bit: u8) {
        if !self.has(bit) {
            self.bits |= bit;
            self.order[usize::from(self.len)] = bit;
            self.len += 1;
        }
    }

    fn merge(&mut self, other: Self) {
        for &bit in other.in_order() {
            self.add(bit);
        }
    }

    fn of_name(name: &str) -> u8 {
        match name {
            "string" => Self::STRING,
            "number" => Self::NUMBER,
            "integer" => Self::INTEGER,
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
            Value::Number(n) if is_integer(n) => Self::INTEGER,
            Value::Number(_) => Self::NUMBER,
            Value::String(_) => Self::STRING,
            Value::Array(_) => Self::ARRAY,
            Value::Object(_) => Self::OBJECT,
        }
    }

    /// The types a property schema allows, in the order it names them: `type`
    /// (a name or a list), the branches of `anyOf`/`oneOf`/`allOf`, and the
    /// values of `enum`/`const`.
    fn of_schema(prop: &Value, depth: usize) -> Self {
        let mut types = Self::default();
        if depth > 16 {
            types.add(Self::ANY);
            return types;
        }
        match prop.get("type") {
            Some(Value::String(t)) => types.add(Self::of_name(t)),
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).for_each(|t| types.add(Self::of_name(t))),
            _ => {}
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            if let Some(Value::Array(branches)) = prop.get(key) {
                for b in branches {
                    types.merge(Self::of_schema(b, depth + 1));
                }
            }
        }
        if let Some(Value::Array(values)) = prop.get("enum") {
            for v in values {
                types.add(Self::of_value(v));
            }
        }
        if let Some(v) = prop.get("const") {
            types.add(Self::of_value(v));
        }
        if types.len == 0 {
            types.add(Self::ANY);
        }
        types
    }

    /// Whether `value` is of type `bit`; an object or array written as a JSON
    /// string that holds it is that value.
    fn satisfied(bit: u8, value: &Value) -> Option<Value> {
        let fits = match (bit, value) {
            (Self::STRING, Value::String(_))
            | (Self::BOOLEAN, Value::Bool(_))
            | (Self::NULL, Value::Null)
            | (Self::OBJECT, Value::Object(_))
            | (Self::ARRAY, Value::Array(_))
            | (Self::NUMBER, Value::Number(_)) => true,
            (Self::INTEGER, Value::Number(n)) => is_integer(n),
            (Self::OBJECT | Self::ARRAY, Value::String(s)) => {
                let inner = decode(s).ok().flatten()?;
                let want = if bit == Self::OBJECT { inner.is_object() } else { inner.is_array() };
                return want.then_some(inner);
            }
            _ => false,
        };
        fits.then(|| value.clone())
    }
}

/// Whether a JSON number is an integer (however many digits it has).
fn is_integer(n: &Number) -> bool {
    n.is_i64() || n.is_u64() || decimal_digits(&n.to_string()).is_some()
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

    /// The types of `tool`'s parameter `param`, when its schema gives them.
    fn types(&self, tool: &str, param: &str) -> Option<Types> {
        self.tools.get(tool).and_then(|t| t.param(param)).map(|p| p.types)
    }

    /// The value of `tool`'s parameter `param` written as the raw text `raw`.
    /// Without a schema for it, the text: only a schema tells the string "42"
    /// from the number. With one, the schema's types in its order: the first
    /// the text satisfies is the value (`[string, integer]` keeps `42` text,
    /// `[integer, string]` makes it a number). `null`/`None` is null wherever null
    /// is allowed. Any text satisfies string; a type is satisfied by the text
    /// decoded as JSON, else as a Python literal (`{'k': 'v'}`, `None`, `True`),
    /// an object or array also by a JSON string that holds it. When no type is
    /// satisfied, the decoded value, else the text; a non-finite number is
    /// malformed. `marked_string` says the model itself marked the value a
    /// string (DeepSeek V3.2 `string="true"`): it decides only where the
    /// schema does not type the parameter.
    pub(crate) fn typed(&self, tool: &str, param: &str, raw: &str, marked_string: bool) -> Result<Value, Malformed> {
        let Some(types) = self.types(tool, param) else {
            return Ok(Value::String(raw.to_owned()));
        };
        if types.has(Types::NULL) && matches!(raw.trim(), "null" | "None") {
            return Ok(Value::Null);
        }
        let decoded = decode(raw);
        let value = decoded.as_ref().ok().and_then(Option::as_ref);
        for &bit in types.in_order() {
            match bit {
                Types::STRING => return Ok(Value::String(raw.to_owned())),
                Types::ANY if marked_string => return Ok(Value::String(raw.to_owned())),
                Types::ANY => return Ok(decoded?.unwrap_or_else(|| Value::String(raw.to_owned()))),
                _ => {
                    if let Some(v) = value.and_then(|v| Types::satisfied(bit, v)) {
                        return Ok(v);
                    }
                    if value.is_none() && matches!(bit, Types::OBJECT | Types::ARRAY) {
                        if let Some(v) = escaped(raw).and_then(|s| Types::satisfied(bit, &s)) {
                            return Ok(v);
                        }
                    }
                }
            }
        }
        Ok(decoded?.unwrap_or_else(|| Value::String(raw.to_owned())))
    }

    /// The value of `tool`'s parameter `param` that the model marked as JSON
    /// (DeepSeek V3.2 `string="false"`), written as `raw`. Read as JSON (or a
    /// Python literal); with a schema, the first of its types the value
    /// satisfies, in the schema's order. A schema that allows strings takes the
    /// text when no type fits (`null` for a plain string is the text "null";
    /// prose is that prose); without one, text that is no JSON is malformed.
    pub(crate) fn typed_json(&self, tool: &str, param: &str, raw: &str) -> Result<Option<Value>, Malformed> {
        let types = self.types(tool, param);
        let text = || Ok(Some(Value::String(raw.to_owned())));
        let decoded = match decode(raw) {
            Ok(Some(v)) => v,
            Ok(None) | Err(_) if types.is_some_and(|t| t.has(Types::STRING)) => return text(),
            other => return other,
        };
        let Some(types) = types else { return Ok(Some(decoded)) };
        for &bit in types.in_order() {
            if bit == Types::ANY {
                return Ok(Some(decoded));
            }
            if let Some(v) = Types::satisfied(bit, &decoded) {
                return Ok(Some(v));
            }
        }
        if types.has(Types::STRING) {
            return text();
        }
        Ok(Some(decoded))
    }

    /// Whether `typed(tool, param, raw, marked_string)` is `raw` as a string
    /// whatever `raw` holds: streaming output sends such a value as it is read.
    pub(crate) fn always_text(&self, tool: &str, param: &str, marked_string: bool) -> bool {
        let Some(types) = self.types(tool, param) else {
            return true;
        };
        !types.has(Types::NULL)
            && match types.in_order().first() {
                Some(&Types::STRING) => true,
                Some(&Types::ANY) => marked_string,
                _ => false,
            }
    }
}

/// `raw` read as the inside of a JSON string, when it is escaped like one
/// (`[{\"id\": 1}]`: models escape the quotes of JSON they write as a raw value).
fn escaped(raw: &str) -> Option<Value> {
    let text = raw.trim();
    if !text.contains("\\\"") {
        return None;
    }
    serde_json::from_str::<String>(&format!("\"{text}\"")).ok().map(Value::String)
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
        assert_eq!(
            typed("a", r#"[{\"id\": \"1\", \"p\": \"C:\\\\x\"}]"#),
            json!([{"id": "1", "p": "C:\\x"}]),
            "escaped JSON"
        );
        assert_eq!(typed("s", r#"[{\"id\": 1}]"#), json!(r#"[{\"id\": 1}]"#), "a string stays as written");
        assert_eq!(schemas().typed("g", "n", "1", false).unwrap(), json!("1"), "no schema: text");
        for bad in ["1e999", "inf", "-Infinity", "[1, nan]"] {
            assert_eq!(schemas().typed("f", "n", bad, false).unwrap_err().kind, MalformedKind::NonFinite, "{bad}");
        }
    }

    #[test]
    fn several_types_take_the_first_the_text_satisfies_in_the_schemas_order() {
        let s = Schemas::from_json(&json!({"f": {"properties": {
            "is": {"type": ["integer", "string"]}, "si": {"type": ["string", "integer"]},
            "ns": {"anyOf": [{"type": "number"}, {"type": "string"}]}, "bi": {"type": ["boolean", "integer"]},
            "os": {"anyOf": [{"type": "object"}, {"type": "string"}]}, "ns0": {"type": ["null", "string"]},
            "ens": {"enum": [1, "auto"]},
        }}}));
        let typed = |p: &str, raw: &str, marked: bool| s.typed("f", p, raw, marked).unwrap();
        for marked in [false, true] {
            assert_eq!(typed("is", "42", marked), json!(42), "integer comes first");
            assert_eq!(typed("is", "4.5", marked), json!("4.5"), "4.5 is no integer: the next type, string");
            assert_eq!(typed("is", "abc", marked), json!("abc"));
            assert_eq!(typed("is", "1e999", marked), json!("1e999"), "a number no float holds is still text");
            assert_eq!(typed("si", "42", marked), json!("42"), "string comes first");
            assert_eq!(typed("ns", "4.5", marked), json!(4.5));
            assert_eq!(typed("bi", "1", marked), json!(1));
            assert_eq!(typed("bi", "True", marked), json!(true));
            assert_eq!(typed("os", "{'a': 1}", marked), json!({"a": 1}));
            assert_eq!(typed("os", "not {an object", marked), json!("not {an object"));
            assert_eq!(typed("ns0", "null", marked), json!(null));
            assert_eq!(typed("ens", "1", marked), json!(1));
            assert_eq!(typed("ens", "auto", marked), json!("auto"));
        }
        let big = "-100000000000000000000000000001";
        assert_eq!(typed("is", big, false).to_string(), big, "an integer past 64 bits is an integer");
        assert!(
            !s.always_text("f", "is", false) && s.always_text("f", "si", false) && !s.always_text("f", "ns0", true)
        );
    }

    #[test]
    fn values_marked_as_json_take_the_first_type_their_json_satisfies() {
        let s = Schemas::from_json(&json!({"f": {"properties": {
            "is": {"type": ["integer", "string"]}, "si": {"type": ["string", "integer"]}, "s": {"type": "string"},
            "n": {"type": "integer"}, "ns0": {"type": ["null", "string"]}, "o": {"type": "object"},
        }}}));
        let json = |p: &str, raw: &str| s.typed_json("f", p, raw).unwrap();
        assert_eq!(json("is", "42"), Some(json!(42)));
        assert_eq!(json("si", "42"), Some(json!(42)), "42 is no JSON string: the next type");
        assert_eq!(json("si", "\"42\""), Some(json!("42")));
        assert_eq!(json("s", "null"), Some(json!("null")), "a plain string takes the text");
        assert_eq!(json("ns0", "null"), Some(json!(null)));
        assert_eq!(json("ns0", "hello"), Some(json!("hello")), "prose where a string is allowed");
        assert_eq!(json("o", "\"{\\\"k\\\": 1}\""), Some(json!({"k": 1})));
        assert_eq!(json("n", "hello"), None, "no JSON, and no string allowed");
        assert_eq!(json("x", "hello"), None, "no schema: no JSON is nothing");
        assert_eq!(s.typed_json("f", "n", "1e999").unwrap_err().kind, MalformedKind::NonFinite);
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
