//! A parsed tool call, as the body parsers produce it.

use serde_json::{Map, Value};

/// A parsed tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub name: String,
    pub arguments: Map<String, Value>,
    /// The argument text as the model wrote it (JSON formats), or the
    /// arguments rendered as JSON (formats whose arguments are not JSON).
    pub raw_arguments: String,
    /// The call id the model wrote, in formats that carry one (Kimi, Mistral).
    pub id: Option<String>,
}
