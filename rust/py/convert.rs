//! Conversions across the boundary: tokens in, JSON values both ways. Every
//! failure is a `CoreError`, converted to a Python exception in one place.

use crate::error::{CoreError, TokenFault};
use crate::turn::TokenIn;
use pyo3::exceptions::PyOverflowError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PySet, PyString, PyTuple};
use serde_json::{Map, Value};

/// The name of an object's type, for messages.
pub(super) fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map_or_else(|_| "an unknown type".to_owned(), |n| n.to_string())
}

/// A `bool` argument named `what`, refused with inert's error (not pyo3's) when it is not one.
pub(super) fn flag(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<bool> {
    match obj.cast::<PyBool>() {
        Ok(b) => Ok(b.is_true()),
        Err(_) => Err(CoreError::WrongType { what: what.to_owned(), expected: "a bool", got: type_name(obj) }.into()),
    }
}

/// The Python objects of a token window, held so their buffers can be borrowed.
pub(super) fn collect_tokens<'py>(tokens: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if tokens.is_instance_of::<PyString>() || tokens.is_instance_of::<PyBytes>() {
        return Err(CoreError::BareTokens { type_name: type_name(tokens) }.into());
    }
    if let Ok(list) = tokens.cast::<PyList>() {
        return Ok(list.iter().collect());
    }
    let not_a_sequence = || CoreError::NotASequence { what: "tokens", type_name: type_name(tokens) };
    if unordered(tokens) {
        return Err(not_a_sequence().into());
    }
    tokens.try_iter().map_err(|_| not_a_sequence())?.collect()
}

/// A dict, set or frozenset: iterable, but not in an order the caller chose (a dict
/// iterates its keys, a set its hash order), so never a window of tokens or ids.
pub(super) fn unordered(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_instance_of::<PyDict>() || obj.is_instance_of::<PySet>() || obj.is_instance_of::<PyFrozenSet>()
}

/// Borrows one token: `str` and `bytes` as pieces, an integer (anything with
/// `__index__`, numpy's integer scalars included) as a token id.
pub(super) fn token<'a>(index: usize, obj: &'a Bound<'_, PyAny>) -> Result<TokenIn<'a>, CoreError> {
    if let Ok(s) = obj.cast::<PyString>() {
        return s.to_str().map(|s| TokenIn::Piece(s.as_bytes())).map_err(|_| CoreError::PieceNotUnicode { index });
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(TokenIn::Piece(b.as_bytes()));
    }
    match as_index::<u64>(obj) {
        Index::Fits(id) => Ok(TokenIn::Id(id)),
        Index::Overflows => Err(CoreError::InvalidTokenId { index, value: repr(obj) }),
        Index::NotAnInteger => Err(CoreError::PieceType { index, type_name: type_name(obj) }),
    }
}

/// What a lone correction that is not `None` may not be: a negative int (-1 means
/// "no correction" only in `StreamBatch.verify`'s array, where `None` cannot stand).
pub(super) const NO_CORRECTION: &str = "pass correction=None for no correction";

/// One token given on its own (a correction), its mistakes named by `what`
/// rather than by a position in a window it is not in; `instead` is said of an
/// int that is no id.
pub(super) fn token_arg<'a>(
    obj: &'a Bound<'_, PyAny>,
    what: &str,
    instead: &'static str,
) -> Result<TokenIn<'a>, CoreError> {
    token(0, obj).map_err(|e| {
        let fault = match e {
            CoreError::PieceNotUnicode { .. } => TokenFault::NotUnicode,
            CoreError::PieceType { type_name, .. } => TokenFault::Type { type_name },
            _ => {
                let value = repr(obj);
                // Only a negative int reads as a "none" sentinel; a huge one is just no id.
                let instead = if value.starts_with('-') { instead } else { "" };
                TokenFault::NotAnId { value, instead }
            }
        };
        CoreError::BadTokenArg { what: what.to_owned(), fault }
    })
}

/// What `__index__` makes of an argument.
pub(super) enum Index<T> {
    Fits(T),
    /// An integer outside `T`'s range (a negative one for an unsigned `T`).
    Overflows,
    /// Not an integer (a bool counts as none).
    NotAnInteger,
}

/// An integer argument by `__index__`: an `int` or numpy's integer scalars, never a
/// bool. One conversion, without looking `__index__` up first (which costs more
/// than the conversion).
pub(super) fn as_index<'py, T>(obj: &Bound<'py, PyAny>) -> Index<T>
where
    T: for<'a> FromPyObject<'a, 'py, Error = PyErr>,
{
    if obj.is_instance_of::<PyBool>() {
        return Index::NotAnInteger;
    }
    match obj.extract::<T>() {
        Ok(v) => Index::Fits(v),
        Err(e) if e.is_instance_of::<PyOverflowError>(obj.py()) => Index::Overflows,
        Err(_) => Index::NotAnInteger,
    }
}

