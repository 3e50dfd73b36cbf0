//! Recognising tool-call blocks in a token stream: format specs, the
//! incremental delimiter automaton, body parsers, and what a block's end means.

mod body;
mod call;
mod delimiter;
pub mod formats;
mod lexer;
mod malformed;
mod scanner;
pub mod spec;

pub use body::Schemas;
pub use call::Call;
pub use lexer::{StructStart, Syntax};
pub use malformed::{Malformed, MalformedKind};
pub use scanner::{Role, ScanEvent, ScanState, Scanner, TokenRole};
pub use spec::{Anchor, Body, FormatSpec};

#[cfg(test)]
pub(crate) mod samples;
