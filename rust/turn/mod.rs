//! One sequence's turn: tokens are drafted into the undecided window, the
//! verifier decides them, and each step reports typed outcomes.
//!
//! - `window`: the live text and the scanner state saved after each undecided token;
//! - `blocks`: the blocks not final yet and their lifecycle, folded into outcomes;
//! - `keys`: commit keys, absorbed one token at a time;
//! - `key_cursor`: the live stream's key hash, absorbed only when a key needs it;
//! - `outcome`: what a step reports;
//! - `setup`: what every turn of one format over one vocabulary shares;
//! - `tree`: token trees (EAGLE, Medusa) drafted in one step, verified along one path.
//!
//! "Pending" has three meanings in this domain, and three names here: the
//! *undecided* tokens (drafted, not verified: the ledger owns that window), a
//! block *awaiting confirmation* (structurally complete, its end not yet
//! confirmed by a following token), and a call *closed* but not *committed*.

mod blocks;
mod key_cursor;
pub(crate) mod keys;
mod outcome;
mod setup;
mod stream;
mod tree;
mod window;

pub use keys::CommitHasher;
pub use outcome::{CallRecord, MalformedRecord, Outcome, ReasoningRecord};
pub use setup::Setup;
pub use stream::{tool_call_id_prefix, Released, ToolCallDelta};

use crate::error::CoreError;
use crate::ledger::{Drafted, Ledger, TokenState};
use crate::scan::{rests_on, BlockBody, FormatSpec, ScanEvent, ScanState, Scanner, Schemas};
use crate::vocab::{Vocab, VocabBuilder};
use blocks::{BlockTable, First, Unread};
use setup::Resolved;
use std::sync::Arc;
use stream::Streamer;
use tree::Tree;
use window::{Checkpoint, Window};

/// Tokens a new turn makes room for before its buffers grow (about 3 KB). A
/// buffer that starts empty and doubles reallocates and copies seven times
/// on its way to a few hundred tokens, and a batch of fresh sequences spent
/// about a sixth of its first steps doing so; an idle sequence costs the room.
const START_TOKENS: usize = 128;

/// Undecided tokens a new turn makes room for: a draft window of 8 and its
/// tree's depth (EAGLE drafts up to 16 deep).
const START_WINDOW: usize = 16;

/// The longest window of ids `Turn::draft_into` copies onto the stack to draft
/// as a batch's rows are (`Turn::draft_dense`); a longer one takes the general way.
const DENSE_WINDOW: usize = 32;

/// A token as the caller hands it in.
#[derive(Debug, Clone, Copy)]
pub enum TokenIn<'a> {
    Piece(&'a [u8]),
    Id(u64),
}

/// Configuration fixed when a turn starts. The format's `reasoning` says which
/// reasoning sections the turn has (its own by default; callers may replace
/// them or turn them off).
#[derive(Debug)]
pub struct TurnConfig {
    pub format: FormatSpec,
    pub schemas: Schemas,
    pub turn_key: String,
    pub max_block_bytes: usize,
    /// The prompt opened a reasoning section (Qwen3-Thinking, R1, MiniMax M2
    /// templates): the output starts inside it.
    pub in_reasoning: bool,
    /// Streaming output: release content, reasoning and tool-call deltas from
    /// accepted tokens (`Turn::take_released`).
    pub stream: bool,
}

impl TurnConfig {
    /// A turn of a built-in format with no schemas.
    pub fn builtin(name: &str, turn_key: &str, max_block_bytes: usize) -> Result<Self, CoreError> {
        Ok(Self {
            format: crate::scan::formats::builtin(name)?,
            schemas: Schemas::default(),
            turn_key: turn_key.to_owned(),
            max_block_bytes,
            in_reasoning: false,
            stream: false,
        })
    }

    /// What is wrong with this configuration, if anything: a turn cannot start
    /// inside reasoning it has no delimiters for.
    pub fn check(&self) -> Result<(), CoreError> {
        if self.in_reasoning && self.format.reasoning.is_none() {
            return Err(CoreError::InReasoningWithoutReasoning);
        }
        Ok(())
    }
}

