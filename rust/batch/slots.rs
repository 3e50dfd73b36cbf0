//! Sequence ids to slots of the batch's slab, with freed slots reused, and a
//! per-slot stamp that finds a sequence named twice in one call in O(1).

use crate::int_map::IntMap;

#[derive(Debug, Default)]
pub(super) struct Slots {
    by_seq: IntMap<u64, usize>,
    free: Vec<usize>,
    /// The call that last named each slot.
    stamps: Vec<u64>,
    call: u64,
}

impl Slots {
    pub(super) fn len(&self) -> usize {
        self.by_seq.len()
    }

    #[inline]
    pub(super) fn get(&self, seq: u64) -> Option<usize> {
        self.by_seq.get(&seq).copied()
    }

    /// A slot for a new sequence: a freed one, or the next past the end.
    pub(super) fn insert(&mut self, seq: u64) -> usize {
        let slot = self.free.pop().unwrap_or(self.stamps.len());
        if slot == self.stamps.len() {
            self.stamps.push(0);
        }
        self.by_seq.insert(seq, slot);
        slot
    }

    pub(super) fn remove(&mut self, seq: u64) {
        if let Some(slot) = self.by_seq.remove(&seq) {
            self.free.push(slot);
        }
    }

    /// A stamp no slot holds yet: one per call.
    pub(super) fn next_stamp(&mut self) -> u64 {
        self.call += 1;
        self.call
    }

    /// Stamps `slot`; false if this call's stamp was already on it.
    pub(super) fn stamp(&mut self, slot: usize, stamp: u64) -> bool {
        std::mem::replace(&mut self.stamps[slot], stamp) != stamp
    }
}
