//! Bodies that name the tool in plain text before a JSON argument object.

use super::super::malformed::{Malformed, MalformedKind};
use super::json::{arguments_call, kind_of, object_calls, offset_in};
use super::{check_name, excerpt, Context, Item};

fn layout(at: usize, message: impl Into<String>) -> Malformed {
    Malformed::new(MalformedKind::Layout, at, message)
}

/// The call of `name` with the argument text `args`, a slice of the body `text`.
fn call_at(text: &str, name: &str, args: &str) -> Item {
    arguments_call(name.to_owned(), args).map_err(|m| m.shifted(offset_in(text, args)))
}

/// `NAME<sep>{…}` (DeepSeek V3.1).
pub(super) fn name_sep_json(text: &str, sep: &str) -> Item {
    let (head, args) = text
        .split_once(sep)
        .ok_or_else(|| layout(text.len(), format!("no {sep} between the tool name and its arguments")))?;
    call_at(text, head.trim(), args)
}

/// `ID<sep>{…}` where the call id `functions.NAME:IDX` (or `NAME:IDX`: models
/// drop the prefix) names the tool (Kimi K2). An id that names no tool (`0`,
/// `call_3`, `toolu_…`) is malformed: the tool is never guessed.
pub(super) fn id_sep_json(text: &str, sep: &str) -> Item {
    let (head, args) = text
        .split_once(sep)
        .ok_or_else(|| layout(text.len(), format!("no {sep} between the call id and its arguments")))?;
    let id = head.trim();
    let name = id
        .strip_prefix("functions.")
        .unwrap_or(id)
        .rsplit_once(':')
        .filter(|(name, idx)| !name.is_empty() && !idx.is_empty() && idx.bytes().all(|b| b.is_ascii_digit()))
        .map(|(name, _)| name)
        .ok_or_else(|| {
            Malformed::new(
                MalformedKind::InvalidId,
                offset_in(text, id),
                format!("the call id {} names no tool (expected functions.NAME:IDX)", excerpt(id)),
            )
        })?;
    let mut call = call_at(text, name, args)?;
    call.id = Some(id.to_owned());
    Ok(call)
}