/// One turn of one sequence. Not shared between threads: one per stream.
#[derive(Debug)]
pub struct Turn {
    setup: Setup,
    ledger: Ledger,
    window: Window,
    blocks: BlockTable,
    scan_out: Vec<ScanEvent>,
    /// A drafted tree awaiting `verify_path`.
    tree: Option<Box<Tree>>,
    /// Streaming output, when the setup asks for it.
    stream: Option<Box<Streamer>>,
    early: EarlyReads,
    finished: bool,
}

/// How much a draft may read of the bodies of blocks that end in it.
///
/// A block's calls are read from its body when it ends, so reads can run early;
/// but the body may be long, and a closer the verifier rejects would have it
/// read whole again on every draft that proposes it: a step would cost the
/// block, and a turn the square of it. A draft reads early at most the bytes it
/// drafted plus a slack (which keeps every ordinary block early); a body it
/// cannot afford is left unread and read once, when the verifier accepts its
/// end: its calls are announced then, and their reads run then.
#[derive(Debug, Clone, Copy)]
struct EarlyReads {
    /// Where the draft began in the live text: what it drafted is the text after.
    from: usize,
    /// Bytes of bodies read early in this draft.
    read: usize,
    slack: usize,
}

impl Default for EarlyReads {
    fn default() -> Self {
        Self { from: 0, read: 0, slack: 16 * 1024 }
    }
}

impl EarlyReads {
    /// A draft begins with the live text `len` bytes long.
    fn start(&mut self, len: usize) {
        (self.from, self.read) = (len, 0);
    }

    /// Whether a body of `len` bytes may be read now, the live text `end` bytes
    /// long; counts it if so.
    fn allow(&mut self, len: usize, end: usize) -> bool {
        let budget = (end.saturating_sub(self.from) + self.slack).saturating_sub(self.read);
        if len > budget {
            return false;
        }
        self.read += len;
        true
    }
}

impl Turn {
    /// Starts a turn. `vocab` maps ids to pieces; `special` maps ids to the
    /// spelling of special tokens, which bind to delimiters they spell.
    pub fn new(
        config: &TurnConfig,
        vocab: impl IntoIterator<Item = (u64, Vec<u8>)>,
        special: impl IntoIterator<Item = (u64, Vec<u8>)>,
    ) -> Result<Self, CoreError> {
        config.check()?;
        let mut table = VocabBuilder::default();
        for (id, piece) in vocab {
            table.insert(id, &piece)?;
        }
        for (id, text) in special {
            table.insert_special(id, &text)?;
        }
        Ok(Self::with_vocab(config, Arc::new(table.build())))
    }

    /// Starts a turn over a shared vocabulary: O(1) in its size. The caller has
    /// checked `config` (`TurnConfig::check`).
    #[must_use]
    pub fn with_vocab(config: &TurnConfig, vocab: Arc<Vocab>) -> Self {
        Self::start(&Setup::new(config, vocab), &config.turn_key)
    }

    /// Starts a turn of `setup`'s format over its vocabulary: a few allocations,
    /// nothing proportional to the vocabulary or the format.
    #[must_use]
    pub fn start(setup: &Setup, turn_key: &str) -> Self {
        Self::start_at(setup, turn_key, setup.scanner.initial())
    }

    /// `start`, inside the reasoning section the prompt opened when
    /// `in_reasoning` (a chat template that opens `<think>` for this request).
    pub fn start_in_reasoning(setup: &Setup, turn_key: &str, in_reasoning: bool) -> Result<Self, CoreError> {
        if in_reasoning && setup.format().reasoning.is_none() {
            return Err(CoreError::InReasoningWithoutReasoning);
        }
        Ok(Self::start_at(setup, turn_key, setup.scanner.initial_in(in_reasoning)))
    }

    /// A turn that holds nothing and allocates nothing: what a batch leaves in a
    /// finished sequence's slot, so the finished turn's buffers are freed at once.
    pub(crate) fn vacant(setup: &Setup) -> Self {
        Self::sized(setup, "", setup.scanner.initial(), 0, 0, false)
    }

