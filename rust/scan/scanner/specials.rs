//! Special tokens: which of a format's delimiters a special token's spelling is,
//! so a vocabulary binds the ids that spell them.

use super::super::matcher::Role;
use super::{Scanner, TokenRole};

impl Scanner {
    /// The role a special token's spelling gives it in this format.
    #[must_use]
    pub(crate) fn role_of_special(&self, text: &[u8]) -> TokenRole {
        self.special_groups()
            .iter()
            .find(|(texts, _)| texts.iter().any(|t| t.as_bytes() == text))
            .map_or(TokenRole::Text, |(_, role)| TokenRole::Delimiter(*role))
    }

    /// Every spelling `role_of_special` gives a role: a vocabulary binds only the
    /// ids spelled so, which it looks up by text instead of scanning every entry.
    pub(crate) fn special_spellings(&self) -> impl Iterator<Item = &[u8]> {
        self.special_groups().into_iter().flat_map(|(texts, _)| texts.iter().map(String::as_bytes))
    }

    /// The delimiters a special token may spell, with the role each gives it.
    /// Reasoning first: a spelling that is also an arm (xlam's `</think>`) closes
    /// reasoning, which arms too.
    fn special_groups(&self) -> [(&[String], Role); 7] {
        let s = &self.spec;
        let arm = s.anchor.as_ref().map(|a| a.arm.as_slice()).unwrap_or_default();
        let (think_open, think_close) =
            s.reasoning.as_ref().map_or((&[][..], &[][..]), |r| (r.open.as_slice(), r.close.as_slice()));
        [
            (think_open, Role::ReasoningOpen),
            (think_close, Role::ReasoningClose),
            (&s.section_open, Role::SectionOpen),
            (&s.section_close, Role::SectionClose),
            (&s.call_open, Role::CallOpen),
            (&s.call_close, Role::CallClose),
            (arm, Role::Arm),
        ]
    }
}
