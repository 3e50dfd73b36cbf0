//! Numbers as the model wrote them. serde_json keeps each number's own digits
//! (its `arbitrary_precision` feature), so an integer past 64 bits reaches the
//! tool exact, as Python's `json.loads` reads it. The price is that a number no
//! float can hold (`1e999`) parses too: it is found here and reported malformed,
//! since a tool would receive infinity.

use serde_json::{Number, Value};

/// The first number in `value` that no float holds, depth first.
pub(crate) fn non_finite(value: &Value) -> Option<&Number> {
    match value {
        // as_f64 is None exactly when the digits overflow a float.
        Value::Number(n) => n.as_f64().is_none().then_some(n),
        Value::Array(items) => items.iter().find_map(non_finite),
        Value::Object(map) => map.values().find_map(non_finite),
        Value::Null | Value::Bool(_) | Value::String(_) => None,
    }
}

/// An integer literal (`-`, then digits) as an exact JSON number, however long.
pub(crate) fn integer(literal: &str) -> Option<Number> {
    let digits = literal.strip_prefix('-').unwrap_or(literal);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // A leading zero is no JSON integer; Python 3 refuses it too (except 0 itself).
    if digits.len() > 1 && digits.starts_with('0') {
        return None;
    }
    literal.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integers_past_64_bits_stay_exact() {
        let big = "100000000000000000000000000001";
        let v: Value = serde_json::from_str(&format!("{{\"a\": {big}, \"b\": [-{big}]}}")).unwrap();
        assert_eq!(v["a"].to_string(), big);
        assert_eq!(v["b"][0].to_string(), format!("-{big}"));
        assert!(non_finite(&v).is_none());
        assert_eq!(integer(big).unwrap().to_string(), big);
        assert_eq!(integer("-7").unwrap().as_i64(), Some(-7));
        for bad in ["", "-", "1.5", "1e3", "+1", "007", "0x10", "1_000"] {
            assert!(integer(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn numbers_no_float_holds_are_found() {
        for text in ["1e999", "-1E+400", "[1, {\"x\": 1e400}]"] {
            let v: Value = serde_json::from_str(text).unwrap();
            assert!(non_finite(&v).is_some(), "{text}");
        }
        assert!(non_finite(&json!({"a": [1.5, 1e300, -2]})).is_none());
    }
}