    fn start_at(setup: &Setup, turn_key: &str, scan: ScanState) -> Self {
        Self::sized(setup, turn_key, scan, START_TOKENS, START_WINDOW, setup.streams())
    }

    /// A turn with room for `tokens` tokens and a draft window of `window` before a
    /// buffer grows, streaming its output when `streams`.
    fn sized(setup: &Setup, turn_key: &str, scan: ScanState, tokens: usize, window: usize, streams: bool) -> Self {
        let base = Checkpoint { scan, ends: 0 };
        let stream = streams.then(|| {
            let spec = setup.format();
            Box::new(Streamer::new(&spec.body, &spec.name_chars, turn_key, scan.class()))
        });
        Self {
            setup: setup.clone(),
            ledger: Ledger::with_capacity(tokens),
            window: Window::new(base, turn_key, tokens, window),
            blocks: BlockTable::default(),
            scan_out: Vec::new(),
            tree: None,
            stream,
            early: EarlyReads::default(),
            finished: false,
        }
    }

    #[must_use]
    pub fn format(&self) -> &FormatSpec {
        self.setup.scanner.spec()
    }

    /// Sets the bytes a draft may read early beyond what it drafted (`EarlyReads`):
    /// tests set 0 so that blocks reaching before a draft leave their bodies unread.
    #[cfg(test)]
    pub(crate) fn set_early_slack(&mut self, slack: usize) {
        self.early.slack = slack;
    }

    /// Tokens drafted and not yet verified: the undecided window.
    #[must_use]
    pub fn undecided_len(&self) -> usize {
        self.ledger.undecided()
    }

    /// Tokens accepted so far (the correction tokens included).
    #[must_use]
    pub fn accepted_len(&self) -> usize {
        self.window.accepted_len()
    }

    /// Every token ever drafted in this turn, rejected ones included.
    #[must_use]
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    #[must_use]
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// The accepted text so far.
    #[must_use]
    pub fn accepted_text(&self) -> &[u8] {
        self.window.accepted_text()
    }

    /// The live text: accepted, then undecided.
    #[must_use]
    pub fn live_text(&self) -> &[u8] {
        self.window.text()
    }

    /// Bytes the turn's per-token buffers have room for (tests).
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> usize {
        self.ledger.held_bytes() + self.window.held_bytes()
    }

    /// The piece of ledger position `i` (below `ledger().len()`).
    #[must_use]
    pub fn ledger_piece(&self, i: usize) -> &[u8] {
        self.setup.piece_of(self.ledger.token(i))
    }

    /// The state of ledger position `i`.
    #[must_use]
    pub fn token_state(&self, i: usize) -> Option<TokenState> {
        (i < self.ledger.len()).then(|| self.ledger.state(i))
    }

