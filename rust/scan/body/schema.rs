//! Typing raw parameter values (XML-style formats) by the tool's JSON schema.

use serde_json::Value;
use std::collections::HashMap;

/// Tool name -> parameter name -> whether the parameter is a string.
/// Parameters the schema types otherwise are parsed as JSON.
#[derive(Debug, Clone, Default)]
pub struct Schemas {
    tools: HashMap<String, HashMap<String, bool>>,
}

impl Schemas {
    /// Reads `{tool: json_schema}` where each schema is an object schema with
    /// `properties`; an unreadable document gives no schemas.
    #[must_use]
    pub fn from_json(doc: &Value) -> Self {
        let mut tools = HashMap::new();
        if let Value::Object(map) = doc {
            for (tool, schema) in map {
                let mut params = HashMap::new();
                if let Some(Value::Object(props)) = schema.get("properties") {
                    for (name, prop) in props {
                        params.insert(name.clone(), is_string(prop));
                    }
                }
                tools.insert(tool.clone(), params);
            }
        }
        Self { tools }
    }

    /// The value of `tool`'s parameter `param` written as `raw`: a string unless
    /// the schema types it otherwise and `raw` parses as JSON.
    #[must_use]
    pub fn typed(&self, tool: &str, param: &str, raw: &str) -> Value {
        let typed_otherwise = self.tools.get(tool).and_then(|p| p.get(param)).is_some_and(|is_str| !is_str);
        if typed_otherwise {
            if let Ok(v) = serde_json::from_str(raw.trim()) {
                return v;
            }
        }
        Value::String(raw.to_owned())
    }
}

fn is_string(prop: &Value) -> bool {
    match prop.get("type") {
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(ts)) => ts.iter().all(|t| t == "string" || t == "null"),
        _ => prop.get("enum").is_some_and(|e| e.as_array().is_some_and(|a| a.iter().all(Value::is_string))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_by_schema() {
        let s = Schemas::from_json(&serde_json::json!({
            "f": {"properties": {"n": {"type": "integer"}, "s": {"type": "string"}, "o": {"type": "object"}}}
        }));
        assert_eq!(s.typed("f", "n", " 42\n"), serde_json::json!(42));
        assert_eq!(s.typed("f", "s", "42"), serde_json::json!("42"));
        assert_eq!(s.typed("f", "o", "{\"a\": 1}"), serde_json::json!({"a": 1}));
        assert_eq!(s.typed("f", "n", "not json"), serde_json::json!("not json"));
        assert_eq!(s.typed("g", "n", "1"), serde_json::json!("1"));
    }
}
