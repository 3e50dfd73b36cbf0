//! Numbers as the model wrote them. serde_json keeps each number's own digits
//! (its `arbitrary_precision` feature), so an integer past 64 bits reaches the
//! tool exact, as Python's `json.loads` reads it. Two kinds of number cannot
//! reach a tool, and are found here so the call is reported malformed: one that
//! overflows every float (`1e999`: the tool would get infinity), and an integer
//! longer than Python converts from decimal (`json.loads` refuses it too).

use serde_json::{Number, Value};

/// The most digits an integer may have: CPython's default limit on converting
/// a decimal string to an int (`sys.get_int_max_str_digits()`).
pub(crate) const MAX_INTEGER_DIGITS: usize = 4300;

/// Why no tool can receive `n`, if none can.
pub(crate) fn refusal(n: &Number) -> Option<String> {
    if n.is_i64() || n.is_u64() {
        return None;
    }
    let text = n.to_string();
    match decimal_digits(&text) {
        Some(digits) if digits > MAX_INTEGER_DIGITS => Some(format!(
            "an integer of {digits} digits ({}), past the {MAX_INTEGER_DIGITS} Python converts",
            shown(&text)
        )),
        Some(_) => None,
        // as_f64 is None exactly when the number overflows a float.
        None => n.as_f64().is_none().then(|| format!("number out of range: {} overflows a float", shown(&text))),
    }
}

/// The first number in `value` that no tool can receive, and why, depth first.
pub(crate) fn first_refusal(value: &Value) -> Option<String> {
    match value {
        Value::Number(n) => refusal(n),
        Value::Array(items) => items.iter().find_map(first_refusal),
        Value::Object(map) => map.values().find_map(first_refusal),
        Value::Null | Value::Bool(_) | Value::String(_) => None,
    }
}

/// Where the first number that `refusal` refuses starts in JSON `text`:
/// outside strings (a key or a string value may spell one too).
pub(crate) fn refused_at(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let number_byte = |b: u8| b.is_ascii_digit() || matches!(b, b'e' | b'E' | b'+' | b'-' | b'.');
    let (mut i, mut in_string) = (0, false);
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
        } else if b == b'"' {
            in_string = true;
            i += 1;
        } else if number_byte(b) {
            let end = bytes[i..].iter().position(|&b| !number_byte(b)).map_or(bytes.len(), |n| i + n);
            if text[i..end].parse::<Number>().ok().and_then(|n| refusal(&n)).is_some() {
                return Some(i);
            }
            i = end;
        } else {
            i += 1;
        }
    }
    None
}

/// How many digits `text` has if it is a decimal integer literal (`-`, then digits).
pub(crate) fn decimal_digits(text: &str) -> Option<usize> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then_some(digits.len())
}

/// A number short enough for a message: a long one by its ends.
pub(crate) fn shown(text: &str) -> String {
    const ENDS: usize = 10;
    if text.len() <= 3 * ENDS || !text.is_ascii() {
        return text.chars().take(3 * ENDS).collect();
    }
    format!("{}…{}", &text[..ENDS], &text[text.len() - ENDS..])
}

/// An integer literal (`-`, then digits, no leading zero) as an exact JSON
/// number, up to `MAX_INTEGER_DIGITS` digits.
pub(crate) fn integer(literal: &str) -> Option<Number> {
    let digits = decimal_digits(literal)?;
    let unsigned = literal.strip_prefix('-').unwrap_or(literal);
    // A leading zero is no JSON integer; Python 3 refuses it too (except 0 itself).
    if digits > MAX_INTEGER_DIGITS || (digits > 1 && unsigned.starts_with('0')) {
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
        assert!(first_refusal(&v).is_none());
        assert_eq!(integer(big).unwrap().to_string(), big);
        assert_eq!(integer("-7").unwrap().as_i64(), Some(-7));
        for bad in ["", "-", "1.5", "1e3", "+1", "007", "0x10", "1_000"] {
            assert!(integer(bad).is_none(), "{bad}");
        }
        let longest = "9".repeat(MAX_INTEGER_DIGITS);
        assert!(
            first_refusal(&serde_json::from_str(&longest).unwrap()).is_none(),
            "an integer, however big for a float"
        );
        assert!(integer(&longest).is_some() && integer(&format!("{longest}9")).is_none());
    }

    #[test]
    fn numbers_no_tool_can_receive_are_found_outside_strings() {
        let too_long = "1".repeat(MAX_INTEGER_DIGITS + 1);
        for text in ["1e999", "-1E+400", "[1, {\"x\": 1e400}]", too_long.as_str()] {
            let v: Value = serde_json::from_str(text).unwrap();
            assert!(first_refusal(&v).is_some(), "{text}");
        }
        assert!(first_refusal(&json!({"a": [1.5, 1e300, -2]})).is_none());
        let text = r#"{"1e999": "1e999 \" 1e999", "n": [1, 1e400]}"#;
        assert_eq!(refused_at(text), text.find("1e400"));
        assert_eq!(refused_at(r#"{"n": 1.5}"#), None);
        let why = refusal(&too_long.parse().unwrap()).unwrap();
        assert!(why.len() < 100 && why.contains("4301 digits"), "{why}");
    }
}
