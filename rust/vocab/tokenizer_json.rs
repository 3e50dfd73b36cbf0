//! A vocabulary from a `tokenizers` tokenizer's JSON (`Tokenizer.to_str()`, the
//! `tokenizer.json` of a HuggingFace model): the model's pieces decoded to raw
//! bytes by the spelling its decoder (or pre-tokenizer) declares, and the added
//! tokens, special ones included, as their literal text.

use super::decode::PieceEncoding;
use super::VocabBuilder;
use crate::error::CoreError;
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;

/// The parts of the JSON read here. The vocabulary, the bulk of it, stays raw
/// until its shape is known and is then read typed: as `Value`s its 150k ids
/// would each keep their digits as a string (serde_json's `arbitrary_precision`).
#[derive(Deserialize)]
struct Doc<'a> {
    #[serde(borrow)]
    model: Option<Model<'a>>,
    /// Read as before the typed reader: anything but a list of tokens is no tokens.
    added_tokens: Option<Value>,
    decoder: Option<Value>,
    pre_tokenizer: Option<Value>,
}

#[derive(Deserialize)]
struct Model<'a> {
    #[serde(borrow)]
    vocab: Option<&'a RawValue>,
}

/// A `{piece: id}` table's entries in file order: a later entry for an id replaces
/// an earlier one, as it would read into a map.
struct Pairs(Vec<(String, u64)>);

impl<'de> Deserialize<'de> for Pairs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = Pairs;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of piece: id")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Pairs, A::Error> {
                let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some(entry) = map.next_entry()? {
                    pairs.push(entry);
                }
                Ok(Pairs(pairs))
            }
        }
        d.deserialize_map(Entries)
    }
}

/// Reads the pieces and added tokens of a tokenizer's JSON into `builder`.
pub fn read(json: &str, builder: &mut VocabBuilder) -> Result<PieceEncoding, CoreError> {
    let bad = |why: String| CoreError::BadTokenizer { reason: why };
    let doc: Doc<'_> = serde_json::from_str(json).map_err(|e| bad(format!("its JSON does not parse: {e}")))?;
    let encoding = piece_encoding(&doc);
    let model = doc.model.ok_or_else(|| bad("it has no \"model\"".to_owned()))?;
    let vocab = model.vocab.map(RawValue::get).unwrap_or_default().trim_start();
    let unreadable = |e: serde_json::Error| {
        bad(format!("its model's vocab does not read ({e}): it must map pieces to ids, non-negative ints below 2**64"))
    };
    if vocab.starts_with('{') {
        // BPE, WordPiece, WordLevel: {piece: id}. A piece listed twice keeps its
        // last id, as a map (and the `tokenizers` library) reads it.
        let Pairs(pairs) = serde_json::from_str(vocab).map_err(unreadable)?;
        let mut last: HashMap<&str, usize> = HashMap::with_capacity(pairs.len());
        for (i, (piece, _)) in pairs.iter().enumerate() {
            last.insert(piece, i);
        }
        for (i, (piece, id)) in pairs.iter().enumerate() {
            if last.get(piece.as_str()) == Some(&i) {
                builder.insert(*id, &encoding.decode(piece))?;
            }
        }
    } else if vocab.starts_with('[') {
        // Unigram: [[piece, score], ...] indexed by id.
        let entries: Vec<(String, f64)> = serde_json::from_str(vocab).map_err(unreadable)?;
        for (id, (piece, _)) in (0u64..).zip(entries) {
            builder.insert(id, &encoding.decode(&piece))?;
        }
    } else {
        return Err(bad("its model has no \"vocab\" table".to_owned()));
    }
    for added in doc.added_tokens.as_ref().and_then(Value::as_array).into_iter().flatten() {
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
fn piece_encoding(doc: &Doc<'_>) -> PieceEncoding {
    for part in [&doc.decoder, &doc.pre_tokenizer] {
        let Some(v) = part else { continue };
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
        let huge = r#"{"model": {"vocab": {"a": 18446744073709551616}}}"#;
        let Err(CoreError::BadTokenizer { reason }) = read(huge, &mut b) else { panic!("a 2**64 id was read") };
        assert!(reason.contains("non-negative ints below 2**64"), "{reason}");
    }

    /// What the typed reader must read as the `Value` reader before it did.
    #[test]
    fn duplicate_pieces_keep_their_last_id_and_odd_added_tokens_are_none() {
        let (_, v) = vocab_of(r#"{"model": {"vocab": {"a": 0, "b": 1, "a": 2}}, "added_tokens": null}"#);
        assert!(v.piece(0).is_err(), "the first id of a piece listed twice is gone");
        assert_eq!((v.piece(1).unwrap(), v.piece(2).unwrap()), (&b"b"[..], &b"a"[..]));
        let (_, v) = vocab_of(r#"{"model": {"vocab": {"a": 0}}, "added_tokens": {"id": 1}}"#);
        assert_eq!(v.len(), 1);
    }
}
