//! inert's core: the token ledger, the incremental tool-call scanner and the
//! commit-key hashing, with a thin pyo3 edge in `py/`.

pub mod error;
pub mod ledger;
pub mod scan;
pub mod stream;
pub mod vocab;

mod py;

use pyo3::prelude::*;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    py::register(m)
}
