//! Integers in: token ids, counts and sequence ids, from any integer buffer
//! (numpy arrays of any integer dtype, `array.array`, `memoryview`) read in one
//! copy on the Rust side, or from a list or tuple of ints (numpy integer scalars
//! included). Nothing here converts a buffer element by element through Python objects.

use super::convert::{as_index, repr, type_name, Index};
use crate::error::CoreError;
use pyo3::buffer::{Element, ElementType, PyBuffer, PyUntypedBuffer};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

/// Integers read from a buffer or a sequence, in row-major order, with their shape.
#[derive(Debug)]
pub(super) struct Ints {
    pub(super) values: Vec<i64>,
    /// `[len]` for 1-D input, `[rows, cols]` for 2-D.
    pub(super) shape: Vec<usize>,
}

/// A buffer's elements as i64, if `obj` exports a buffer (str and bytes are the
/// caller's to refuse first). `Ok(None)` when it exports none.
pub(super) fn buffer_ints(obj: &Bound<'_, PyAny>, what: &'static str) -> Result<Option<Ints>, CoreError> {
    let Ok(buf) = PyUntypedBuffer::get(obj) else { return Ok(None) };
    let shape = buf.shape().to_vec();
    let py = obj.py();
    let wrong = || CoreError::BufferType { what, format: buf.format().to_string_lossy().into_owned() };
    let too_large =
        || CoreError::OutOfRange { what, value: "an element past 2**63".to_owned(), expected: "below 2**63" };
    let element = ElementType::from_format(buf.format());
    if !matches!(element, ElementType::SignedInteger { .. } | ElementType::UnsignedInteger { .. }) {
        return Err(wrong());
    }
    // An empty buffer may have no memory at all to type-check.
    if buf.item_count() == 0 {
        return Ok(Some(Ints { values: Vec::new(), shape }));
    }
    let values = match element {
        ElementType::SignedInteger { bytes: 1 } => read::<i8>(py, &buf),
        ElementType::SignedInteger { bytes: 2 } => read::<i16>(py, &buf),
        ElementType::SignedInteger { bytes: 4 } => read::<i32>(py, &buf),
        ElementType::SignedInteger { bytes: 8 } => read::<i64>(py, &buf),
        ElementType::UnsignedInteger { bytes: 1 } => read::<u8>(py, &buf),
        ElementType::UnsignedInteger { bytes: 2 } => read::<u16>(py, &buf),
        ElementType::UnsignedInteger { bytes: 4 } => read::<u32>(py, &buf),
        ElementType::UnsignedInteger { bytes: 8 } => {
            let typed: &PyBuffer<u64> = buf.as_typed().map_err(|_| wrong())?;
            let raw = typed.to_vec(py).map_err(|_| wrong())?;
            Some(raw.into_iter().map(i64::try_from).collect::<Result<_, _>>().map_err(|_| too_large())?)
        }
        _ => return Err(wrong()),
    };
    Ok(Some(Ints { values: values.ok_or_else(wrong)?, shape }))
}

/// A typed buffer's elements, widened; `None` if it is not of type `T`. Every
/// type read here widens without loss, so the loop is a plain (vectorized) map.
fn read<T: Element + Copy + Into<i64>>(py: Python<'_>, buf: &PyUntypedBuffer) -> Option<Vec<i64>> {
    let typed: &PyBuffer<T> = buf.as_typed().ok()?;
    Some(typed.to_vec(py).ok()?.into_iter().map(Into::into).collect())
}

/// One integer: an `int` or anything with `__index__` (numpy's integer scalars), never a bool.
pub(super) fn int(obj: &Bound<'_, PyAny>, what: &str) -> Result<i64, CoreError> {
    match as_index::<i64>(obj) {
        Index::Fits(v) => Ok(v),
        Index::Overflows => {
            Err(CoreError::WrongType { what: what.to_owned(), expected: "an int that fits in 64 bits", got: repr(obj) })
        }
        Index::NotAnInteger => {
            Err(CoreError::WrongType { what: what.to_owned(), expected: "an int", got: type_name(obj) })
        }
    }
}

/// A 1-D run of integers: a buffer, or a sequence of ints.
pub(super) fn ints_1d(obj: &Bound<'_, PyAny>, what: &'static str) -> Result<Vec<i64>, CoreError> {
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
        return Err(CoreError::NotASequence { what, type_name: type_name(obj) });
    }
    if !obj.is_instance_of::<PyList>() && !obj.is_instance_of::<PyTuple>() {
        if let Some(ints) = buffer_ints(obj, what)? {
            if ints.shape.len() != 1 {
                return Err(CoreError::BufferShape {
                    what,
                    reason: format!("a {}-D array; pass a 1-D one", ints.shape.len()),
                });
            }
            return Ok(ints.values);
        }
    }
    let items = obj.try_iter().map_err(|_| CoreError::NotASequence { what, type_name: type_name(obj) })?;
    items
        .enumerate()
        .map(|(i, item)| {
            let item = item.map_err(|_| CoreError::NotASequence { what, type_name: type_name(obj) })?;
            int(&item, &format!("{what}[{i}]"))
        })
        .collect()
}

/// A 2-D block of integers, `rows` x `cols`: a buffer, or a sequence of equal-length sequences.
pub(super) fn ints_2d(obj: &Bound<'_, PyAny>, what: &'static str) -> Result<Ints, CoreError> {
    if !obj.is_instance_of::<PyList>() && !obj.is_instance_of::<PyTuple>() && !obj.is_instance_of::<PyString>() {
        if let Some(ints) = buffer_ints(obj, what)? {
            if ints.shape.len() != 2 {
                return Err(CoreError::BufferShape {
                    what,
                    reason: format!("a {}-D array; pass a 2-D (sequences, tokens) one", ints.shape.len()),
                });
            }
            return Ok(ints);
        }
    }
    let rows = obj.try_iter().map_err(|_| CoreError::NotASequence { what, type_name: type_name(obj) })?;
    let mut values = Vec::new();
    let (mut n_rows, mut cols) = (0, None);
    for row in rows {
        let row = row.map_err(|_| CoreError::NotASequence { what, type_name: type_name(obj) })?;
        let row = ints_1d(&row, what)?;
        if *cols.get_or_insert(row.len()) != row.len() {
            return Err(CoreError::BufferShape {
                what,
                reason: format!(
                    "row {n_rows} has {} ids, row 0 has {}; pad the rows and pass lengths=",
                    row.len(),
                    cols.unwrap_or(0)
                ),
            });
        }
        values.extend(row);
        n_rows += 1;
    }
    Ok(Ints { values, shape: vec![n_rows, cols.unwrap_or(0)] })
}
