//! Recognising tool-call blocks in a token stream: formats, the incremental
//! delimiter automaton, and the events a block produces.

mod delimiter;
mod event;
mod format;
mod hermes;
mod json_lexer;
mod scanner;

pub use event::{BlockEvent, Call};
pub use format::Format;
pub use scanner::{ScanEvent, ScanState, Scanner, TokenRole};