/// A non-negative integer argument: an `int` or anything with `__index__`.
pub(super) fn count(obj: &Bound<'_, PyAny>, what: &'static str) -> Result<usize, CoreError> {
    match as_index::<usize>(obj) {
        Index::Fits(n) => Ok(n),
        Index::Overflows => Err(CoreError::OutOfRange {
            what,
            value: repr(obj),
            expected: "a non-negative integer that fits in 64 bits",
        }),
        Index::NotAnInteger => {
            Err(CoreError::WrongType { what: what.to_owned(), expected: "an int", got: type_name(obj) })
        }
    }
}

/// `str(obj)`, for messages.
pub(super) fn repr(obj: &Bound<'_, PyAny>) -> String {
    obj.str().map_or_else(|_| "<unprintable>".to_owned(), |s| s.to_string())
}

/// A `str` argument.
pub(super) fn text<'a>(obj: &'a Bound<'_, PyAny>, what: &str) -> Result<&'a str, CoreError> {
    let s = obj.cast::<PyString>().map_err(|_| CoreError::WrongType {
        what: what.to_owned(),
        expected: "a str",
        got: type_name(obj),
    })?;
    s.to_str().map_err(|_| CoreError::NotUnicode { what: what.to_owned() })
}

/// An integer past 64 bits (`-`, then digits) as a Python int; `None` for any
/// other number. Built 18 digits at a time, not through `int(str)`: that refuses
/// long strings where an application has set `sys.set_int_max_str_digits`. The
/// parser bounds such integers (`MAX_INTEGER_DIGITS`), so this is quick.
fn big_int<'py>(py: Python<'py>, text: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    if crate::scan::decimal_digits(text).is_none() {
        return Ok(None);
    }
    let (negative, digits) = text.strip_prefix('-').map_or((false, text), |d| (true, d));
    let mut int = 0u64.into_pyobject(py)?.into_any();
    for chunk in digits.as_bytes().chunks(18) {
        // 18 ASCII digits parse into a u64, and 10^18 fits one.
        let value: u64 = std::str::from_utf8(chunk).ok().and_then(|c| c.parse().ok()).unwrap_or(0);
        let scale = 10u64.pow(chunk.len() as u32);
        int = int.mul(scale)?.add(value)?;
    }
    Ok(Some(if negative { int.neg()? } else { int }))
}

/// A JSON value as the equivalent Python object.
pub(super) fn json_to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else if let Some(int) = big_int(py, &n.to_string())? {
                int
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(json_to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => object_to_py(py, map)?.into_any(),
    })
}

/// A JSON object as a Python dict, keys in the model's order.
pub(super) fn object_to_py<'py>(py: Python<'py>, map: &Map<String, Value>) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (k, v) in map {
        dict.set_item(k, json_to_py(py, v)?)?;
    }
    Ok(dict)
}

/// A Python value made of dicts, lists, tuples, str, int, float, bool and None, as JSON.
pub(super) fn py_to_json(obj: &Bound<'_, PyAny>, what: &'static str) -> PyResult<Value> {
    fn go(obj: &Bound<'_, PyAny>, what: &'static str, depth: usize) -> PyResult<Value> {
        if depth > 64 {
            return Err(CoreError::TooDeep { what }.into());
        }
        if obj.is_none() {
            return Ok(Value::Null);
        }
        if let Ok(b) = obj.cast::<PyBool>() {
            return Ok(Value::Bool(b.is_true()));
        }
        if obj.is_instance_of::<PyInt>() {
            if let Ok(i) = obj.extract::<i64>() {
                return Ok(Value::from(i));
            }
            if let Ok(u) = obj.extract::<u64>() {
                return Ok(Value::from(u));
            }
            // Past 64 bits: JSON numbers hold any integer (their digits are kept),
            // as long as Python will write it in decimal.
            let digits = obj.str().map_err(|_| CoreError::OutOfRange {
                what,
                value: "an int too long to write in decimal".to_owned(),
                expected: "an int Python can turn into a str (see sys.set_int_max_str_digits)",
            })?;
            if let Ok(n) = digits.to_str()?.parse::<serde_json::Number>() {
                return Ok(Value::Number(n));
            }
        }
        if let Ok(f) = obj.cast::<PyFloat>() {
            return Ok(serde_json::Number::from_f64(f.value()).map_or(Value::Null, Value::Number));
        }
        if let Ok(s) = obj.cast::<PyString>() {
            return Ok(Value::String(text(s.as_any(), what)?.to_owned()));
        }
        if let Ok(d) = obj.cast::<PyDict>() {
            let mut map = Map::new();
            for (k, v) in d.iter() {
                let key = text(&k, &format!("{what}: a key"))?;
                map.insert(key.to_owned(), go(&v, what, depth + 1)?);
            }
            return Ok(Value::Object(map));
        }
        if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
            return obj
                .try_iter()?
                .map(|item| go(&item?, what, depth + 1))
                .collect::<PyResult<Vec<_>>>()
                .map(Value::Array);
        }
        Err(CoreError::WrongType {
            what: what.to_owned(),
            expected: "JSON-like values (dict, list, str, int, float, bool, None)",
            got: type_name(obj),
        }
        .into())
    }
    go(obj, what, 0)
}
