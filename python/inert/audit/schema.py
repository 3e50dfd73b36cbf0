"""The events of ``inert.trace/2`` and the fields each holds (``docs/trace.md``), checked
as a trace is read: every field an event must have is there and of its type, every field
it may have is of its type when present. One look at each field, so checking a trace
costs what reading it did; nothing is coerced (``"early": "no"`` is no flag)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..effects import EffectClass
from .reconcile import time_field

__all__ = ["EVENTS", "Event", "check_event"]

Check = Callable[[Any, str], None]
"""Raises TypeError or ValueError, naming the field, when the value is not of its type."""


def _shown(value: Any) -> str:
    return repr(value)[:120]


def _text(value: Any, name: str) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__}")


def _count(value: Any, name: str) -> None:
    """A whole number >= 0; JSON's ``true`` is a bool, not 1, and ``1.5`` no count."""
    if type(value) is not int or value < 0:
        raise TypeError(f"{name} must be a whole number >= 0, got {_shown(value)}")


def _flag(value: Any, name: str) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be true or false, got {_shown(value)}")


def _token(value: Any, name: str) -> None:
    """A piece (text) or a token id (a whole number >= 0), as ``TraceWriter`` writes them."""
    if type(value) is not str and (type(value) is not int or value < 0):
        raise TypeError(f"{name} must hold token pieces (strings) or ids (whole numbers >= 0), got {_shown(value)}")


def _tokens(value: Any, name: str) -> None:
    if not isinstance(value, list):
        raise TypeError(f"{name} must be a list of token pieces or ids, got {type(value).__name__}")
    for t in value:
        _token(t, name)


def _ids(least: int) -> Check:
    def check(value: Any, name: str) -> None:
        if not isinstance(value, list) or not all(type(i) is int and i >= least for i in value):
            raise TypeError(f"{name} must be a list of whole numbers >= {least}, got {_shown(value)}")

    return check


def _span(value: Any, name: str) -> None:
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(type(v) is int for v in value)
        or not 0 <= value[0] <= value[1]
    ):
        raise TypeError(f"{name} must be [start, end] token positions, 0 <= start <= end, got {_shown(value)}")


def _object(value: Any, name: str) -> None:
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be an object, got {type(value).__name__}")


def _effect(value: Any, name: str) -> None:
    EffectClass.parse(value)  # EffectTableError, a ValueError, names the known classes


def _footprint(value: Any, name: str) -> None:
    _object(value, name)
    for side in ("reads", "writes"):
        if (keys := value.get(side)) is not None and not isinstance(keys, list):
            raise TypeError(f"{name} {side} must be a list of keys or null, got {type(keys).__name__}")


def _phase(value: Any, name: str) -> None:
    if value not in ("prepare", "commit", "abort"):
        raise ValueError(f"{name} must be prepare, commit, abort or null, got {_shown(value)}")


@dataclass(frozen=True)
class Event:
    """What one kind of event holds besides ``v``, ``turn``, ``event`` and ``t``: the
    fields it must have, and those it may leave out or write as null (which are checked
    only when they hold something); any other field is ignored (``result``, a stack's own)."""

    required: dict[str, Check]
    optional: dict[str, Check] = field(default_factory=dict)


_CALL = Event(
    {"block": _count, "index": _count, "span": _span, "name": _text, "commit_key": _text},
    {"arguments": _object, "call_id": _text},
)

EVENTS: dict[str, Event] = {
    "turn_start": Event({"format": _text, "policy": _text}),
    "draft": Event({"tokens": _tokens}),
    "verify": Event({"n_accepted": _count}, {"correction": _token}),
    "draft_tree": Event({"tokens": _tokens, "parents": _ids(-1)}),
    "verify_path": Event({"path": _ids(0)}, {"correction": _token}),
    "call_closed": _CALL,
    "call_committed": _CALL,
    "call_retracted": _CALL,
    "block_malformed": Event(
        {
            "block": _count,
            "index": _count,
            "span": _span,
            "commit_key": _text,
            "kind": _text,
            "offset": _count,
            "reason": _text,
        }
    ),
    "dispatch": Event(
        {"commit_key": _text, "name": _text},
        {"arguments": _object, "effect": _effect, "footprint": _footprint, "span": _span, "early": _flag},
    ),
    "result": Event(
        {"commit_key": _text},
        {
            "ok": _flag,
            "error": _text,
            "timed_out": _flag,
            "replayed": _flag,
            "phase": _phase,
        },
    ),
    "discard": Event({"commit_key": _text}, {"name": _text}),
    "turn_end": Event({}, {"violations": _count}),
}
"""Every event of the schema, by its ``event``; a line naming another is no event of it."""


def check_event(shape: Event, row: Mapping[str, Any]) -> None:
    """Checks the fields of one event of kind ``shape`` (one of ``EVENTS``), ``t`` first.

    Raises:
        KeyError: a field it must have is missing.
        TypeError, ValueError: a field is of the wrong type, or the line is one its writer
            could not encode (``TraceWriter`` writes ``unwritable`` instead of its fields).
    """
    if "unwritable" in row:
        raise ValueError(f"its writer could not write it ({_shown(row['unwritable'])}): the event is lost")
    time_field(row["t"])
    for name, check in shape.required.items():
        check(row[name], name)
    for name, check in shape.optional.items():
        if (value := row.get(name)) is not None:
            check(value, name)
