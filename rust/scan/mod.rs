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
pub(crate) mod spec;

#[cfg(feature = "python")]
pub(crate) use body::decimal_digits; // the binding's number conversion
pub(crate) use body::Item;
pub use body::Schemas;
pub(crate) use body::{check_name, head_call, item_starts, Flavor, PythonCalls, PythonFound, XmlArguments};
pub(crate) use call::Call;
pub(crate) use lexer::{InString, JsonStrings};
pub(crate) use malformed::{Malformed, MalformedKind};
pub(crate) use matcher::Role;
pub(crate) use scanner::{rests_on, BlockBody, ScanEvent, ScanState, Scanner, TextClass, TokenRole};
pub(crate) use spec::Body;
pub use spec::{FormatSpec, Reasoning};

#[cfg(test)]
mod cost;
#[cfg(test)]
pub(crate) mod samples;
