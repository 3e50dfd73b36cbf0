//! Integers in: token ids, counts and sequence ids, from any integer buffer
//! (numpy arrays of any integer dtype, `array.array`, `memoryview`) read in one
//! copy on the Rust side, or from a list or tuple of ints (numpy integer scalars
//! included). Nothing here converts a buffer element by element through Python objects.

use super::convert::{as_index, repr, type_name, unordered, Index};
use crate::error::CoreError;
use crate::vocab::MAX_TOKEN_ID;
use pyo3::buffer::{Element, ElementType, PyBuffer, PyUntypedBuffer};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

/// Integers read from a buffer or a sequence, in row-major order, with their shape.
#[derive(Debug)]
pub(super) struct Ints {
    pub(super) values: Vec<i64>,
    /// Dimensions: 1 for `[len]`, 2 for `[rows, cols]`; a buffer may have more.
    pub(super) ndim: usize,
    /// The first two dimensions (`[len, 0]` for 1-D input). Not a `Vec`: a token
    /// window is read every step, and an allocation costs more than the read.
    pub(super) dims: [usize; 2],
    /// `values` are the bit patterns of unsigned 64-bit integers, some at or past
    /// 2**63 (negative as i64): token ids read them back with `as u64` (an id that
    /// large is out of range, and padding may hold anything, `uint64(-1)` included);
    /// every other argument refuses them (`fitting`).
    pub(super) wrapped: bool,
}

impl Ints {
    /// The values, refused if any is past what an i64 holds.
    fn fitting(self, what: &'static str) -> Result<Self, CoreError> {
        if self.wrapped {
            let value = "a uint64 array with an element past 2**63".to_owned();
            return Err(CoreError::OutOfRange { what, value, expected: "an array of elements below 2**63" });
        }
        Ok(self)
    }

    /// The values as token ids: exact for an unsigned buffer, and a negative
    /// value of any other input wraps (the caller has refused it, or it is padding).
    #[allow(clippy::cast_sign_loss)]
    pub(super) fn ids(self) -> Vec<u64> {
        // Reinterpreted in place (same size).
        self.values.into_iter().map(|v| v as u64).collect()
    }
}

/// A buffer's elements as i64, if `obj` exports a buffer (str and bytes are the
/// caller's to refuse first). `Ok(None)` when it exports none.
pub(super) fn buffer_ints(obj: &Bound<'_, PyAny>, what: &'static str) -> Result<Option<Ints>, CoreError> {
    let Ok(buf) = PyUntypedBuffer::get(obj) else { return Ok(None) };
    let (ndim, mut dims) = (buf.dimensions(), [0; 2]);
    for (d, &n) in dims.iter_mut().zip(buf.shape()) {
        *d = n;
    }
    let py = obj.py();
    let wrong = || CoreError::BufferType { what, format: buf.format().to_string_lossy().into_owned() };
    let element = ElementType::from_format(buf.format());
    if !matches!(element, ElementType::SignedInteger { .. } | ElementType::UnsignedInteger { .. }) {
        return Err(wrong());
    }
    // An empty buffer may have no memory at all to type-check.
    if buf.item_count() == 0 {
        return Ok(Some(Ints { values: Vec::new(), ndim, dims, wrapped: false }));
    }
    let swap = foreign_order(buf.format());
    let values = match element {
        ElementType::SignedInteger { bytes: 1 } => read::<i8>(py, &buf, swap),
        ElementType::SignedInteger { bytes: 2 } => read::<i16>(py, &buf, swap),
        ElementType::SignedInteger { bytes: 4 } => read::<i32>(py, &buf, swap),
        // numpy's default: copied out once, with no widening pass.
        ElementType::SignedInteger { bytes: 8 } if !swap && buf.item_count() > SMALL => {
            buf.as_typed::<i64>().ok().and_then(|typed| typed.to_vec(py).ok())
        }
        ElementType::SignedInteger { bytes: 8 } => read::<i64>(py, &buf, swap),
        ElementType::UnsignedInteger { bytes: 1 } => read::<u8>(py, &buf, swap),
        ElementType::UnsignedInteger { bytes: 2 } => read::<u16>(py, &buf, swap),
        ElementType::UnsignedInteger { bytes: 4 } => read::<u32>(py, &buf, swap),
        ElementType::UnsignedInteger { bytes: 8 } => {
            let typed: &PyBuffer<u64> = buf.as_typed().map_err(|_| wrong())?;
            let order = |v: u64| if swap { v.swapped() } else { v };
            // Bit patterns, in a plain map; whether any is past 2**63 is asked once, after.
            #[allow(clippy::cast_possible_wrap)]
            let values: Vec<i64> =
                with_elements(py, typed, |elements| elements.iter().map(|&v| order(v) as i64).collect())
                    .map_err(|_| wrong())?;
            let wrapped = values.iter().fold(0u8, |neg, &v| neg | u8::from(v < 0)) != 0;
            return Ok(Some(Ints { values, ndim, dims, wrapped }));
        }
        _ => return Err(wrong()),
    };
    Ok(Some(Ints { values: values.ok_or_else(wrong)?, ndim, dims, wrapped: false }))
}