    /// Checks every token before anything changes, so a bad one leaves the turn as it was.
    /// `push` resolves each token again: for pieces that is free, for ids one index, and
    /// it is cheaper than collecting the resolved tokens (measured: 0.70 vs 0.92 us a step).
    pub fn check_draft<'a>(&self, tokens: impl ExactSizeIterator<Item = TokenIn<'a>>) -> Result<(), CoreError> {
        self.check_open()?;
        if self.tree.is_some() {
            return Err(CoreError::TreePending);
        }
        self.check_room(tokens)
    }

    /// `check_draft` of `count` ids that the caller found below the vocabulary's
    /// `dense_below`, so each resolves: nothing is resolved here. The room is
    /// bounded by the longest piece, and counted token by token (`tokens`) only
    /// when that bound does not fit. A batch checks every row before drafting any,
    /// and resolving each id twice cost a tenth of its step.
    pub(crate) fn check_draft_dense<'a>(
        &self,
        count: usize,
        tokens: impl ExactSizeIterator<Item = TokenIn<'a>>,
    ) -> Result<(), CoreError> {
        self.check_open()?;
        if self.tree.is_some() {
            return Err(CoreError::TreePending);
        }
        self.check_room_dense(count, tokens)
    }

    /// `check_room` of `count` ids that each resolve (see `check_draft_dense`).
    fn check_room_dense<'a>(
        &self,
        count: usize,
        tokens: impl ExactSizeIterator<Item = TokenIn<'a>>,
    ) -> Result<(), CoreError> {
        let bound =
            self.ledger.byte_len().saturating_add((count as u64).saturating_mul(self.setup.vocab().longest_piece()));
        if u32::try_from(bound).is_ok() && u32::try_from(self.ledger.len() + count).is_ok() {
            return Ok(());
        }
        self.check_room(tokens)
    }

    fn check_open(&self) -> Result<(), CoreError> {
        if self.finished {
            return Err(CoreError::Finished);
        }
        Ok(())
    }

    /// Whether `tokens` resolve and fit in the turn's 32-bit offsets.
    fn check_room<'a>(&self, tokens: impl ExactSizeIterator<Item = TokenIn<'a>>) -> Result<(), CoreError> {
        let count = tokens.len();
        // The ledger counts the bytes of rejected tokens too: the larger of the two texts.
        let mut total = self.ledger.byte_len();
        for t in tokens {
            total += self.setup.resolve(t)?.bytes.len() as u64;
        }
        if total > u64::from(u32::MAX) || self.ledger.len() + count > u32::MAX as usize {
            return Err(CoreError::StreamTooLong);
        }
        Ok(())
    }

    /// Appends a draft window (extending any undecided one) and returns the
    /// outcomes its tokens caused. Cost is proportional to the window.
    pub fn draft(&mut self, tokens: &[TokenIn<'_>]) -> Result<Vec<Outcome>, CoreError> {
        let mut out = Vec::new();
        self.draft_into(tokens, &mut out)?;
        Ok(out)
    }

    /// `draft`, appending its outcomes to `out` (a batch collects every sequence's in one).
    /// A window of ids below the vocabulary's `dense_below` (an engine's, nearly always)
    /// goes the way a batch's rows do (`draft_dense`).
    pub fn draft_into(&mut self, tokens: &[TokenIn<'_>], out: &mut Vec<Outcome>) -> Result<(), CoreError> {
        let dense = self.setup.vocab().dense_below();
        let mut ids = [0u64; DENSE_WINDOW];
        let all_dense = tokens.len() <= DENSE_WINDOW
            && tokens.iter().zip(&mut ids).all(|(t, slot)| match *t {
                TokenIn::Id(id) if id < dense => {
                    *slot = id;
                    true
                }
                _ => false,
            });
        if all_dense {
            self.check_draft_dense(tokens.len(), tokens.iter().copied())?;
            self.draft_dense(&ids[..tokens.len()], out);
            return Ok(());
        }
        self.check_draft(tokens.iter().copied())?;
        self.draft_checked(tokens.iter().copied(), out);
        Ok(())
    }

    /// `draft` of tokens `check_draft` accepted. One loop over the window, the
    /// state after each token carried in a local from one token to the next.
    pub(crate) fn draft_checked<'a>(&mut self, tokens: impl Iterator<Item = TokenIn<'a>>, out: &mut Vec<Outcome>) {
        self.early.start(self.window.text().len());
        let (setup, mut live) = self.split(Drafting::Undecided);
        let mut cp = live.window.last();
        let mut resting = live.resting(&cp);
        for t in tokens {
            let Ok(r) = setup.resolve(t) else {
                debug_assert!(false, "draft of an unchecked token");
                continue;
            };
            let ledger_at = live.ledger.append(r.drafted(), r.bytes.len());
            // Most prose: the state rests, and a text token of resting bytes leaves it so.
            // Tested against the table asked for once, not through the scanner's dispatch.
            if resting.is_some_and(|rests| r.role.is_text() && rests_on(rests, r.bytes)) {
                live.window.append(r.bytes, ledger_at);
                live.window.save_unchanged();
                continue;
            }
            live.step_and_save(r, ledger_at, &mut cp, out);
            resting = live.resting(&cp);
        }
    }

    /// `draft_checked` of ids below the vocabulary's `dense_below` (a batch's rows, nearly
    /// always): a run of text tokens that leave a resting state as it is (most prose) is
    /// appended in one tight loop, the id's piece looked up once and nothing resolved into
    /// a `Resolved`, which cost about half of such a token's work. Other tokens go the
    /// way `draft_checked` takes them.
    pub(crate) fn draft_dense(&mut self, ids: &[u64], out: &mut Vec<Outcome>) {
        self.early.start(self.window.text().len());
        let (setup, mut live) = self.split(Drafting::Undecided);
        let mut cp = live.window.last();
        let mut rest = ids;
        while !rest.is_empty() {
            if let Some(rests) = live.resting(&cp) {
                rest = &rest[live.append_resting(setup, rest, rests)..];
            }
            let Some((&id, after)) = rest.split_first() else { break };
            rest = after;
            // Checked below `dense_below`, itself below `MAX_TOKEN_ID`: the id fits.
            let r = setup.resolve_below_dense(id as u32);
            let ledger_at = live.ledger.append(Drafted::Id(id as u32), r.bytes.len());
            live.step_and_save(r, ledger_at, &mut cp, out);
        }
    }

    /// Checks a `verify(n, correction)` without changing anything.
    pub fn check_verify(&self, n: usize, correction: Option<TokenIn<'_>>) -> Result<(), CoreError> {
        self.check_open()?;
        if self.tree.is_some() {
            return Err(CoreError::TreePending);
        }
        self.ledger.check_decision(n)?;
        if let Some(c) = correction {
            self.check_room(std::iter::once(c))?;
        }
        Ok(())
    }

    /// `check_verify` of a correction id the caller found below the vocabulary's
    /// `dense_below` (see `check_draft_dense`): the id is not resolved.
    pub(crate) fn check_verify_dense(&self, n: usize, correction: Option<TokenIn<'_>>) -> Result<(), CoreError> {
        self.check_open()?;
        if self.tree.is_some() {
            return Err(CoreError::TreePending);
        }
        self.ledger.check_decision(n)?;
        match correction {
            Some(c) => self.check_room_dense(1, std::iter::once(c)),
            None => Ok(()),
        }
    }

    /// Accepts the first `n` undecided tokens, rejects the rest, then appends
    /// `correction` (the target's own next token) as accepted. Returns the
    /// retractions, the correction's outcomes and the commits, in that order.
    pub fn verify(&mut self, n: usize, correction: Option<TokenIn<'_>>) -> Result<Vec<Outcome>, CoreError> {
        let mut out = Vec::new();
        self.verify_into(n, correction, &mut out)?;
        Ok(out)
    }

    /// `verify`, appending its outcomes to `out`.
    pub fn verify_into(
        &mut self,
        n: usize,
        correction: Option<TokenIn<'_>>,
        out: &mut Vec<Outcome>,
    ) -> Result<(), CoreError> {
        self.check_verify(n, correction)?;
        self.verify_checked(n, correction, out);
        Ok(())
    }

    /// `verify` of what `check_verify` accepted.
    pub(crate) fn verify_checked(&mut self, n: usize, correction: Option<TokenIn<'_>>, out: &mut Vec<Outcome>) {
        let from = out.len();
        self.decide(n, out);
        self.read_unread(out);
        self.correct(correction, out);
        self.release(&out[from..], false);
    }

    /// Reads the block bodies left unread (see `EarlyReads`): every live token is
    /// decided, so their ends are accepted. Their calls are announced now, before
    /// the correction's outcomes, in stream order.
    /// A block that ends later in the last token (at the end of the turn) is
    /// numbered after their items, as if they had been read when it ended.
    /// Asked inline, the reading in a call: most verifies have nothing unread (the call
    /// alone cost a verify about as much as its ledger's decision).
    #[inline(always)]
    #[allow(clippy::inline_always)]
    fn read_unread(&mut self, out: &mut Vec<Outcome>) {
        if self.blocks.has_unread() {
            self.read_unread_now(out);
        }
    }

    fn read_unread_now(&mut self, out: &mut Vec<Outcome>) {
        let (scanner, text) = (&self.setup.scanner, self.window.text());
        let ended = self.blocks.read_unread(|body| scanner.read_body(text, body), out);
        if let Some((token, next)) = ended.filter(|&(token, _)| token + 1 == self.window.len()) {
            debug_assert!(token + 1 == self.window.accepted_len(), "read with tokens undecided");
            let mut base = self.window.base();
            base.ends = next;
            self.window.rebase(base);
        }
    }

    /// Streaming output: releases what the accepted text now settles (every live
    /// token is accepted when this runs); `outcomes` are the step's.
    /// Asked inline, like `read_unread`: most turns do not stream.
    #[inline(always)]
    #[allow(clippy::inline_always)]
    fn release(&mut self, outcomes: &[Outcome], last: bool) {
        if self.stream.is_some() {
            self.release_now(outcomes, last);
        }
    }

    fn release_now(&mut self, outcomes: &[Outcome], last: bool) {
        let Some(stream) = self.stream.as_deref_mut() else { return };
        let text = self.window.accepted_text();
        let safe = if last {
            text.len()
        } else {
            text.len() - self.setup.scanner.undecided_tail(&self.window.base().scan, text.len())
        };
        stream.release(text, self.window.shifts(), safe, outcomes, last, self.setup.scanner.schemas());
    }

    /// What the steps released since the last call (streaming output; empty
    /// unless the turn streams): accepted content and reasoning text, tool-call deltas.
    pub fn take_released(&mut self) -> Released {
        self.stream.as_deref_mut().map(Streamer::take).unwrap_or_default()
    }

    /// Whether a step released something not taken yet.
    #[must_use]
    pub fn has_released(&self) -> bool {
        self.stream.as_deref().is_some_and(Streamer::has_output)
    }

    /// Appends the (checked) correction as accepted, then commits what is accepted whole.
    /// Runs once every live token is decided (after `decide`).
    fn correct(&mut self, correction: Option<TokenIn<'_>>, out: &mut Vec<Outcome>) {
        if let Some(c) = correction {
            self.append_accepted(c, out);
        }
        self.commit(out);
    }

    /// Appends one checked token as accepted: the verifier's own token is never
    /// undecided, so it saves no state, takes no decision and rolls nothing back.
    fn append_accepted(&mut self, token: TokenIn<'_>, out: &mut Vec<Outcome>) {
        let (setup, mut live) = self.split(Drafting::Accepted);
        let Ok(r) = setup.resolve(token) else {
            debug_assert!(false, "append of an unchecked token");
            return;
        };
        let ledger_at = live.ledger.append_accepted(r.drafted(), r.bytes.len());
        let mut cp = live.window.base();
        live.step(r, ledger_at, &mut cp, out);
        live.window.rebase(cp);
    }

    /// Ends the turn: undecided tokens are rejected (they were never verified),
    /// a block awaiting confirmation is confirmed, and a block still open is
    /// reported malformed.
    pub fn finish(&mut self) -> Result<Vec<Outcome>, CoreError> {
        let mut out = Vec::new();
        self.finish_into(&mut out)?;
        Ok(out)
    }

    /// `finish`, appending its outcomes to `out`. A drafted tree is rejected whole.
    pub fn finish_into(&mut self, out: &mut Vec<Outcome>) -> Result<(), CoreError> {
        self.check_open()?;
        if self.tree.is_some() {
            self.verify_path_into(&[], None, out)?;
        } else {
            self.verify_into(0, None, out)?;
        }
        let from = out.len();
        let (_, mut live) = self.split(Drafting::Accepted);
        let mut cp = live.window.base();
        let ended = live.scanner.finish(&cp.scan, live.window.text());
        if let Some(last) = live.window.len().checked_sub(1) {
            for ev in ended {
                live.record(ev, last, &mut cp, out);
            }
            self.commit(out);
        }
        self.release(&out[from..], true);
        self.finished = true;
        Ok(())
    }

    /// Accepts the first `n` undecided tokens and rejects the rest, on the ledger,
    /// the live stream and the blocks.
    fn decide(&mut self, n: usize, out: &mut Vec<Outcome>) {
        let keep = self.window.accepted_len() + n;
        self.ledger.decide(n);
        self.window.keep(keep);
        self.blocks.rollback(keep, out);
    }

    #[inline]
    fn commit(&mut self, out: &mut Vec<Outcome>) {
        if self.blocks.is_empty() {
            return; // between blocks, in most verifies: nothing to walk
        }
        let (window, ledger) = (&self.window, &self.ledger);
        // Invariant 1, checked on the ledger itself: exactly the block's own tokens were accepted.
        self.blocks
            .commit(|start, last| ledger.is_accepted_whole(window.ledger_span(start, last), last + 1 - start), out);
    }

    /// The turn's parts borrowed apart, so a piece borrowed from the setup's
    /// vocabulary can advance the live state, with tokens as `drafting` says.
    fn split(&mut self, drafting: Drafting) -> (&Setup, Live<'_>) {
        let Self { setup, ledger, window, blocks, scan_out, early, .. } = self;
        let early = matches!(drafting, Drafting::Undecided).then_some(early);
        (setup, Live { scanner: &setup.scanner, ledger, window, blocks, scan_out, early })
    }
}

