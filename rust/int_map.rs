//! A hash map for keys that are integers the core hands out or is handed (an
//! engine's sequence ids, records' addresses): one multiply spreads them well,
//! and SipHash would cost more than the rest of the lookup.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// `HashMap` under `IntHasher`.
pub(crate) type IntMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;

/// Engines number sequences densely or at random, and addresses differ in their
/// middle bits (the low ones are alignment): multiplied by an odd constant, the
/// varying bits spread upwards, and folding the high half down spreads them over
/// the low bits the table indexes by (its tags take the top bits).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct IntHasher(u64);

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
    }

    fn write_u64(&mut self, n: u64) {
        let h = (n ^ self.0).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = h ^ (h >> 32);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}
