//! Recognising tool-call blocks in a token stream: format specs, the
//! incremental delimiter automaton, body parsers, and what a block's end means.

mod body;
mod call;
mod delimiter;
pub mod formats;
mod lexer;
mod malformed;
mod matcher;
mod scanner;
pub mod spec;

#[cfg(feature = "python")]
pub(crate) use body::decimal_digits; // the binding's number conversion
pub(crate) use body::{check_name, head_call, item_starts, Flavor, PythonCalls, PythonFound, XmlArguments};
pub use body::{Item, Schemas};
pub use call::Call;
pub use lexer::{InString, JsonStrings, StructStart, Syntax};
pub use malformed::{Malformed, MalformedKind};
pub use matcher::Role;
pub use scanner::{BlockBody, ScanEvent, ScanState, Scanner, TextClass, TokenRole};
pub use spec::{Anchor, Body, FormatSpec, Framing, Reasoning};

#[cfg(test)]
pub(crate) mod samples;
