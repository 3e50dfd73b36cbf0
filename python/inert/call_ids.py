"""The OpenAI tool-call id of each committed call: what a server sends back as the
``tool_call_id`` of the tool's message. With streaming it is the id the call's deltas
carried; without, the same scheme over the committed calls: the model's own id where
the format writes one (and no earlier call took it), else ``call_<turn digest>_<n>``,
``n`` counting the turn's committed calls. Unique within the turn either way. The two
agree unless a call streamed and then turned out malformed (the streamer counted it) or a
JSON call object carries an ``"id"`` of its own (only the parse reads it)."""

from __future__ import annotations

from collections.abc import Sequence

from . import _core

__all__ = ["tool_call_ids"]


def tool_call_ids(calls: Sequence[_core.Call], turn_key: str) -> list[str]:
    """The ids of ``calls``, a turn's committed calls in stream order."""
    prefix = _core.tool_call_id_prefix(turn_key)  # the streamer's own
    taken: set[str] = set()
    out: list[str] = []
    for n, call in enumerate(calls):
        found = call.tool_call_id
        if found is None:
            own = call.call_id
            found = own if own and own not in taken else f"{prefix}{n}"
            while found in taken:
                found += "_"  # as the streamer does: never two calls with one id
        taken.add(found)
        out.append(found)
    return out