/// What the tokens a `Live` advances are.
#[derive(Debug, Clone, Copy)]
enum Drafting {
    /// Drafted: a block they end may be read early, within `EarlyReads`.
    Undecided,
    /// Accepted (the verifier's correction, the end of the turn): read now.
    Accepted,
}

/// The state a token advances: the ledger, the live stream and the blocks.
struct Live<'t> {
    scanner: &'t Scanner,
    /// Every token as drafted: what the key hash absorbs.
    ledger: &'t mut Ledger,
    window: &'t mut Window,
    blocks: &'t mut BlockTable,
    scan_out: &'t mut Vec<ScanEvent>,
    /// The early-read budget, when the tokens are undecided.
    early: Option<&'t mut EarlyReads>,
}

impl<'t> Live<'t> {
    /// Scans a token already in the ledger at `ledger_at` onto the live stream as
    /// undecided, from the state after the last live token.
    fn advance(&mut self, r: Resolved<'_>, ledger_at: usize, out: &mut Vec<Outcome>) {
        let mut cp = self.window.last();
        self.step_and_save(r, ledger_at, &mut cp, out);
    }

    /// The bytes a text token may hold and change nothing after `cp` (`Scanner::resting`):
    /// none right after a token that ended calls, whose state is saved with its count.
    #[inline]
    fn resting(&self, cp: &Checkpoint) -> Option<&'t [bool; 256]> {
        if cp.ends != 0 {
            return None;
        }
        self.scanner.resting(&cp.scan)
    }

    /// Appends the leading `ids` (below `dense_below`) that are text of only bytes in
    /// `rests`, which leave the resting state the last live token left as it is;
    /// returns how many.
    #[inline]
    fn append_resting(&mut self, setup: &Setup, ids: &[u64], rests: &[bool; 256]) -> usize {
        let vocab = setup.vocab();
        for (n, &id) in ids.iter().enumerate() {
            // Checked below `dense_below`, itself below `MAX_TOKEN_ID`: the id fits.
            let id = id as u32;
            let piece = vocab.piece_below_dense(id);
            if !setup.plain_text(id) || !rests_on(rests, piece) {
                return n;
            }
            let ledger_at = self.ledger.append(Drafted::Id(id), piece.len());
            self.window.append_unchanged(piece, ledger_at);
        }
        ids.len()
    }

    /// `step` from `cp`, the state after the last live token (`window.last()`),
    /// then saves the state after the token, unless the token left it as it was.
    #[inline(always)]
    #[allow(clippy::inline_always)]
    fn step_and_save(&mut self, r: Resolved<'_>, ledger_at: usize, cp: &mut Checkpoint, out: &mut Vec<Outcome>) {
        let before = cp.ends;
        if self.step(r, ledger_at, cp, out) || before != 0 {
            self.window.save(*cp);
        } else {
            self.window.save_unchanged();
        }
    }

    /// Scans a token onto the live stream from `cp`, the state after the last live
    /// token, which becomes the state after this one (the caller saves it). False
    /// when the token changed nothing but `cp.ends`, which it zeroes.
    /// Inlined into the draft loop: as a call it cost about a fifth of a token's
    /// work in saving and restoring registers.
    #[inline(always)]
    #[allow(clippy::inline_always)]
    fn step(&mut self, r: Resolved<'_>, ledger_at: usize, cp: &mut Checkpoint, out: &mut Vec<Outcome>) -> bool {
        cp.ends = 0;
        let (pos, bytes) = self.window.append(r.bytes, ledger_at);
        let text = self.window.text();
        if !self.scanner.scan(&mut cp.scan, text, bytes, r.role, self.scan_out) {
            return false;
        }
        // Most tokens change no block: skip the event loop (and its drop glue) for them.
        if !self.scan_out.is_empty() {
            let mut events = std::mem::take(self.scan_out);
            for ev in events.drain(..) {
                self.record(ev, pos, cp, out);
            }
            *self.scan_out = events;
        }
        true
    }

    /// Whether a body of `len` bytes that ends in this token may be read now:
    /// always for accepted tokens; for drafted ones, within `EarlyReads`.
    fn may_read(&mut self, len: usize) -> bool {
        let end = self.window.text().len();
        self.early.as_deref_mut().is_none_or(|early| early.allow(len, end))
    }

    /// Applies one scan event of the token at live position `pos`, whose state
    /// after the token is `cp` (the key hash after it keys every call ending there).
    fn record(&mut self, ev: ScanEvent, pos: usize, cp: &mut Checkpoint, out: &mut Vec<Outcome>) {
        match ev {
            ScanEvent::Opened { delimiter_start, body_start } => {
                self.blocks.open(self.window.token_at(delimiter_start), pos, body_start);
            }
            ScanEvent::Shift { at, class } => self.window.shift(pos, at, class),
            ScanEvent::Ended { body, confirmed, .. } => {
                // After a block that ended unread in this same token, this one waits too:
                // its keys are numbered after that block's items, known once it is read.
                let first = if self.blocks.unread_in(pos) { First::AfterPrevious } else { First::Known(cp.ends) };
                let body = match (body, first) {
                    (BlockBody::Read(items), First::Known(_)) => items,
                    (BlockBody::Unread(body), First::Known(_)) if self.may_read(body.len()) => {
                        self.scanner.read_body(self.window.text(), body)
                    }
                    (body, first) => {
                        let hash = self.window.hash_after(pos, self.ledger);
                        self.blocks.end_unread(pos, confirmed, Unread { body, hash, first });
                        return;
                    }
                };
                let hash = self.window.hash_after(pos, self.ledger);
                let next_key = || {
                    let key = hash.key(cp.ends);
                    cp.ends += 1;
                    key
                };
                self.blocks.end(pos, confirmed, body, next_key, out);
            }
            ScanEvent::Confirmed => self.blocks.confirm(pos, out),
            ScanEvent::ReasoningUnopened { delimiter } => {
                self.blocks.reasoning_unopened(self.window.token_at(delimiter.start), pos);
            }
        }
    }
}

/// Parses a whole finished output in one shot with the same scanner, and
/// returns what the accepted stream holds: committed calls, malformed blocks
/// and reasoning closers that closed nothing, in stream order.
pub fn parse(text: &[u8], config: &TurnConfig) -> Result<Vec<Outcome>, CoreError> {
    config.check()?;
    let mut turn = Turn::with_vocab(config, Arc::default());
    let mut out = turn.draft(&[TokenIn::Piece(text)])?;
    out.extend(turn.verify(1, None)?);
    out.extend(turn.finish()?);
    out.retain(Outcome::is_committed);
    Ok(out)
}

#[cfg(test)]
mod tests;
