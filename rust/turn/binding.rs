//! What every turn of one format over one vocabulary shares: the scanner, the
//! vocabulary and the ids bound to the format's delimiters. Built once (per
//! stream, or once for a whole batch), cloned into each turn as three `Arc`s.

use super::{TokenIn, TurnConfig};
use crate::error::CoreError;
use crate::scan::{Scanner, TokenRole};
use crate::vocab::Vocab;
use std::sync::Arc;

/// A format bound to a vocabulary. Immutable; cloning it is three reference counts.
#[derive(Debug, Clone)]
pub struct Binding {
    pub(super) scanner: Arc<Scanner>,
    vocab: Arc<Vocab>,
    /// The ids whose piece spells one of the format's delimiters, with its role.
    /// A handful at most, so a linear scan beats hashing on the per-token path.
    roles: Arc<[(u32, TokenRole)]>,
}

/// A token resolved against the vocabulary: its bytes, id and role.
#[derive(Debug, Clone, Copy)]
pub(super) struct Resolved<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) id: Option<u32>,
    pub(super) role: TokenRole,
}

impl Binding {
    /// Binds `config`'s format to `vocab`. A vocabulary entry that spells a
    /// delimiter exactly is the model's special token for it (tokenizers list their
    /// added tokens in the vocabulary), so it matches by id. Costs a lookup per
    /// delimiter spelling, never a pass over the vocabulary.
    #[must_use]
    pub fn new(config: &TurnConfig, vocab: Arc<Vocab>) -> Self {
        let scanner = Scanner::new(config.format.clone(), config.schemas.clone(), config.max_block_bytes);
        let mut roles: Vec<(u32, TokenRole)> = Vec::new();
        for text in scanner.special_spellings() {
            let role = scanner.role_of_special(text);
            for id in vocab.ids_spelled(text) {
                if !roles.iter().any(|&(bound, _)| bound == id) {
                    roles.push((id, role));
                }
            }
        }
        Self { scanner: Arc::new(scanner), vocab, roles: roles.into() }
    }

    #[must_use]
    pub fn format(&self) -> &crate::scan::FormatSpec {
        self.scanner.spec()
    }

    #[must_use]
    pub fn vocab(&self) -> &Arc<Vocab> {
        &self.vocab
    }

    /// The role of token `id`: a delimiter if its piece spells one, else text.
    #[must_use]
    pub fn role_of(&self, id: u32) -> TokenRole {
        self.roles.iter().find(|&&(bound, _)| bound == id).map_or(TokenRole::Text, |&(_, role)| role)
    }

    #[inline]
    pub(super) fn resolve<'a>(&'a self, token: TokenIn<'a>) -> Result<Resolved<'a>, CoreError> {
        match token {
            TokenIn::Piece(bytes) => Ok(Resolved { bytes, id: None, role: TokenRole::Text }),
            TokenIn::Id(id) => {
                let bytes = self.vocab.piece(id)?;
                // piece() succeeded, so the id is bounded by MAX_TOKEN_ID.
                let id = id as u32;
                Ok(Resolved { bytes, id: Some(id), role: self.role_of(id) })
            }
        }
    }
}