/// Whether a buffer's elements are stored in the byte order this machine does
/// not use (numpy's `>i4` on x86): pyo3 types an element by its size alone.
fn foreign_order(format: &std::ffi::CStr) -> bool {
    match format.to_bytes().first() {
        Some(b'>' | b'!') => cfg!(target_endian = "little"),
        Some(b'<') => cfg!(target_endian = "big"),
        _ => false,
    }
}

/// An integer element of a buffer, in either byte order.
trait Int: Element + Copy + Default {
    #[must_use]
    fn swapped(self) -> Self;
}

macro_rules! ints {
    ($($t:ty),*) => {$(
        impl Int for $t {
            fn swapped(self) -> Self {
                self.swap_bytes()
            }
        }
    )*};
}
ints!(i8, i16, i32, i64, u8, u16, u32, u64);

/// A typed buffer's elements, widened; `None` if it is not of type `T`. Every
/// type read here widens without loss, so the loop is a plain (vectorized) map.
fn read<T: Int + Into<i64>>(py: Python<'_>, buf: &PyUntypedBuffer, swap: bool) -> Option<Vec<i64>> {
    let typed: &PyBuffer<T> = buf.as_typed().ok()?;
    with_elements(py, typed, |elements| {
        if swap {
            elements.iter().map(|&v| v.swapped().into()).collect()
        } else {
            elements.iter().map(|&v| v.into()).collect()
        }
    })
    .ok()
}

/// Elements that `with_elements` copies to the stack.
const SMALL: usize = 64;

/// `f` of `typed`'s elements, copied out: a token window (a few ids) to the stack,
/// so reading it allocates only what `f` makes of it; a longer buffer to the heap.
fn with_elements<T: Int, R>(py: Python<'_>, typed: &PyBuffer<T>, f: impl FnOnce(&[T]) -> R) -> PyResult<R> {
    let n = typed.item_count();
    if n <= SMALL {
        let mut small = [T::default(); SMALL];
        typed.copy_to_slice(py, &mut small[..n])?;
        return Ok(f(&small[..n]));
    }
    Ok(f(&typed.to_vec(py)?))
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
    Ok(run_1d(obj, what, false)?.values)
}

