//! Conversions across the boundary: tokens in, JSON values out.

use super::errors::inert_error;
use crate::stream::TokenIn;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Value};

/// The Python objects of a token window, held so their buffers can be borrowed.
pub fn collect_tokens<'py>(tokens: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let py = tokens.py();
    if tokens.is_instance_of::<PyString>() || tokens.is_instance_of::<PyBytes>() {
        return Err(inert_error(
            py,
            "PieceTypeError",
            "tokens must be a sequence of pieces, not a single str or bytes; wrap one piece in a list".to_owned(),
        ));
    }
    if let Ok(list) = tokens.cast::<PyList>() {
        return Ok(list.iter().collect());
    }
    tokens.try_iter()?.collect()
}

/// Borrows one token: `str` and `bytes` as pieces, `int` as a token id.
pub fn token<'a>(index: usize, obj: &'a Bound<'_, PyAny>) -> PyResult<TokenIn<'a>> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(TokenIn::Piece(s.to_str()?.as_bytes()));
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(TokenIn::Piece(b.as_bytes()));
    }
    if obj.is_instance_of::<PyInt>() && !obj.is_instance_of::<PyBool>() {
        return match obj.extract::<u64>() {
            Ok(id) => Ok(TokenIn::Id(id)),
            Err(_) => Err(inert_error(
                obj.py(),
                "VocabularyError",
                format!("token {index} is {obj}, which is not a valid token id; ids are non-negative integers"),
            )),
        };
    }
    let type_name = obj.get_type().name().map_or_else(|_| "an unknown type".to_owned(), |n| n.to_string());
    Err(inert_error(
        obj.py(),
        "PieceTypeError",
        format!("token {index} is of type {type_name}; a token must be a str or bytes piece, or an int id"),
    ))
}

/// A JSON value as the equivalent Python object.
pub fn json_to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
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
pub fn object_to_py<'py>(py: Python<'py>, map: &Map<String, Value>) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (k, v) in map {
        dict.set_item(k, json_to_py(py, v)?)?;
    }
    Ok(dict)
}

/// A Python value made of dicts, lists, tuples, str, int, float, bool and None, as JSON.
pub fn py_to_json(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    fn go(obj: &Bound<'_, PyAny>, what: &str, depth: usize) -> PyResult<Value> {
        let py = obj.py();
        if depth > 64 {
            return Err(inert_error(py, "InertValueError", format!("{what} nests too deeply")));
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
        }
        if let Ok(f) = obj.cast::<PyFloat>() {
            return Ok(serde_json::Number::from_f64(f.value()).map_or(Value::Null, Value::Number));
        }
        if let Ok(s) = obj.cast::<PyString>() {
            return Ok(Value::String(s.to_str()?.to_owned()));
        }
        if let Ok(d) = obj.cast::<PyDict>() {
            let mut map = Map::new();
            for (k, v) in d.iter() {
                let key = k.cast::<PyString>().map_err(|_| {
                    inert_error(py, "InertTypeError", format!("{what}: keys must be str, got {}", k.get_type()))
                })?;
                map.insert(key.to_str()?.to_owned(), go(&v, what, depth + 1)?);
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
        Err(inert_error(py, "InertTypeError", format!("{what}: cannot use a value of type {} here", obj.get_type())))
    }
    go(obj, what, 0)
}
