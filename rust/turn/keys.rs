//! Commit keys: a keyed 128-bit hash of the turn key and the stream's tokens,
//! absorbed one token at a time so no key ever re-hashes the stream.

use siphasher::sip128::{Hasher128, SipHasher24};
use std::fmt;
use std::hash::Hasher;

/// Version tag of the rendering; bump it whenever the hashed framing changes.
pub const KEY_PREFIX: &str = "ck1-";

/// The fixed key that derives a turn's hashing key from its turn key. It is
/// public: commit keys separate turns and streams, they are not secrets.
const DERIVE_KEY: [u8; 16] = *b"inert/commit/v1\0";

const TAG_PIECE: u8 = 0x01;
const TAG_ID: u8 = 0x02;
const TAG_BLOCK: u8 = 0x03;

/// A block's commit key: the same value for dispatch, journal, reconciliation
/// and the idempotency key given to `idempotent` tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CommitKey(pub u128);

impl fmt::Display for CommitKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{KEY_PREFIX}{:032x}", self.0)
    }
}

/// Running hash state over a stream's tokens. Small and `Copy`, so the stream
/// keeps one per pending token and a rejection restores one saved value.
#[derive(Debug, Clone, Copy)]
pub struct CommitHasher(SipHasher24);

impl CommitHasher {
    /// Starts the hash for a turn. Different turn keys give unrelated key spaces.
    #[must_use]
    pub fn new(turn_key: &str) -> Self {
        let mut derive = SipHasher24::new_with_key(&DERIVE_KEY);
        derive.write(turn_key.as_bytes());
        let k = derive.finish128().as_u128().to_le_bytes();
        Self(SipHasher24::new_with_key(&k))
    }

    /// Absorbs a text piece. Length-prefixed, so `"ab"+"c"` and `"a"+"bc"` differ:
    /// the key is a function of the tokens, not only of their text.
    pub fn absorb_piece(&mut self, piece: &[u8]) {
        self.0.write_u8(TAG_PIECE);
        self.0.write_u64(piece.len() as u64);
        self.0.write(piece);
    }

    /// Absorbs a token given by id.
    pub fn absorb_id(&mut self, id: u32) {
        self.0.write_u8(TAG_ID);
        self.0.write_u32(id);
    }

    /// Absorbs a token: by id when it has one, else by its piece.
    pub fn absorb(&mut self, piece: &[u8], id: Option<u32>) {
        match id {
            Some(id) => self.absorb_id(id),
            None => self.absorb_piece(piece),
        }
    }

    /// The key of the `ordinal`-th call (from 0) that ends in the last token
    /// absorbed: one token can end several calls (blocks, or the calls of one
    /// block), and each needs its own key. Malformed blocks count among them.
    #[must_use]
    pub fn key(&self, ordinal: u32) -> CommitKey {
        let mut h = self.0;
        h.write_u8(TAG_BLOCK);
        h.write_u32(ordinal);
        CommitKey(h.finish128().as_u128())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_of(turn: &str, pieces: &[&str]) -> CommitKey {
        let mut h = CommitHasher::new(turn);
        for p in pieces {
            h.absorb_piece(p.as_bytes());
        }
        h.key(0)
    }

    #[test]
    fn pure_function_of_turn_and_tokens() {
        assert_eq!(key_of("t", &["a", "b"]), key_of("t", &["a", "b"]));
        assert_ne!(key_of("t", &["a", "b"]), key_of("u", &["a", "b"]));
        assert_ne!(key_of("t", &["ab"]), key_of("t", &["a", "b"]));
        assert_ne!(key_of("t", &["a"]), key_of("t", &["a", "b"]));
    }

    #[test]
    fn ids_and_pieces_are_framed_apart() {
        let mut a = CommitHasher::new("t");
        a.absorb_id(0x0403_0201);
        let mut b = CommitHasher::new("t");
        b.absorb_piece(&[1, 2, 3, 4]);
        assert_ne!(a.key(0), b.key(0));
    }

    #[test]
    fn ids_are_part_of_the_key() {
        let ids = |ids: &[u32]| {
            let mut h = CommitHasher::new("t");
            for &id in ids {
                h.absorb(b"same piece", Some(id));
            }
            h.key(0)
        };
        assert_eq!(ids(&[7, 8]), ids(&[7, 8]));
        assert_ne!(ids(&[7, 8]), ids(&[7, 9]), "a key is a function of the ids drafted, not of the pieces");
        assert_ne!(ids(&[7]), ids(&[7, 8]));
        assert_ne!(ids(&[7]), CommitHasher::new("t").key(0));
    }

    #[test]
    fn copy_resumes_where_it_left() {
        let mut h = CommitHasher::new("t");
        h.absorb_piece(b"x");
        let saved = h;
        h.absorb_piece(b"y");
        let mut again = saved;
        again.absorb_piece(b"y");
        assert_eq!(h.key(0), again.key(0));
        assert_ne!(h.key(0), h.key(1), "blocks ending in one token get distinct keys");
    }

    #[test]
    fn renders_versioned_hex() {
        let s = key_of("t", &["a"]).to_string();
        assert!(s.starts_with(KEY_PREFIX));
        assert_eq!(s.len(), KEY_PREFIX.len() + 32);
    }
}
