//! Block bodies to calls, one parser per body layout. Each returns the
//! block's calls in order, or why the block is malformed.

mod json;
mod named;
mod pythonic;
mod schema;
mod xml;

pub use schema::Schemas;

use super::call::Call;
use super::malformed::{Malformed, MalformedKind};
use super::spec::Body;

/// Parses the text of one block body.
pub(crate) fn parse(body: &Body, text: &str, schemas: &Schemas) -> Result<Vec<Call>, Malformed> {
    let calls = match body {
        Body::JsonObject => vec![json::object_call(text)?],
        Body::JsonObjects => json::object_calls(text)?,
        Body::NameSepJson { sep } => vec![named::name_sep_json(text, sep)?],
        Body::DeepSeekV3 => vec![named::deepseek_v3(text)?],
        Body::Harmony => vec![named::harmony(text)?],
        Body::Mistral => named::mistral(text)?,
        Body::QwenXml => vec![xml::qwen(text, schemas)?],
        Body::GlmXml => vec![xml::glm(text, schemas)?],
        Body::DsmlXml => vec![xml::dsml(text)?],
        Body::MinimaxXml => vec![xml::minimax(text, schemas)?],
        Body::Pythonic => pythonic::calls(text)?,
    };
    if calls.is_empty() {
        return Err(Malformed::new(MalformedKind::NoCall, 0, "the block holds no call"));
    }
    if let Some(c) = calls.iter().find(|c| c.name.trim().is_empty()) {
        return Err(Malformed::new(
            MalformedKind::MissingName,
            0,
            format!("a call has an empty tool name (arguments {})", c.raw_arguments),
        ));
    }
    Ok(calls)
}

/// A short, single-line excerpt of model text for error messages.
fn excerpt(text: &str) -> String {
    let t: String = text.trim().chars().take(40).collect();
    if t.len() < text.trim().len() {
        format!("{t:?}…")
    } else {
        format!("{t:?}")
    }
}