/// `TYPE<｜tool▁sep｜>NAME`, a newline, then the arguments in a json code fence (DeepSeek V3, R1).
pub(super) fn deepseek_v3(text: &str) -> Item {
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
pub(super) fn harmony(text: &str) -> Item {
    let end = text.find(|c: char| c.is_whitespace() || c == '<').unwrap_or(text.len());
    let name = &text[..end];
    let (_, args) = text
        .split_once("<|message|>")
        .ok_or_else(|| layout(end, format!("no <|message|> after the recipient {name:?}")))?;
    call_at(text, name, args)
}

/// After `[TOOL_CALLS]`: `[{…}, …]` (tokenizer ≤ v7), or `NAME[CALL_ID]ID[ARGS]{…}`, `NAME[ARGS]{…}`,
/// `NAME{…}` (v11+, and with control tokens stripped).
pub(super) fn mistral(text: &str, cx: Context<'_>) -> Vec<Item> {
    let trimmed = text.trim_start();
    let base = offset_in(text, trimmed);
    if trimmed.starts_with('[') {
        return object_calls(trimmed, cx.cut, false).into_iter().map(|i| i.map_err(|m| m.shifted(base))).collect();
    }
    // `[ARGS]` says where the arguments start, whatever they are (an array is arguments
    // that are not an object, not part of the name); with control tokens stripped, the
    // first brace does.
    let split = trimmed.split_once("[ARGS]").or_else(|| trimmed.find('{').map(|brace| trimmed.split_at(brace)));
    let Some((head, args)) = split else {
        // No arguments yet: a cut name is unterminated, text that is no name is not a call.
        let head = trimmed.trim_end();
        let bad = check_name(head, cx.name_chars)
            .err()
            .unwrap_or_else(|| layout(text.len(), format!("no argument object after {}", excerpt(head))));
        return vec![Err(bad.shifted(base))];
    };
    let head = head.trim_end();
    if let Some(bad) = leading_non_object(text, args) {
        return vec![Err(bad.shifted(base))];
    }
    let (name, id) = match head.split_once("[CALL_ID]") {
        Some((name, id)) => (name, Some(id.trim().to_owned())),
        None => (head, None),
    };
    vec![call_at(text, name.trim(), args).map(|mut call| {
        call.id = id;
        call
    })]
}

/// Arguments that begin with a whole JSON value that is no object, with text
/// after it: the model wrote its arguments and went on (prose, or the next call
/// cut short), so the call is `arguments_not_object`, never `unterminated` for
/// the text after it. A value alone is read as usual.
fn leading_non_object(text: &str, args: &str) -> Option<Malformed> {
    let mut values = serde_json::Deserializer::from_str(args).into_iter::<serde_json::Value>();
    let value = values.next()?.ok().filter(|v| !v.is_object())?;
    let rest = &args[values.byte_offset()..];
    (!rest.trim().is_empty()).then(|| {
        Malformed::new(
            MalformedKind::ArgumentsNotObject,
            offset_in(text, args) + (args.len() - args.trim_start().len()),
            format!("the arguments must be a JSON object, got {} followed by {}", kind_of(&value), excerpt(rest)),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::super::Schemas;
    use super::*;

    const SEP: &str = "<|tool_call_argument_begin|>";

    #[test]
    fn kimi_ids_name_the_tool_or_the_call_is_malformed() {
        for (head, name) in [
            ("functions.get_weather:0", "get_weather"),
            ("get_weather:12", "get_weather"),
            ("functions.fs:read:3 ", "fs:read"),
        ] {
            let c = id_sep_json(&format!("{head}{SEP}{{\"c\": 1}}"), SEP).unwrap();
            assert_eq!((c.name.as_str(), c.id.as_deref()), (name, Some(head.trim())));
        }
        for head in ["0", "call_3", "toolu_01AkmjoowNgNx2qNfJzc8z2F", "functions.invalid.0", "functions.f:x", ":0"] {
            let err = id_sep_json(&format!("{head}{SEP}{{}}"), SEP).unwrap_err();
            assert_eq!(err.kind, MalformedKind::InvalidId, "{head}");
        }
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
        let schemas = Schemas::default();
        let cx = Context { schemas: &schemas, name_chars: "", cut: false, arguments_required: false };
        let first = |text: &str| mistral(text, cx).remove(0);
        assert_eq!(first("[{\"name\": \"a\", \"arguments\": {}}]").unwrap().name, "a");
        let c = first("get[CALL_ID]abc123[ARGS]{\"x\": 1}").unwrap();
        assert_eq!((c.name.as_str(), c.id.as_deref()), ("get", Some("abc123")));
        assert_eq!(first("get{\"x\": 1}").unwrap().name, "get");
        assert_eq!(first("  junk [{\"name\": \"add\"}").unwrap().name, "junk [", "the name check comes after");
        assert_eq!(first(" not json at all").unwrap_err().kind, MalformedKind::InvalidName);
        assert_eq!(first("toolname_no_args").unwrap_err().kind, MalformedKind::Layout);
        assert_eq!(first("get[ARGS][1, 2]").unwrap_err().kind, MalformedKind::ArgumentsNotObject, "not a name");
        assert_eq!(first("get[ARGS]7").unwrap_err().kind, MalformedKind::ArgumentsNotObject);
        for prose_after in ["get[ARGS]7 Done.", "get[ARGS][1, 2] ok", "get[ARGS]\"x\" then", "get[ARGS]true\n"] {
            let cut = Context { cut: true, ..cx };
            let kind = |c| mistral(prose_after, c).remove(0).unwrap_err().kind;
            assert_eq!((kind(cx), kind(cut)), (MalformedKind::ArgumentsNotObject, MalformedKind::ArgumentsNotObject));
        }
    }
}
