//! inert's core: the token ledger, the incremental tool-call scanner, and the
//! turn that folds both into typed outcomes with commit keys. Pure Rust; the
//! pyo3 binding lives in `py/`, behind the `python` feature.

pub mod batch;
pub mod error;
pub mod ledger;
pub mod scan;
pub mod turn;
pub mod vocab;

#[cfg(test)]
mod test_rng;

#[cfg(feature = "python")]
mod py;

#[cfg(feature = "python")]
#[pyo3::pymodule]
fn _core(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
    py::register(m)
}
