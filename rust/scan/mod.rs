//! Recognising tool-call blocks in a token stream: format specs, the
//! incremental delimiter automaton, body parsers, and the events a block produces.

mod body;
mod delimiter;
mod event;
pub mod formats;
mod lexer;
mod scanner;
pub mod spec;

pub use body::Schemas;
pub use event::{BlockEvent, Call};
pub use lexer::{StructStart, Syntax};
pub use scanner::{ScanEvent, ScanState, Scanner, TokenRole};
pub use spec::{Anchor, Body, FormatSpec};
