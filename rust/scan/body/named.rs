//! Bodies that name the tool in plain text before a JSON argument object.

use super::super::call::Call;
use super::super::malformed::{Malformed, MalformedKind};
use super::excerpt;
use super::json::{arguments_call, object_calls, offset_in};

fn layout(at: usize, message: impl Into<String>) -> Malformed {
    Malformed::new(MalformedKind::Layout, at, message)
}

/// The call of `name` with the argument text `args`, a slice of the body `text`.
fn call_at(text: &str, name: &str, args: &str) -> Result<Call, Malformed> {
    arguments_call(name.to_owned(), args).map_err(|m| m.shifted(offset_in(text, args)))
}

/// `NAME<sep>{…}`. Kimi's `functions.NAME:IDX` is read as tool `NAME` with call id `functions.NAME:IDX`.
pub(super) fn name_sep_json(text: &str, sep: &str) -> Result<Call, Malformed> {
    let (head, args) = text
        .split_once(sep)
        .ok_or_else(|| layout(text.len(), format!("no {sep} between the tool name and its arguments")))?;
    let head = head.trim();
    let (name, id) = match head.strip_prefix("functions.") {
        Some(rest) => {
            let name = rest
                .rsplit_once(':')
                .filter(|(_, idx)| idx.bytes().all(|b| b.is_ascii_digit()))
                .map_or(rest, |(n, _)| n);
            (name, Some(head.to_owned()))
        }
        None => (head, None),
    };
    let mut call = call_at(text, name, args)?;
    call.id = id;
    Ok(call)
}

/// `TYPE<｜tool▁sep｜>NAME`, a newline, then the arguments in a json code fence (DeepSeek V3, R1).
pub(super) fn deepseek_v3(text: &str) -> Result<Call, Malformed> {
    let (_, rest) =
        text.split_once("<｜tool▁sep｜>").ok_or_else(|| layout(0, "no <｜tool▁sep｜> after the call type"))?;
    let (name, fenced) =
        rest.split_once('\n').ok_or_else(|| layout(offset_in(text, rest), "no newline after the tool name"))?;
    let inner = fenced.trim();
    let inner = inner.strip_prefix("```json").or_else(|| inner.strip_prefix("```")).ok_or_else(|| {
        layout(
            offset_in(text, inner),
            format!("the arguments of {:?} are not in a ``` fence: {}", name.trim(), excerpt(inner)),
        )
    })?;
    let inner =
        inner.trim_end().strip_suffix("```").ok_or_else(|| layout(text.len(), "the argument fence is not closed"))?;
    call_at(text, name.trim(), inner)
}

/// `NAME …<|message|>{…}`, the text after `to=functions.` (gpt-oss Harmony).
pub(super) fn harmony(text: &str) -> Result<Call, Malformed> {
    let end = text.find(|c: char| c.is_whitespace() || c == '<').unwrap_or(text.len());
    let name = &text[..end];
    let (_, args) = text
        .split_once("<|message|>")
        .ok_or_else(|| layout(end, format!("no <|message|> after the recipient {name:?}")))?;
    call_at(text, name, args)
}

/// After `[TOOL_CALLS]`: `[{…}, …]` (tokenizer ≤ v7), or `NAME[CALL_ID]ID[ARGS]{…}`, `NAME[ARGS]{…}`,
/// `NAME{…}` (v11+, and with control tokens stripped).
pub(super) fn mistral(text: &str) -> Result<Vec<Call>, Malformed> {
    let trimmed = text.trim_start();
    let base = offset_in(text, trimmed);
    if trimmed.starts_with('[') {
        return object_calls(trimmed).map_err(|m| m.shifted(base));
    }
    let brace = trimmed
        .find('{')
        .ok_or_else(|| layout(text.len(), format!("no argument object after {}", excerpt(trimmed))))?;
    let (head, args) = trimmed.split_at(brace);
    let head = head.strip_suffix("[ARGS]").unwrap_or(head);
    let (name, id) = match head.split_once("[CALL_ID]") {
        Some((name, id)) => (name, Some(id.trim().to_owned())),
        None => (head, None),
    };
    let mut call = call_at(text, name.trim(), args)?;
    call.id = id;
    Ok(vec![call])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kimi_ids() {
        let c = name_sep_json(
            "functions.get_weather:0<|tool_call_argument_begin|>{\"c\": 1}",
            "<|tool_call_argument_begin|>",
        )
        .unwrap();
        assert_eq!((c.name.as_str(), c.id.as_deref()), ("get_weather", Some("functions.get_weather:0")));
    }

    #[test]
    fn deepseek_fence() {
        let c = deepseek_v3("function<｜tool▁sep｜>f\n```json\n{\"a\": 1}\n```").unwrap();
        assert_eq!(c.name, "f");
        assert!(deepseek_v3("function<｜tool▁sep｜>f\n{\"a\": 1}").is_err());
    }

    #[test]
    fn harmony_recipient() {
        let c = harmony("lookup <|constrain|>json<|message|>{\"q\": \"x\"}").unwrap();
        assert_eq!(c.name, "lookup");
        let c = harmony("lookup<|channel|>commentary json<|message|>{}").unwrap();
        assert_eq!(c.name, "lookup");
    }

    #[test]
    fn mistral_layouts() {
        assert_eq!(mistral("[{\"name\": \"a\", \"arguments\": {}}]").unwrap()[0].name, "a");
        let c = &mistral("get[CALL_ID]abc123[ARGS]{\"x\": 1}").unwrap()[0];
        assert_eq!((c.name.as_str(), c.id.as_deref()), ("get", Some("abc123")));
        assert_eq!(mistral("get{\"x\": 1}").unwrap()[0].name, "get");
    }
}
