//! Token ids to pieces, for streams drafted as integer ids.

use crate::error::CoreError;

/// Ids above this are refused: the table is dense, and real vocabularies
/// stay far below it (the largest in use are about 260k).
pub const MAX_TOKEN_ID: u32 = (1 << 22) - 1;

/// A dense id -> piece table. Lookups are one index, on the per-token path.
#[derive(Debug, Default)]
pub struct Vocab {
    pieces: Vec<Option<Box<[u8]>>>,
}

impl Vocab {
    /// Adds or replaces the piece of `id`.
    pub fn insert(&mut self, id: u64, piece: &[u8]) -> Result<(), CoreError> {
        let idx = Self::index(id)?;
        if idx >= self.pieces.len() {
            self.pieces.resize(idx + 1, None);
        }
        self.pieces[idx] = Some(piece.into());
        Ok(())
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// The piece of `id`.
    pub fn piece(&self, id: u64) -> Result<&[u8], CoreError> {
        let idx = Self::index(id)?;
        self.pieces
            .get(idx)
            .and_then(Option::as_deref)
            .ok_or(CoreError::UnknownTokenId { id, has_vocab: !self.is_empty() })
    }

    fn index(id: u64) -> Result<usize, CoreError> {
        if id > u64::from(MAX_TOKEN_ID) {
            return Err(CoreError::TokenIdTooLarge { id, max: u64::from(MAX_TOKEN_ID) });
        }
        Ok(id as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups() {
        let mut v = Vocab::default();
        assert!(matches!(v.piece(3), Err(CoreError::UnknownTokenId { id: 3, has_vocab: false })));
        v.insert(3, b"abc").unwrap();
        assert_eq!(v.piece(3).unwrap(), b"abc");
        assert!(matches!(v.piece(2), Err(CoreError::UnknownTokenId { id: 2, has_vocab: true })));
        assert!(v.insert(u64::from(MAX_TOKEN_ID) + 1, b"x").is_err());
    }
}
