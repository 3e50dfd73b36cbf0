//! Commit keys: a keyed 128-bit hash of the turn key and the stream's tokens,
//! absorbed one token at a time so no key ever re-hashes the stream.

use crate::ledger::Drafted;
use std::fmt;

/// Version tag of the rendering; bump it whenever the hashed framing changes.
pub(crate) const KEY_PREFIX: &str = "ck1-";

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

/// A key's text: `KEY_PREFIX` and 32 lowercase hex digits.
pub(crate) const KEY_TEXT_LEN: usize = KEY_PREFIX.len() + 32;

impl CommitKey {
    /// The key's text written into a stack buffer: what `Display` writes, without
    /// the formatting machinery and the growing `String` of `to_string`, which
    /// cost a third of building a call's outcome object.
    #[must_use]
    pub fn text(&self) -> KeyText {
        let mut b = [0u8; KEY_TEXT_LEN];
        b[..KEY_PREFIX.len()].copy_from_slice(KEY_PREFIX.as_bytes());
        for (i, d) in b[KEY_PREFIX.len()..].iter_mut().enumerate() {
            let nibble = (self.0 >> (4 * (31 - i))) as u8 & 0xf;
            *d = b"0123456789abcdef"[nibble as usize];
        }
        KeyText(b)
    }
}

/// `CommitKey::text`: ASCII, so always a `str`.
#[derive(Debug, Clone, Copy)]
pub struct KeyText([u8; KEY_TEXT_LEN]);

impl KeyText {
    #[must_use]
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl fmt::Display for CommitKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text().as_str())
    }
}

/// Running hash state over a stream's tokens: SipHash-2-4 with a 128-bit output
/// (as `siphasher::sip128::SipHasher24` computes it, byte for byte), kept as only
/// what the rest of the hash needs. Small and `Copy`, so the stream keeps one per
/// undecided token and a rejection restores one saved value. Written out here
/// rather than wrapping the crate's hasher: the crate's state also holds both
/// keys and word-sized counters (72 bytes against 48), and absorbing a token id
/// through two generic writes cost twice what one five-byte write does.
#[derive(Debug, Clone, Copy)]
pub struct CommitHasher {
    v0: u64,
    v1: u64,
    v2: u64,
    v3: u64,
    /// Bytes absorbed and not yet compressed, little-endian; `ntail` of them.
    tail: u64,
    ntail: u8,
    /// The message length mod 256: all that the final block uses of it.
    len: u8,
}

/// One SipHash round over the state.
#[inline(always)] // four per compressed word, on the per-token path
#[allow(clippy::inline_always)]
fn round(v0: &mut u64, v1: &mut u64, v2: &mut u64, v3: &mut u64) {
    *v0 = v0.wrapping_add(*v1);
    *v1 = v1.rotate_left(13);
    *v1 ^= *v0;
    *v0 = v0.rotate_left(32);
    *v2 = v2.wrapping_add(*v3);
    *v3 = v3.rotate_left(16);
    *v3 ^= *v2;
    *v0 = v0.wrapping_add(*v3);
    *v3 = v3.rotate_left(21);
    *v3 ^= *v0;
    *v2 = v2.wrapping_add(*v1);
    *v1 = v1.rotate_left(17);
    *v1 ^= *v2;
    *v2 = v2.rotate_left(32);
}

impl CommitHasher {
    /// Starts the hash for a turn. Different turn keys give unrelated key spaces.
    #[must_use]
    pub fn new(turn_key: &str) -> Self {
        let mut derive = Self::with_key(&DERIVE_KEY);
        derive.write(turn_key.as_bytes());
        Self::with_key(&derive.finish128().to_le_bytes())
    }

    fn with_key(key: &[u8; 16]) -> Self {
        let (mut k0, mut k1) = ([0u8; 8], [0u8; 8]);
        k0.copy_from_slice(&key[..8]);
        k1.copy_from_slice(&key[8..]);
        let (k0, k1) = (u64::from_le_bytes(k0), u64::from_le_bytes(k1));
        Self {
            v0: k0 ^ 0x736f_6d65_7073_6575,
            // 0x646f72616e646f83 is SipHash's constant xored with 0xee: the 128-bit variant.
            v1: k1 ^ 0x646f_7261_6e64_6f83,
            v2: k0 ^ 0x6c79_6765_6e65_7261,
            v3: k1 ^ 0x7465_6462_7974_6573,
            tail: 0,
            ntail: 0,
            len: 0,
        }
    }

