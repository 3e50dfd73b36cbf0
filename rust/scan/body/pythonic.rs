//! Python call syntax with keyword arguments whose values are Python (or JSON)
//! literals: `[get_weather(city='SF'), get_time()]` (Llama 3.2/4), or one call
//! per line (Olmo 3's `<function_calls>`). Each call is its own item.

use super::super::call::Call;
use super::super::malformed::{Malformed, MalformedKind};
use super::literal::Cursor;
use super::Item;
use serde_json::{Map, Value};
use std::ops::Range;

/// The calls of a Python list of calls, or of calls one per line. A list whose
/// calls all parse is read in one pass; otherwise each element is split out and
/// read on its own, so a broken call keeps its siblings.
pub(super) fn calls(text: &str, cut: bool) -> Vec<Item> {
    let start = text.len() - text.trim_start().len();
    let list = text[start..].starts_with('[');
    if list {
        if let Some(calls) = whole_list(text, start) {
            return calls.into_iter().map(Ok).collect();
        }
    }
    let split = split(text, if list { start + 1 } else { start }, list);
    let mut items: Vec<Item> = split.elements.into_iter().map(|r| call(text, r)).collect();
    match split.end {
        Some(end) if !text[end..].trim().is_empty() => items.push(Err(Malformed::new(
            MalformedKind::Layout,
            end,
            format!("unexpected text after the call list at byte {end}"),
        ))),
        // A list that never closed, after calls that all parsed: say so once.
        None if list && !cut && items.last().is_none_or(Result::is_ok) => {
            items.push(Err(Malformed::new(MalformedKind::Layout, text.len(), "the call list is not closed")));
        }
        _ => {}
    }
    items
}

/// The calls of the list at `start`, when it and every call in it parse and
/// nothing follows it.
fn whole_list(text: &str, start: usize) -> Option<Vec<Call>> {
    let mut p = Cursor::new(text);
    p.i = start + 1;
    let mut calls = Vec::new();
    loop {
        p.ws();
        if p.eat(b']') {
            break;
        }
        calls.push(parse_call(&mut p, false).ok()?);
        p.ws();
        if !p.eat(b',') {
            p.ws();
            p.eat(b']').then_some(())?;
            break;
        }
    }
    p.ws();
    p.at_end().then_some(calls)
}

/// Where the elements of a call list lie.
struct Split {
    elements: Vec<Range<usize>>,
    /// One past the list's closing bracket, when it has one.
    end: Option<usize>,
}

/// Splits the elements from `from`: at top-level commas (and newlines, for calls
/// one per line), outside strings, until the list's `]`. A string that never
/// ends runs to the end of the text, and so does its element.
fn split(text: &str, from: usize, list: bool) -> Split {
    let s = text.as_bytes();
    let (mut depth, mut quote, mut escaped) = (0usize, 0u8, false);
    let mut elements = Vec::new();
    let mut begin = from;
    let mut push = |r: Range<usize>| {
        if !text[r.clone()].trim().is_empty() {
            elements.push(r);
        }
    };
    for (i, &b) in s.iter().enumerate().skip(from) {
        if quote != 0 {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == quote {
                quote = 0;
            }
            continue;
        }
        match b {
            b'\'' | b'"' => quote = b,
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' if depth > 0 => depth -= 1,
            b']' if list => {
                push(begin..i);
                return Split { elements, end: Some(i + 1) };
            }
            b',' if depth == 0 => {
                push(begin..i);
                begin = i + 1;
            }
            b'\n' if depth == 0 && !list => {
                push(begin..i);
                begin = i + 1;
            }
            _ => {}
        }
    }
    push(begin..s.len());
    Split { elements, end: None }
}

/// One `name(key=value, …)` element at `at` in `text`.
fn call(text: &str, at: Range<usize>) -> Item {
    let base = at.start;
    let element = &text[at];
    let mut p = Cursor::new(element);
    parse_call(&mut p, true).map_err(|m| m.shifted(base))
}

