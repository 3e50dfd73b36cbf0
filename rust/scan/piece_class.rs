//! What a piece's bytes let the scanner skip, as eight flags: a token whose
//! piece holds no byte that could change the scanner's state in its mode is
//! passed over. The flags of a piece are the AND of its bytes' flags, so they
//! are computed once per vocabulary and format for every id (`Vocab::fold_bytes`)
//! and a quiet token is judged by one byte, not by a loop over its bytes.

/// The flags of one piece (or of one byte): which quiet paths it may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PieceClass(pub(crate) u8);

impl PieceClass {
    /// From the start of the delimiter matcher outside blocks, no byte changes it.
    pub(crate) const RESTS_OUTSIDE: u8 = 1;
    /// Likewise for the matcher inside a calls section.
    pub(crate) const RESTS_SECTION: u8 = 1 << 1;
    /// Likewise for the matcher inside reasoning.
    pub(crate) const RESTS_REASONING: u8 = 1 << 2;
    /// In a body, outside strings: no quote or bracket (`Lexer::quiet`).
    pub(crate) const BODY_QUIET: u8 = 1 << 3;
    /// `BODY_QUIET`, and the closer's matcher stays at its start.
    pub(crate) const BODY_QUIET_AT_REST: u8 = 1 << 4;
    /// Inside a `"` string: no `"` and no backslash.
    pub(crate) const IN_DOUBLE_QUOTES: u8 = 1 << 5;
    /// Inside a `'` string: no `'` and no backslash.
    pub(crate) const IN_SINGLE_QUOTES: u8 = 1 << 6;
    /// ASCII whitespace only.
    pub(crate) const BLANK: u8 = 1 << 7;

    #[inline]
    pub(crate) fn has(self, flag: u8) -> bool {
        self.0 & flag != 0
    }
}

/// The flags of each byte value: a scanner's, fixed when it is built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ByteClasses(pub(crate) [u8; 256]);

impl ByteClasses {
    /// The flags of `bytes`: those every byte has (all of them for no byte).
    #[inline]
    pub(crate) fn of(&self, bytes: &[u8]) -> PieceClass {
        PieceClass(bytes.iter().fold(u8::MAX, |flags, &b| flags & self.0[usize::from(b)]))
    }
}
