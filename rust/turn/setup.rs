//! What every turn of one format over one vocabulary shares: the scanner, the
//! vocabulary and the ids bound to the format's delimiters. Built once (per
//! stream, or once for a whole batch), cloned into each turn as three `Arc`s.

use super::{TokenIn, TurnConfig};
use crate::error::CoreError;
use crate::ledger::Drafted;
use crate::scan::{Role, Scanner, TokenRole};
use crate::vocab::Vocab;
use std::sync::Arc;

/// A format bound to a vocabulary (named `Setup`, not "binding", which here means the pyo3
/// layer in `py/`). Immutable; cloning it is three reference counts.
#[derive(Debug, Clone)]
pub struct Setup {
    pub(super) scanner: Arc<Scanner>,
    vocab: Arc<Vocab>,
    /// The ids whose piece spells one of the format's delimiters, with its role, by id:
    /// searched by halves (a handful in real vocabularies; a vocabulary that spelled a
    /// delimiter with 64k ids, scanned one by one, took 100 µs a token).
    roles: Arc<[(u32, TokenRole)]>,
    /// The smallest and largest of those ids: most tokens fall outside and skip the scan.
    role_ids: (u32, u32),
}

/// A token resolved against the vocabulary: its bytes, id and role.
#[derive(Debug, Clone, Copy)]
pub(super) struct Resolved<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) id: Option<u32>,
    pub(super) role: TokenRole,
}

impl Resolved<'_> {
    /// What the ledger keeps of it: the id, or the piece given as text.
    #[inline]
    pub(super) fn drafted(&self) -> Drafted<'_> {
        self.id.map_or(Drafted::Piece(self.bytes), Drafted::Id)
    }
}

impl Setup {
    /// The piece of a token the ledger holds.
    pub(super) fn piece_of<'a>(&'a self, token: Drafted<'a>) -> &'a [u8] {
        match token {
            Drafted::Piece(piece) => piece,
            // Drafted ids resolved when they were drafted; the vocabulary never changes.
            Drafted::Id(id) => self.vocab.piece(u64::from(id)).unwrap_or_default(),
        }
    }

    /// Binds `config`'s format to `vocab`. A vocabulary entry that spells a
    /// delimiter exactly is the model's special token for it (tokenizers list their
    /// added tokens in the vocabulary), so it matches by id. Costs a lookup per
    /// delimiter spelling, never a pass over the vocabulary.
    #[must_use]
    pub fn new(config: &TurnConfig, vocab: Arc<Vocab>) -> Self {
        let mut scanner = Scanner::new(config.format.clone(), config.schemas.clone(), config.max_block_bytes);
        scanner.start_in_reasoning(config.in_reasoning);
        if config.stream {
            scanner.record_shifts();
        }
        let mut roles: Vec<(u32, TokenRole)> = Vec::new();
        for text in scanner.special_spellings() {
            let role = scanner.role_of_special(text);
            roles.extend(vocab.ids_spelled(text).map(|id| (id, role)));
        }
        // By id; an id that spells two delimiters keeps the first one's role (a stable sort).
        roles.sort_by_key(|&(id, _)| id);
        roles.dedup_by_key(|&mut (id, _)| id);
        if roles.iter().any(|&(_, role)| role == TokenRole::Delimiter(Role::CallClose)) {
            scanner.bind_closer_by_id();
        }
        let role_ids = roles.iter().fold((u32::MAX, 0), |(lo, hi), &(id, _)| (lo.min(id), hi.max(id)));
        Self { scanner: Arc::new(scanner), vocab, roles: roles.into(), role_ids }
    }

    #[must_use]
    pub fn format(&self) -> &crate::scan::FormatSpec {
        self.scanner.spec()
    }

    #[must_use]
    pub fn vocab(&self) -> &Arc<Vocab> {
        &self.vocab
    }

    /// Whether turns of this setup stream their output (`TurnConfig::stream`).
    #[must_use]
    pub fn streams(&self) -> bool {
        self.scanner.records_shifts()
    }