/// One `name(key=value, …)` at the cursor; `alone` says nothing may follow it.
fn parse_call(p: &mut Cursor<'_>, alone: bool) -> Result<Call, Malformed> {
    p.ws();
    let name = p.ident()?.to_owned();
    p.ws();
    p.expect(b'(', "a call")?;
    let args_start = p.i;
    let mut arguments = Map::new();
    loop {
        p.ws();
        if p.eat(b')') {
            break;
        }
        let (key, value) = keyword(p, &name)?;
        if arguments.contains_key(&key) {
            return Err(p.error(MalformedKind::DuplicateArgument, format!("{name:?} is given {key:?} twice")));
        }
        arguments.insert(key, value);
        p.ws();
        if !p.eat(b',') {
            p.ws();
            p.expect(b')', "a call")?;
            break;
        }
    }
    let raw_arguments = p.text[args_start..p.i - 1].trim().to_owned();
    p.ws();
    if alone && !p.at_end() {
        return Err(p.error(MalformedKind::Layout, format!("unexpected text after the call to {name:?}")));
    }
    Ok(Call { name, arguments, raw_arguments, id: None })
}

/// `key=value` at the cursor, in a call to `name`.
fn keyword(p: &mut Cursor<'_>, name: &str) -> Result<(String, Value), Malformed> {
    let key = p.ident()?.to_owned();
    p.ws();
    if !p.eat(b'=') {
        return Err(
            p.error(MalformedKind::InvalidLiteral, format!("argument {key:?} of {name:?} is not a keyword argument"))
        );
    }
    Ok((key, p.value(0)?))
}

/// The tool a call's head (the text before its `(`) names, as `parse_call` reads it.
pub(super) fn head_name(head: &str) -> Option<&str> {
    let mut p = Cursor::new(head);
    p.ws();
    let name = p.ident().ok()?;
    p.ws();
    p.at_end().then_some(name)
}

/// One whole `key=value` argument (between the commas of a call), as `parse_call` reads it.
pub(super) fn keyword_argument(text: &str) -> Option<(String, Value)> {
    let mut p = Cursor::new(text);
    p.ws();
    let kv = keyword(&mut p, "").ok()?;
    p.ws();
    p.at_end().then_some(kv)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kinds(items: &[Item]) -> Vec<String> {
        items.iter().map(|i| i.as_ref().map_or_else(|m| format!("!{}", m.kind.name()), |c| c.name.clone())).collect()
    }

    #[test]
    fn calls_and_literals() {
        let cs = calls(
            "[get_weather(city='SF', metric=\"c\"), get_time(), f(a=[1, 2.5, None], b={'k': True}, c=(1,), d=-3)]",
            false,
        );
        assert_eq!(kinds(&cs), ["get_weather", "get_time", "f"]);
        let f = cs[2].as_ref().unwrap();
        assert_eq!(
            Value::Object(f.arguments.clone()),
            json!({"a": [1, 2.5, null], "b": {"k": true}, "c": [1], "d": -3})
        );
        assert!(calls("[]", false).is_empty());
    }

    #[test]
    fn a_broken_call_keeps_its_siblings() {
        assert_eq!(kinds(&calls("[calc(x=1e999), get(c='SF')]", false)), ["!non_finite", "get"]);
        assert_eq!(kinds(&calls("[bad(x=b'z'), get()]", false)), ["!invalid_literal", "get"]);
        assert_eq!(kinds(&calls("[f(1), g(a=1, a=2), h()]", false)), ["!invalid_literal", "!duplicate_argument", "h"]);
        assert_eq!(kinds(&calls("[get(), f(a='x 'y', b='z')]", true)), ["get", "!invalid_literal"]);
        assert_eq!(kinds(&calls("[foo(x=1])", false)), ["!invalid_literal"]);
        assert_eq!(kinds(&calls("[f(a=1)] tail", false)), ["f", "!layout"]);
        let bad = &calls("[ok(), f(a=x)]", false)[1];
        assert_eq!(bad.as_ref().unwrap_err().offset, 11, "offsets are in the body");
    }

    #[test]
    fn one_call_per_line() {
        let cs = calls("get_weather(city='SF')\nregister(name='x', ok=true, role=null)", false);
        assert_eq!(kinds(&cs), ["get_weather", "register"]);
        assert_eq!(cs[1].as_ref().unwrap().arguments["role"], Value::Null);
        assert_eq!(kinds(&calls("bad(x=b'z')\nget()", false)), ["!invalid_literal", "get"]);
    }
}
