//! A vocabulary from a `tokenizers` tokenizer's JSON (`Tokenizer.to_str()`, the
//! `tokenizer.json` of a HuggingFace model): the model's pieces decoded to raw
//! bytes by the spelling its decoder (or pre-tokenizer) declares, and the added
//! tokens, special ones included, as their literal text.

use super::decode::PieceEncoding;
use super::VocabBuilder;
use crate::error::CoreError;
use serde_json::Value;

/// Reads the pieces and added tokens of a tokenizer's JSON into `builder`.
pub fn read(json: &str, builder: &mut VocabBuilder) -> Result<PieceEncoding, CoreError> {
    let bad = |why: String| CoreError::BadTokenizer { reason: why };
    let doc: Value = serde_json::from_str(json).map_err(|e| bad(format!("its JSON does not parse: {e}")))?;
    let encoding = piece_encoding(&doc);
    let model = doc.get("model").ok_or_else(|| bad("it has no \"model\"".to_owned()))?;
    match model.get("vocab") {
        // BPE, WordPiece, WordLevel: {piece: id}.
        Some(Value::Object(map)) => {
            for (piece, id) in map {
                let id = id.as_u64().ok_or_else(|| bad(format!("piece {piece:?} has id {id}")))?;
                builder.insert(id, &encoding.decode(piece))?;
            }
        }
        // Unigram: [[piece, score], ...] indexed by id.
        Some(Value::Array(entries)) => {
            for (id, entry) in (0u64..).zip(entries) {
                let piece =
                    entry.get(0).and_then(Value::as_str).ok_or_else(|| bad(format!("vocab[{id}] is {entry}")))?;
                builder.insert(id, &encoding.decode(piece))?;
            }
        }
        _ => return Err(bad("its model has no \"vocab\" table".to_owned())),
    }
    for added in doc.get("added_tokens").and_then(Value::as_array).into_iter().flatten() {
        let (Some(id), Some(content)) =
            (added.get("id").and_then(Value::as_u64), added.get("content").and_then(Value::as_str))
        else {
            return Err(bad(format!("an added token is {added}")));
        };
        if content.is_empty() {
            return Err(CoreError::EmptySpecialToken { id });
        }
        builder.insert(id, content.as_bytes())?;
    }
    Ok(encoding)
}

/// How the tokenizer spells its pieces: its decoder says, else its pre-tokenizer.
fn piece_encoding(doc: &Value) -> PieceEncoding {
    for part in ["decoder", "pre_tokenizer"] {
        let Some(v) = doc.get(part) else { continue };
        if has_type(v, &|t, _| t == "ByteLevel") {
            return PieceEncoding::ByteLevel;
        }
        let sentencepiece = |t: &str, node: &Value| {
            t == "Metaspace"
                || t == "ByteFallback"
                || (t == "Replace" && node.pointer("/pattern/String").and_then(Value::as_str) == Some("\u{2581}"))
        };
        if has_type(v, &sentencepiece) {
            return PieceEncoding::SentencePiece;
        }
    }
    PieceEncoding::Raw
}

/// Whether `v` or a component nested in it (a `Sequence`) has a type `is` accepts.
fn has_type(v: &Value, is: &dyn Fn(&str, &Value) -> bool) -> bool {
    match v {
        Value::Object(map) => {
            map.get("type").and_then(Value::as_str).is_some_and(|t| is(t, v))
                || map.values().any(|child| matches!(child, Value::Array(_) | Value::Object(_)) && has_type(child, is))
        }
        Value::Array(items) => items.iter().any(|i| has_type(i, is)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab_of(json: &str) -> (PieceEncoding, super::super::Vocab) {
        let mut b = VocabBuilder::default();
        let enc = read(json, &mut b).unwrap();
        (enc, b.build())
    }

    #[test]
    fn byte_level_bpe_with_added_tokens() {
        let json = r#"{"added_tokens": [{"id": 3, "content": "<tool_call>", "special": true}],
            "decoder": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {"Ġhi": 0, "Ċ": 1, "x": 2}}}"#;
        let (enc, v) = vocab_of(json);
        assert_eq!(enc, PieceEncoding::ByteLevel);
        assert_eq!(v.piece(0).unwrap(), b" hi");
        assert_eq!(v.piece(1).unwrap(), b"\n");
        assert_eq!(v.piece(3).unwrap(), b"<tool_call>");
    }

    #[test]
    fn sentencepiece_unigram_and_llama_decoders() {
        let unigram = r#"{"decoder": {"type": "Metaspace", "replacement": "▁"},
            "model": {"type": "Unigram", "vocab": [["<unk>", 0.0], ["▁a", -1.0], ["<0x0A>", -2.0]]}}"#;
        let (enc, v) = vocab_of(unigram);
        assert_eq!(enc, PieceEncoding::SentencePiece);
        assert_eq!((v.piece(1).unwrap(), v.piece(2).unwrap()), (&b" a"[..], &b"\n"[..]));
        let llama = r#"{"decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"}]},
            "model": {"type": "BPE", "vocab": {"▁b": 0}}}"#;
        assert_eq!(vocab_of(llama).1.piece(0).unwrap(), b" b");
    }

    #[test]
    fn refusals_name_the_problem() {
        let mut b = VocabBuilder::default();
        assert!(matches!(read("{", &mut b), Err(CoreError::BadTokenizer { .. })));
        assert!(matches!(read(r#"{"model": {}}"#, &mut b), Err(CoreError::BadTokenizer { .. })));
        let empty = r#"{"model": {"vocab": {}}, "added_tokens": [{"id": 1, "content": ""}]}"#;
        assert!(matches!(read(empty, &mut b), Err(CoreError::EmptySpecialToken { id: 1 })));
    }
}
