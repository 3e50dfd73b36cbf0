"""inert's Rust core: the token ledger, the incremental tool-call scanner, the
turn that folds both into typed outcomes, and the commit keys. Per-step work is
proportional to the tokens in the step."""

from collections.abc import Mapping, Sequence
from types import EllipsisType
from typing import Any, ClassVar, Literal, SupportsIndex, TypeAlias, final

__all__ = [
    "KEY_PREFIX",
    "BlockMalformed",
    "Call",
    "CallClosed",
    "CallCommitted",
    "CallRetracted",
    "Malformed",
    "ReasoningUnopened",
    "TokenStream",
    "commit_key",
    "formats",
    "parse",
]

KEY_PREFIX: str
"""The version prefix of every commit key (``"ck1-"``)."""

_Token: TypeAlias = str | bytes | int | SupportsIndex

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
    def name(self) -> str: ...
    @property
    def arguments(self) -> dict[str, Any]: ...
    @property
    def raw_arguments(self) -> str:
        """The argument text as the model wrote it (JSON formats), or the arguments as JSON."""
    @property
    def call_id(self) -> str | None:
        """The call id the model wrote, in formats that carry one (Kimi K2, Mistral)."""
    @property
    def commit_key(self) -> str: ...
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...
    @property
    def span(self) -> tuple[int, int]:
        """``(start, end)``."""

@final
class Malformed:
    """A block (or one call of a block) that is not a call: it could not be
    parsed, or it outgrew ``max_block_bytes``, or the turn ended inside it.
    Never dispatched. Immutable."""

    @property
    def block(self) -> int: ...
    @property
    def index(self) -> int: ...
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
    def commit_key(self) -> str: ...
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...
    @property
    def span(self) -> tuple[int, int]:
        """``(start, end)``."""

@final
class CallClosed:
    """A call closed. Speculative until committed: some of its tokens, or the
    token that confirms its end, are undecided. Reads may run on it."""

    kind: ClassVar[Literal["call_closed"]]
    __match_args__ = ("call",)
    @property
    def call(self) -> Call: ...

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
    def malformed(self) -> Malformed: ...

@final
class ReasoningUnopened:
    """A reasoning closer (``</think>``) that arrived while the turn was not in
    reasoning: the prompt (the chat template) opened the section, so calls
    before it may have been thoughts; pass ``in_reasoning=True`` for this
    template. Reported once its tokens are accepted. Immutable.

    ``TokenStream`` lists these in ``notices()``, not in its step results;
    ``parse`` returns them in order with the calls."""

    kind: ClassVar[Literal["reasoning_unopened"]]
    __match_args__ = ("start", "end")
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...
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
        vocab: token id -> piece, as a mapping or a sequence indexed by id.
        special_tokens: token id -> spelling; those spelling a delimiter match by id
            (so do vocabulary entries that spell one exactly).
        schemas: tool name -> JSON schema of its parameters: in raw-text XML formats, which
            parameters open one (a tag of another is text in a value) and how each value is typed.
        max_block_bytes: a block longer than this is reported malformed.
        reasoning: the reasoning delimiters ``(open, close)``, also bound by special-token id; a
            call inside reasoning is a thought, never a call. ``...`` (the default) is the
            format's own: ``<think>``/``</think>`` for most, ``[THINK]``/``[/THINK]`` for mistral,
            the analysis channel for openai (a message with a recipient is a call on any
            channel), none for granite. ``None`` turns reasoning off.
        in_reasoning: the prompt already opened a reasoning section (Qwen3 thinking, QwQ,
            DeepSeek-R1/V3.1/V3.2 thinking, Kimi K2-Thinking, MiniMax M1/M2, Olmo 3 Think templates).

    Raises:
        UnknownFormatError: unknown ``format`` (the message suggests the closest name).
        FormatSpecError: a custom ``format`` dict that cannot be used.
        VocabularyError: a bad ``vocab`` or ``special_tokens`` entry.
        InertTypeError: ``turn_key`` is not a str, ``format`` is neither a name nor a dict,
            ``reasoning`` is not a pair of str, None or ``...``, or ``in_reasoning`` is not a bool.
        InertValueError: ``max_block_bytes`` is negative, a reasoning delimiter is empty, or
            ``in_reasoning=True`` with reasoning off.
    """

    def __new__(
        cls,
        format: str | Mapping[str, Any] | None = None,
        turn_key: str = "",
        *,
        vocab: Mapping[int, str | bytes] | Sequence[str | bytes] | None = None,
        special_tokens: Mapping[int, str | bytes] | None = None,
        schemas: Mapping[str, Mapping[str, Any]] | None = None,
        max_block_bytes: int = 1048576,
        reasoning: _Reasoning = ...,
        in_reasoning: bool = False,
    ) -> TokenStream: ...
    def draft(self, tokens: Sequence[_Token]) -> list[_Outcome]:
        """Appends a draft window; returns the outcomes it caused (``CallClosed`` only).

        Raises:
            PieceTypeError: a token is not str, bytes or an integer, or ``tokens`` is a bare str/bytes
                or not a sequence.
            VocabularyError: an integer token the vocabulary lacks, or a negative one.
            InertValueError: a str token that is not valid Unicode.
            StreamFinishedError: after ``finish()``.
        Nothing changes when it raises.
        """
    def verify(self, n_accepted: int | SupportsIndex, correction: _Token | None = None) -> list[_Outcome]:
        """Accepts the first ``n_accepted`` pending tokens, rejects the rest, appends
        ``correction`` as accepted. Returns retractions, the correction's outcomes,
        then commits.

        Raises:
            VerifyError: negative, or more than pending.
            InertTypeError: ``n_accepted`` is not an integer.
            PieceTypeError, VocabularyError: a bad ``correction``.
        Nothing changes when it raises.
        """
    def finish(self) -> list[_Outcome]:
        """Ends the turn: rejects pending tokens, confirms a block awaiting
        confirmation, and reads a block still open (its closer cut by a stop
        string or EOS) as it stands: a complete, valid body is a call, keyed by
        its last token; an incomplete one is malformed (``unterminated``).

        Raises:
            StreamFinishedError: called twice.
        """
    def notices(self) -> list[ReasoningUnopened]:
        """The ``ReasoningUnopened`` outcomes committed so far, in stream order."""
    @property
    def format(self) -> str: ...
    @property
    def pending_len(self) -> int:
        """Tokens drafted and not yet verified."""
    @property
    def accepted_len(self) -> int: ...
    @property
    def ledger_len(self) -> int:
        """Every token drafted in the turn, rejected ones included."""
    @property
    def finished(self) -> bool: ...
    def accepted_text(self) -> bytes: ...
    def live_text(self) -> bytes:
        """Accepted text followed by the pending draft."""
    def token_state(self, index: int) -> Literal["undecided", "accepted", "rejected"]:
        """State of ledger position ``index``. Raises InertValueError past the end."""
    def token_piece(self, index: int) -> bytes: ...
    def rejected_runs(self) -> list[tuple[int, int]]:
        """Maximal runs ``(start, end)`` of rejected ledger positions."""

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
        InertTypeError: ``text`` is not str or bytes; a bad ``reasoning`` or ``in_reasoning``.
        InertValueError: an empty reasoning delimiter; ``in_reasoning=True`` with reasoning off.
    """

def formats() -> list[str]:
    """The known format names."""

def commit_key(turn_key: str, tokens: Sequence[_Token], ordinal: int = 0) -> str:
    """The commit key of the ``ordinal``-th call ending in the last of ``tokens``
    (calls and malformed blocks ending in one token count from 0, in stream order)."""
