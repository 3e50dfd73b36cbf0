//! inert's core: the token ledger, the incremental tool-call scanner, and the
//! turn that folds both into typed outcomes with commit keys. Pure Rust; the
//! pyo3 binding lives in `py/`, behind the `python` feature.

mod batch;
mod error;
mod int_map;
mod ledger;
mod scan;
mod turn;
mod vocab;

// The core's Rust API, all that the binding uses: a pure-Rust caller needs the same. Every
// other item is `pub(crate)` or narrower (`unreachable_pub` keeps it so).
pub use batch::{Batch, BatchOutcomes, DraftRows, PathRows, TreeParents, VerifyRows};
pub use error::{CoreError, TokenFault};
pub use ledger::TokenState;
pub use scan::{formats, FormatSpec, Reasoning, Schemas};
pub use turn::{
    parse, tool_call_id_prefix, CallRecord, CommitHasher, MalformedRecord, Outcome, ReasoningRecord, Released, Setup,
    TokenIn, ToolCallDelta, Turn, TurnConfig,
};
pub use vocab::{decode::PieceEncoding, tokenizer_json, Vocab, VocabBuilder};

#[cfg(test)]
mod test_rng;

#[cfg(feature = "python")]
mod py;

#[cfg(feature = "python")]
#[pyo3::pymodule]
fn _core(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
    py::register(m)
}
