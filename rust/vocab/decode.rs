//! Tokenizer pieces to the raw bytes a model emits. Tokenizers store pieces in
//! a printable spelling: GPT-2's byte-level BPE maps each byte to a character
//! (`Ġ` for a space, `Ċ` for a newline); SentencePiece writes `▁` for a space
//! and `<0xNN>` for a byte it falls back to. inert scans bytes, so a
//! vocabulary holds what those spellings stand for.

/// How a tokenizer spells its pieces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PieceEncoding {
    /// Pieces are the text itself (tiktoken ranks, added tokens, WordLevel).
    Raw,
    /// GPT-2 byte-to-unicode: one character per byte.
    ByteLevel,
    /// `▁` for a space, `<0xNN>` for a single byte.
    SentencePiece,
}

impl PieceEncoding {
    /// The bytes `piece` stands for.
    #[must_use]
    pub fn decode(self, piece: &str) -> Vec<u8> {
        match self {
            Self::Raw => piece.as_bytes().to_vec(),
            Self::ByteLevel => byte_level(piece),
            Self::SentencePiece => sentencepiece(piece),
        }
    }
}

/// The character GPT-2's byte-level alphabet uses for `byte`: printable
/// Latin-1 bytes stand for themselves, the other 68 are shifted past U+0100 in order.
/// The decoder reads the alphabet the other way (`byte_of_char`); the tests check the two
/// against each other.
#[cfg(test)]
#[must_use]
fn byte_level_char(byte: u8) -> char {
    let printable = |b: u8| matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
    if printable(byte) {
        return char::from(byte);
    }
    let shifted = (0..byte).filter(|&b| !printable(b)).count() as u32;
    char::from_u32(256 + shifted).unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// The byte a byte-level character stands for, if it is one.
fn byte_of_char(c: char) -> Option<u8> {
    let code = u32::from(c);
    match code {
        0x21..=0x7E | 0xA1..=0xAC | 0xAE..=0xFF => Some(code as u8),
        // The shifted characters, in the order of the bytes they stand for:
        // 0x00-0x20 (33), 0x7F-0xA0 (34), 0xAD (1).
        0x100..=0x120 => Some((code - 0x100) as u8),
        0x121..=0x142 => Some((code - 0x121 + 0x7F) as u8),
        0x143 => Some(0xAD),
        _ => None,
    }
}

/// A byte-level piece's bytes. A character outside the alphabet (which a
/// byte-level vocabulary does not hold) keeps its UTF-8 bytes.
fn byte_level(piece: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(piece.len());
    for c in piece.chars() {
        match byte_of_char(c) {
            Some(b) => out.push(b),
            None => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    out
}

/// A SentencePiece piece's bytes: `<0xNN>` is the byte NN, `▁` a space.
fn sentencepiece(piece: &str) -> Vec<u8> {
    if let Some(hex) = piece.strip_prefix("<0x").and_then(|p| p.strip_suffix('>')) {
        if hex.len() == 2 {
            if let Ok(b) = u8::from_str_radix(hex, 16) {
                return vec![b];
            }
        }
    }
    piece.replace('\u{2581}', " ").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_level_alphabet_round_trips_every_byte() {
        for b in 0..=255u8 {
            let c = byte_level_char(b);
            assert_eq!(byte_of_char(c), Some(b), "byte {b:#x} as {c:?}");
        }
        assert_eq!(byte_level_char(b' '), 'Ġ');
        assert_eq!(byte_level_char(b'\n'), 'Ċ');
        assert_eq!(PieceEncoding::ByteLevel.decode("ĠHelloĊ"), b" Hello\n");
        // "é" is two bytes, each spelled by its own character.
        let spelled: String = "é".bytes().map(byte_level_char).collect();
        assert_eq!(PieceEncoding::ByteLevel.decode(&spelled), "é".as_bytes());
    }

    #[test]
    fn sentencepiece_spaces_and_byte_fallback() {
        assert_eq!(PieceEncoding::SentencePiece.decode("▁Hello▁world"), b" Hello world");
        assert_eq!(PieceEncoding::SentencePiece.decode("<0x0A>"), b"\n");
        assert_eq!(PieceEncoding::SentencePiece.decode("<0xE2>"), [0xE2]);
        assert_eq!(PieceEncoding::SentencePiece.decode("<0xZZ>"), b"<0xZZ>");
        assert_eq!(PieceEncoding::Raw.decode("▁x"), "▁x".as_bytes());
    }
}