    #[inline]
    fn compress(&mut self, word: u64) {
        let (mut v0, mut v1, mut v2, mut v3) = (self.v0, self.v1, self.v2, self.v3);
        v3 ^= word;
        round(&mut v0, &mut v1, &mut v2, &mut v3);
        round(&mut v0, &mut v1, &mut v2, &mut v3);
        v0 ^= word;
        (self.v0, self.v1, self.v2, self.v3) = (v0, v1, v2, v3);
    }

    /// Absorbs the `size` (1 to 8) low bytes of `x`, little-endian; the bytes above are zero.
    #[inline]
    fn write_le(&mut self, x: u64, size: u32) {
        debug_assert!((1..=8).contains(&size) && (size == 8 || x >> (8 * size) == 0));
        // Only the length mod 256 is used: wrapping is the algorithm's own truncation.
        self.len = self.len.wrapping_add(size as u8);
        let filled = u32::from(self.ntail);
        self.tail |= x << (8 * filled);
        let needed = 8 - filled;
        if size < needed {
            self.ntail += size as u8;
            return;
        }
        self.compress(self.tail);
        self.ntail = (size - needed) as u8;
        self.tail = if needed < 8 { x >> (8 * needed) } else { 0 };
    }

    /// Absorbs `bytes`, a word at a time.
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in words.by_ref() {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            self.write_le(u64::from_le_bytes(b), 8);
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.write_le(u64::from_le_bytes(b), rest.len() as u32);
        }
    }

    /// The 128-bit hash of what was absorbed.
    fn finish128(&self) -> u128 {
        let (mut v0, mut v1, mut v2, mut v3) = (self.v0, self.v1, self.v2, self.v3);
        let b = (u64::from(self.len) << 56) | self.tail;
        v3 ^= b;
        round(&mut v0, &mut v1, &mut v2, &mut v3);
        round(&mut v0, &mut v1, &mut v2, &mut v3);
        v0 ^= b;
        v2 ^= 0xee;
        for _ in 0..4 {
            round(&mut v0, &mut v1, &mut v2, &mut v3);
        }
        let h1 = v0 ^ v1 ^ v2 ^ v3;
        v1 ^= 0xdd;
        for _ in 0..4 {
            round(&mut v0, &mut v1, &mut v2, &mut v3);
        }
        let h2 = v0 ^ v1 ^ v2 ^ v3;
        u128::from(h1) | (u128::from(h2) << 64)
    }

    /// Absorbs a text piece. Length-prefixed, so `"ab"+"c"` and `"a"+"bc"` differ:
    /// the key is a function of the tokens, not only of their text.
    pub fn absorb_piece(&mut self, piece: &[u8]) {
        self.write_le(u64::from(TAG_PIECE), 1);
        self.write_le(piece.len() as u64, 8);
        self.write(piece);
    }

    /// Absorbs a token given by id: its tag and the id's four bytes, in one write.
    #[inline]
    pub fn absorb_id(&mut self, id: u32) {
        self.write_le(u64::from(TAG_ID) | u64::from(id) << 8, 5);
    }

    /// Absorbs `tokens` in order, as `absorb_id` or `absorb_piece` of each would.
    /// A key absorbs every token since the last key, a run of mostly ids: their
    /// five bytes are packed into words here, the state held in locals, rather
    /// than through `write_le`'s bookkeeping per token.
    pub(crate) fn absorb_all<'a>(&mut self, tokens: impl Iterator<Item = Drafted<'a>>) {
        // The state in locals, never behind a reference: a `&mut` to it (a piece's
        // write) kept it in memory, loaded and stored around every word.
        let (mut v0, mut v1, mut v2, mut v3, mut len) = (self.v0, self.v1, self.v2, self.v3, self.len);
        // Bytes not yet compressed, little-endian: `filled` (at most 7) of them. All in
        // u64: a variable u128 shift per token cost more than the packing itself.
        let (mut pending, mut filled) = (self.tail, u32::from(self.ntail));
        for t in tokens {
            match t {
                Drafted::Id(id) => {
                    let x = u64::from(TAG_ID) | u64::from(id) << 8;
                    // The bits shifted out are the ones the next word starts with.
                    pending |= x << (8 * filled);
                    len = len.wrapping_add(5);
                    if filled >= 3 {
                        v3 ^= pending;
                        round(&mut v0, &mut v1, &mut v2, &mut v3);
                        round(&mut v0, &mut v1, &mut v2, &mut v3);
                        v0 ^= pending;
                        // 8 - filled is 1 to 5: the bytes of x that went into the word.
                        pending = x >> (8 * (8 - filled));
                        filled -= 3;
                    } else {
                        filled += 5;
                    }
                }
                Drafted::Piece(piece) => {
                    let mut h = Self { v0, v1, v2, v3, tail: pending, ntail: filled as u8, len };
                    h.absorb_piece(piece);
                    (v0, v1, v2, v3, len) = (h.v0, h.v1, h.v2, h.v3, h.len);
                    (pending, filled) = (h.tail, u32::from(h.ntail));
                }
            }
        }
        *self = Self { v0, v1, v2, v3, tail: pending, ntail: filled as u8, len };
    }

    /// Absorbs a token: by id when it has one, else by its piece.
    #[inline]
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
        let mut h = *self;
        h.write_le(u64::from(TAG_BLOCK) | u64::from(ordinal) << 8, 5);
        CommitKey(h.finish128())
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

    /// The old framing through the `siphasher` crate: keys must stay what it gives.
    struct Reference(siphasher::sip128::SipHasher24);

    impl Reference {
        fn new(turn: &str) -> Self {
            use siphasher::sip128::{Hasher128, SipHasher24};
            use std::hash::Hasher;
            let mut derive = SipHasher24::new_with_key(&DERIVE_KEY);
            derive.write(turn.as_bytes());
            Self(SipHasher24::new_with_key(&derive.finish128().as_u128().to_le_bytes()))
        }

        fn absorb(&mut self, piece: &[u8], id: Option<u32>) {
            use std::hash::Hasher;
            if let Some(id) = id {
                self.0.write_u8(TAG_ID);
                self.0.write_u32(id);
            } else {
                self.0.write_u8(TAG_PIECE);
                self.0.write_u64(piece.len() as u64);
                self.0.write(piece);
            }
        }

        fn key(&self, ordinal: u32) -> u128 {
            use siphasher::sip128::Hasher128;
            use std::hash::Hasher;
            let mut h = self.0;
            h.write_u8(TAG_BLOCK);
            h.write_u32(ordinal);
            h.finish128().as_u128()
        }
    }

    #[test]
    fn keys_equal_the_siphasher_reference() {
        // A small deterministic generator: pieces of every length across word
        // boundaries, ids, and keys taken at every point.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for turn in ["", "t", "turn-key-longer-than-a-word", "ü"] {
            let (mut ours, mut theirs) = (CommitHasher::new(turn), Reference::new(turn));
            assert_eq!(ours.key(0).0, theirs.key(0));
            for _ in 0..400 {
                let r = next();
                let piece: Vec<u8> = (0..r % 21).map(|i| (r >> (i % 8 * 8)) as u8).collect();
                let id = (r % 3 == 0).then_some((r >> 20) as u32);
                ours.absorb(&piece, id);
                theirs.absorb(&piece, id);
                let ordinal = (r >> 40) as u32 % 4;
                assert_eq!(ours.key(ordinal).0, theirs.key(ordinal), "{turn:?}");
            }
        }
    }

    #[test]
    fn absorbing_a_run_equals_absorbing_each_token() {
        // Runs of ids and pieces from every tail state, against the reference.
        let mut rng = crate::test_rng::Rng(0x2545_f491_4f6c_dd1d);
        for _ in 0..300 {
            let (mut ours, mut theirs) = (CommitHasher::new("t"), Reference::new("t"));
            let prefix: Vec<u8> = (0..rng.below(9)).map(|_| rng.below(256) as u8).collect();
            ours.absorb_piece(&prefix);
            theirs.absorb(&prefix, None);
            let mut pieces: Vec<Vec<u8>> = Vec::new();
            let mut run: Vec<(usize, Option<u32>)> = Vec::new();
            for _ in 0..rng.below(24) {
                let piece: Vec<u8> = (0..rng.below(11)).map(|_| rng.below(256) as u8).collect();
                let id = (rng.below(3) > 0).then(|| rng.below(usize::MAX) as u32);
                pieces.push(piece);
                run.push((pieces.len() - 1, id));
            }
            let drafted = run.iter().map(|&(p, id)| id.map_or(Drafted::Piece(&pieces[p]), Drafted::Id));
            ours.absorb_all(drafted);
            for &(p, id) in &run {
                theirs.absorb(&pieces[p], id);
            }
            assert_eq!(ours.key(0).0, theirs.key(0), "{run:?}");
        }
    }

    #[test]
    fn renders_versioned_hex() {
        let s = key_of("t", &["a"]).to_string();
        assert!(s.starts_with(KEY_PREFIX));
        assert_eq!(s.len(), KEY_PREFIX.len() + 32);
        for k in [0, 1, 0xabc, u128::MAX, u128::MAX / 3, key_of("t", &["a"]).0] {
            assert_eq!(CommitKey(k).to_string(), format!("{KEY_PREFIX}{k:032x}"), "the text is the padded hex");
        }
    }
}
