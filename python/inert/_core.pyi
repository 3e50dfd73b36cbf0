"""inert's Rust core: the token ledger, the incremental tool-call scanner and
the commit keys. Per-step work is proportional to the tokens in the step."""

from collections.abc import Mapping, Sequence
from typing import Any, Literal, final

__all__ = ["BlockEvent", "KEY_PREFIX", "TokenStream", "commit_key", "formats", "parse"]

KEY_PREFIX: str
"""The version prefix of every commit key (``"ck1-"``)."""

_Token = str | bytes | int

@final
class BlockEvent:
    """One step in a tool-call block's life.

    ``kind`` is ``"opened"``, ``"closed"`` (one per call in the block, ``index``
    from 0: ``name``, ``arguments``, ``raw_arguments``, ``call_id``,
    ``commit_key``), ``"malformed"`` (``reason``,
    ``commit_key``), ``"accepted"`` (every token of the block is accepted) or
    ``"retracted"`` (some were rejected; if its opening survives, the block
    stays open and closes again under the same ``block`` id). ``start`` and
    ``end`` are live-stream token positions, ``end`` exclusive.
    """

    @property
    def kind(self) -> Literal["opened", "closed", "malformed", "accepted", "retracted"]: ...
    @property
    def block(self) -> int: ...
    @property
    def index(self) -> int | None: ...
    @property
    def call_id(self) -> str | None: ...
    @property
    def start(self) -> int | None: ...
    @property
    def end(self) -> int | None: ...
    @property
    def name(self) -> str | None: ...
    @property
    def arguments(self) -> dict[str, object] | None: ...
    @property
    def raw_arguments(self) -> str | None: ...
    @property
    def commit_key(self) -> str | None: ...
    @property
    def reason(self) -> str | None: ...

@final
class TokenStream:
    """One turn of one sequence; mutable, one per stream (concurrent use raises RuntimeError).

    Args:
        format: a built-in format name (see ``formats()``; ``None`` is ``"hermes"``)
            or a custom format dict.
        turn_key: seeds the commit keys.
        vocab: token id -> piece, as a mapping or a sequence indexed by id.
        special_tokens: token id -> spelling; those spelling a delimiter match by id
            (so do vocabulary entries that spell one exactly).
        schemas: tool name -> JSON schema of its parameters (types XML-style values).
        max_block_bytes: a block longer than this is reported malformed.

    Raises:
        UnknownFormatError: unknown ``format``.
        FormatSpecError: a custom ``format`` dict that cannot be used.
        VocabularyError: a bad ``vocab`` or ``special_tokens`` entry.
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
    ) -> TokenStream: ...
    def draft(self, tokens: Sequence[_Token]) -> list[BlockEvent]:
        """Appends a draft window; returns the events it caused.

        Raises:
            PieceTypeError: a token is not str, bytes or int, or ``tokens`` is a bare str/bytes.
            VocabularyError: an int token the vocabulary lacks.
            StreamFinishedError: after ``finish()``.
        Nothing changes when it raises.
        """
    def verify(self, n_accepted: int, correction: _Token | None = None) -> list[BlockEvent]:
        """Accepts the first ``n_accepted`` pending tokens, rejects the rest, appends
        ``correction`` as accepted. Returns retractions, the correction's events,
        then acceptances.

        Raises:
            VerifyError: negative, or more than pending.
            InertTypeError: ``n_accepted`` is not an int.
            PieceTypeError, VocabularyError: a bad ``correction``.
        Nothing changes when it raises.
        """
    def finish(self) -> list[BlockEvent]:
        """Ends the turn: rejects pending tokens, reports a block still open as malformed.

        Raises:
            StreamFinishedError: called twice.
        """
    @property
    def format(self) -> str: ...
    @property
    def pending_len(self) -> int: ...
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
) -> list[BlockEvent]:
    """The closed and malformed blocks of a whole finished output, in order.

    Raises:
        UnknownFormatError: unknown ``format``.
        InertTypeError: ``text`` is not str or bytes.
    """

def formats() -> list[str]:
    """The known format names."""

def commit_key(turn_key: str, tokens: Sequence[_Token], ordinal: int = 0) -> str:
    """The commit key of the ``ordinal``-th block ending in the last of ``tokens``."""