    /// The role of token `id`: a delimiter if its piece spells one, else text.
    #[must_use]
    #[inline]
    pub fn role_of(&self, id: u32) -> TokenRole {
        if self.plain_text(id) {
            return TokenRole::Text;
        }
        self.roles.binary_search_by_key(&id, |&(bound, _)| bound).map_or(TokenRole::Text, |i| self.roles[i].1)
    }

    /// Whether token `id` is text for certain: no delimiter id lies at or around it.
    /// Nearly every id; one compare pair, where `role_of` would search the bound ids.
    #[inline]
    pub(super) fn plain_text(&self, id: u32) -> bool {
        id < self.role_ids.0 || id > self.role_ids.1
    }

    #[inline]
    pub(super) fn resolve<'a>(&'a self, token: TokenIn<'a>) -> Result<Resolved<'a>, CoreError> {
        match token {
            TokenIn::Piece(bytes) => Ok(Resolved { bytes, id: None, role: TokenRole::Text }),
            TokenIn::Id(id) => {
                let bytes = self.vocab.piece(id)?;
                // piece() succeeded, so the id is bounded by MAX_TOKEN_ID.
                Ok(Resolved { bytes, id: Some(id as u32), role: self.id_role(id as u32) })
            }
        }
    }

    /// `resolve` of an id below the vocabulary's `dense_below`, which always resolves.
    #[inline]
    pub(super) fn resolve_below_dense(&self, id: u32) -> Resolved<'_> {
        Resolved { bytes: self.vocab.piece_below_dense(id), id: Some(id), role: self.id_role(id) }
    }

    /// The role of a token given by id: an ordinary one is text that knows it is no special token.
    #[inline]
    fn id_role(&self, id: u32) -> TokenRole {
        match self.role_of(id) {
            TokenRole::Text => TokenRole::IdText,
            role => role,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::formats::NAMES;
    use crate::scan::Schemas;
    use crate::vocab::VocabBuilder;

    /// Binding looks up only the format's delimiter spellings; it must bind exactly
    /// what asking `role_of_special` of every entry would. The vocabulary holds every
    /// format's spellings (and near misses, and reasoning tags), so a spelling that
    /// `role_of_special` learns without `special_spellings` fails here.
    #[test]
    fn binding_by_lookup_equals_a_pass_over_every_entry() {
        let mut texts: Vec<Vec<u8>> = vec![b"<think>".to_vec(), b"</think>".to_vec(), b"x".to_vec(), Vec::new()];
        for name in NAMES {
            let scanner = Scanner::new(crate::scan::formats::builtin(name).unwrap(), Schemas::default(), 1 << 20);
            for s in scanner.special_spellings() {
                texts.extend([s.to_vec(), s[..s.len() - 1].to_vec(), [s, b" "].concat()]);
            }
        }
        let mut b = VocabBuilder::default();
        for (id, t) in (0u64..).zip(&texts) {
            b.insert(id, t).unwrap();
        }
        let vocab = Arc::new(b.build());
        for name in NAMES {
            let config = TurnConfig::builtin(name, "", 1 << 20).unwrap();
            let setup = Setup::new(&config, vocab.clone());
            for (id, t) in (0u32..).zip(&texts) {
                assert_eq!(
                    setup.role_of(id),
                    setup.scanner.role_of_special(t),
                    "{name}: {:?}",
                    String::from_utf8_lossy(t)
                );
            }
        }
    }

    #[test]
    fn many_ids_spelling_delimiters_are_bound_and_found_by_halves() {
        let pieces: [&[u8]; 3] = [b"<tool_call>", b"x", b"</tool_call>"];
        let mut b = VocabBuilder::default();
        for id in 0..3000u64 {
            b.insert(id, pieces[id as usize % 3]).unwrap();
        }
        let setup = Setup::new(&TurnConfig::builtin("hermes", "", 1 << 20).unwrap(), Arc::new(b.build()));
        assert_eq!(setup.roles.len(), 2000);
        for id in 0..3000u32 {
            assert_eq!(setup.role_of(id), setup.scanner.role_of_special(pieces[id as usize % 3]), "id {id}");
        }
    }
}