/// `ints_1d`; for token ids (`ids`), an unsigned buffer's values past 2**63 kept
/// (`Ints::wrapped`), and a list's ints past 2**63 refused as the ids they are not.
fn run_1d(obj: &Bound<'_, PyAny>, what: &'static str, ids: bool) -> Result<Ints, CoreError> {
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() || unordered(obj) {
        return Err(CoreError::NotASequence { what, type_name: type_name(obj) });
    }
    if !obj.is_instance_of::<PyList>() && !obj.is_instance_of::<PyTuple>() {
        if let Some(ints) = buffer_ints(obj, what)? {
            if ints.ndim != 1 {
                return Err(CoreError::BufferShape {
                    what,
                    reason: format!("a {}-D array; pass a 1-D one", ints.ndim),
                });
            }
            return if ids { Ok(ints) } else { ints.fitting(what) };
        }
    }
    let items = obj.try_iter().map_err(|_| CoreError::NotASequence { what, type_name: type_name(obj) })?;
    let values = items
        .enumerate()
        .map(|(i, item)| {
            let item = item.map_err(|_| CoreError::NotASequence { what, type_name: type_name(obj) })?;
            match as_index::<i64>(&item) {
                Index::Fits(v) => Ok(v),
                // A list holds no padding past 2**63 in practice: such an id is refused here.
                Index::Overflows if ids => Err(match as_index::<u64>(&item) {
                    Index::Fits(id) => CoreError::TokenIdTooLarge { id, max: u64::from(MAX_TOKEN_ID) },
                    _ => CoreError::InvalidTokenId { index: i, value: repr(&item) },
                }),
                // A shape mistake, raised as the same mistake in an array is.
                Index::NotAnInteger if nested(&item) => Err(CoreError::BufferShape {
                    what,
                    reason: format!("a sequence of sequences (item {i} is a {}); pass a 1-D one", type_name(&item)),
                }),
                _ => int(&item, &format!("{what}[{i}]")),
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Ints { dims: [values.len(), 0], ndim: 1, values, wrapped: false })
}

/// Whether an item of a run of ints is itself a run (a list, a tuple or an array).
fn nested(item: &Bound<'_, PyAny>) -> bool {
    item.is_instance_of::<PyList>()
        || item.is_instance_of::<PyTuple>()
        || (!item.is_instance_of::<PyBytes>() && PyUntypedBuffer::get(item).is_ok())
}

/// A 2-D block of integers, `rows` x `cols`: a buffer, or a sequence of equal-length sequences.
pub(super) fn ints_2d(obj: &Bound<'_, PyAny>, what: &'static str) -> Result<Ints, CoreError> {
    block_2d(obj, what, None)
}

/// `ints_2d` of token ids, row `i` drafted to `seqs[i]` (named in its errors):
/// unsigned ids past 2**63 are kept (`Ints::wrapped`), to be refused as out of
/// range where they are not padding.
pub(super) fn id_rows(obj: &Bound<'_, PyAny>, what: &'static str, seqs: &[u64]) -> Result<Ints, CoreError> {
    block_2d(obj, what, Some(seqs))
}

/// `ints_2d`, or `id_rows` of `seqs`.
fn block_2d(obj: &Bound<'_, PyAny>, what: &'static str, ids_of: Option<&[u64]>) -> Result<Ints, CoreError> {
    if unordered(obj) {
        return Err(CoreError::NotASequence { what, type_name: type_name(obj) });
    }
    if !obj.is_instance_of::<PyList>() && !obj.is_instance_of::<PyTuple>() && !obj.is_instance_of::<PyString>() {
        if let Some(ints) = buffer_ints(obj, what)? {
            if ints.ndim != 2 {
                return Err(CoreError::BufferShape {
                    what,
                    reason: format!("a {}-D array; pass a 2-D (sequences, tokens) one", ints.ndim),
                });
            }
            return if ids_of.is_some() { Ok(ints) } else { ints.fitting(what) };
        }
    }
    let rows = obj.try_iter().map_err(|_| CoreError::NotASequence { what, type_name: type_name(obj) })?;
    let mut values = Vec::new();
    let (mut n_rows, mut cols, mut wrapped) = (0, None, false);
    for row in rows {
        let row = row.map_err(|_| CoreError::NotASequence { what, type_name: type_name(obj) })?;
        if !matches!(as_index::<i64>(&row), Index::NotAnInteger) {
            // A shape mistake, raised as the same mistake in an array is.
            let reason = "a 1-D sequence of ints; pass one row of ids per sequence".to_owned();
            return Err(CoreError::BufferShape { what, reason });
        }
        let row = run_1d(&row, what, ids_of.is_some()).map_err(|error| {
            match (error, ids_of.and_then(|s| s.get(n_rows))) {
                (error @ (CoreError::InvalidTokenId { .. } | CoreError::TokenIdTooLarge { .. }), Some(&seq)) => {
                    CoreError::InSequence { seq, error: Box::new(error) }
                }
                (CoreError::BufferShape { .. }, _) => {
                    let reason =
                        format!("a sequence nested three deep (row {n_rows} holds a sequence); pass a 2-D one");
                    CoreError::BufferShape { what, reason }
                }
                (error, _) => error,
            }
        })?;
        if *cols.get_or_insert(row.values.len()) != row.values.len() {
            return Err(CoreError::BufferShape {
                what,
                reason: format!(
                    "row {n_rows} has {} ids, row 0 has {}; pad the rows and pass lengths=",
                    row.values.len(),
                    cols.unwrap_or(0)
                ),
            });
        }
        wrapped |= row.wrapped;
        values.extend(row.values);
        n_rows += 1;
    }
    Ok(Ints { values, ndim: 2, dims: [n_rows, cols.unwrap_or(0)], wrapped })
}

/// A 1-D or 2-D block of integers: a buffer of either shape, or a sequence of
/// ints, or of equal-length sequences of ints (told apart by its first item).
pub(super) fn ints_nd(obj: &Bound<'_, PyAny>, what: &'static str) -> Result<Ints, CoreError> {
    let sequence = obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>();
    if !sequence && !obj.is_instance_of::<PyString>() && !obj.is_instance_of::<PyBytes>() {
        if let Some(ints) = buffer_ints(obj, what)? {
            if ints.ndim > 2 {
                return Err(CoreError::BufferShape {
                    what,
                    reason: format!("a {}-D array; pass a 1-D or 2-D one", ints.ndim),
                });
            }
            return ints.fitting(what);
        }
    }
    let nested = sequence && obj.get_item(0).is_ok_and(|first| matches!(as_index::<i64>(&first), Index::NotAnInteger));
    if nested {
        return ints_2d(obj, what);
    }
    run_1d(obj, what, false)
}
