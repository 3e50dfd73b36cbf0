"""The tools a turn may call, and how each is called.

A tool is a callable named in ``tools={name: callable}``, called as
``tool(**arguments)``; or one router for every tool of a server, called as
``router(name, arguments)`` (an MCP ``call_tool``, say); or a two-phase tool,
an object with ``prepare(**arguments)``, ``commit(prepared, *, idempotency_key)``
and ``abort(prepared)``. An idempotent tool gets ``idempotency_key=<commit
key>`` only if its signature names that parameter, so a plain bridge never
forwards it to a server as an argument; any tool can read its call's key from
``inert.current_call()`` instead.
"""

from __future__ import annotations

import contextvars
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..effects import EffectClass
from ..errors import InertTypeError, MissingToolError

__all__ = [
    "CurrentCall",
    "Invocation",
    "ToolBox",
    "Tools",
    "TwoPhaseTool",
    "coroutine_part",
    "current_call",
    "enter_call",
    "fresh_arguments",
    "is_async_callable",
    "is_two_phase",
    "running_for",
]


@dataclass(frozen=True)
class CurrentCall:
    """The call a tool is running for."""

    commit_key: str
    name: str
    effect: EffectClass
    idempotency_key: str | None
    """The commit key, for idempotent tools; ``None`` for others."""
    turn_key: str = ""
    """The turn the call belongs to (a router tool serving many requests tells them apart by it)."""
    seq: int | None = None
    """The engine's sequence id under a ``BatchOrchestrator``; ``None`` elsewhere."""


_current: contextvars.ContextVar[tuple[object, CurrentCall] | None] = contextvars.ContextVar(
    "inert_current_call", default=None
)


def enter_call(owner: object, current: CurrentCall) -> None:
    """Makes ``current`` the call of this context for good (an asyncio task's own context)."""
    _current.set((owner, current))


def current_call() -> CurrentCall | None:
    """The call the running tool serves, or ``None`` outside a tool."""
    entry = _current.get()
    return None if entry is None else entry[1]


def running_for() -> object | None:
    """The runtime whose tool is running in this context (to refuse re-entry)."""
    entry = _current.get()
    return None if entry is None else entry[0]


class TwoPhaseTool(Protocol):
    """A tool in two phases: ``prepare(**arguments)`` stages it with nothing observable
    (it may run on draft tokens), ``commit(prepared, *, idempotency_key)`` makes it
    visible after acceptance, exactly once, and ``abort(prepared)`` drops what a
    rejected block (or a turn that ended without it) prepared. Any object with the
    three methods is one; their parameters are the tool's own."""

    @property
    def prepare(self) -> Callable[..., Any]:
        """``prepare(**arguments)``: stages the call, with nothing observable; returns what it staged."""
        ...

    @property
    def commit(self) -> Callable[..., Any]:
        """``commit(prepared, *, idempotency_key)``: makes it visible, exactly once, after acceptance."""
        ...

    @property
    def abort(self) -> Callable[..., Any]:
        """``abort(prepared)``: drops what prepare staged (a rejected block, a turn that ended without it)."""
        ...


Tools = Mapping[str, Callable[..., Any] | TwoPhaseTool] | Callable[[str, dict[str, Any]], Any]
"""Tool name -> callable (called as ``tool(**arguments)``) or two-phase tool; or one
router called as ``router(name, arguments)``."""


def fresh_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """A copy of a call's arguments for its tool, nested dicts and lists too: a tool that
    changes what it was given must not change the call (its report, its journaled intent,
    the commit of a prepared call, the arguments a restart compares). Parsed arguments
    nest at most as deep as the core's JSON parser allows (128), so recursion is safe."""
    return {k: _fresh(v) for k, v in arguments.items()}


def _fresh(value: Any) -> Any:
    if type(value) is dict:
        return {k: _fresh(v) for k, v in value.items()}
    if type(value) is list:
        return [_fresh(v) for v in value]
    return value  # str, int, float, bool, None: immutable


def _takes_idempotency_key(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # builtins without a signature: pass nothing extra
        return False
    p = params.get("idempotency_key")
    return p is not None and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)


def is_async_callable(fn: object) -> bool:
    """A coroutine function, or an object whose ``__call__`` is one."""
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(type(fn), "__call__", None)  # noqa: B004 - the class's __call__, to see if it is a coroutine
    return inspect.iscoroutinefunction(call)


def coroutine_part(invocation: Invocation) -> str | None:
    """What of a tool is a coroutine function, said for a message ("is a coroutine function",
    "has a coroutine commit"), or None: every phase of a two-phase tool is asked, since a
    thread that calls a coroutine commit gets a coroutine back and the write never happens."""
    if not invocation.two_phase:
        return "is a coroutine function" if invocation.is_async else None
    for phase in ("prepare", "commit", "abort"):
        if is_async_callable(getattr(invocation.fn, phase)):
            return f"has a coroutine {phase}"
    return None


def is_two_phase(tool: object) -> bool:
    """An object with ``prepare``, ``commit`` and ``abort`` methods (not a plain function)."""
    return not inspect.isroutine(tool) and all(callable(getattr(tool, m, None)) for m in ("prepare", "commit", "abort"))


@dataclass(frozen=True)
class Invocation:
    """How to call one tool."""

    fn: Any
    routed: bool
    """Called as ``fn(name, arguments)`` rather than ``fn(**arguments)``."""
    takes_key: bool
    is_async: bool
    two_phase: bool = False
    """``fn`` is a two-phase tool: ``prepare``, then ``commit`` or ``abort``."""

    def prepare(self, arguments: dict[str, Any], current: CurrentCall, owner: object) -> Any:
        """Stages the call (nothing observable), with ``current`` as this context's call."""
        token = _current.set((owner, current))
        try:
            return self.fn.prepare(**fresh_arguments(arguments))
        finally:
            _current.reset(token)

    def commit(self, prepared: Any, current: CurrentCall, owner: object) -> Any:
        """Makes the prepared call visible, under the commit key as its idempotency key."""
        token = _current.set((owner, current))
        try:
            return self.fn.commit(prepared, idempotency_key=current.commit_key)
        finally:
            _current.reset(token)

    def abort(self, prepared: Any, current: CurrentCall, owner: object) -> Any:
        """Drops what prepare staged."""
        token = _current.set((owner, current))
        try:
            return self.fn.abort(prepared)
        finally:
            _current.reset(token)

    def __call__(self, name: str, arguments: dict[str, Any], current: CurrentCall, owner: object) -> Any:
        """Calls the tool with ``current`` as this context's call (a worker thread's)."""
        token = _current.set((owner, current))
        try:
            return self.call(name, arguments, current)
        finally:
            _current.reset(token)

    def call(self, name: str, arguments: dict[str, Any], current: CurrentCall) -> Any:
        """Calls the tool; the caller has made ``current`` its context's call."""
        if self.routed:
            return self.fn(name, fresh_arguments(arguments))
        kwargs = fresh_arguments(arguments)
        if self.takes_key and current.idempotency_key is not None:
            kwargs["idempotency_key"] = current.idempotency_key
        return self.fn(**kwargs)


class ToolBox:
    """Tool name -> how to call it.

    Args:
        tools: ``{name: callable}``, or one router ``callable(name, arguments)`` for every tool.

    Raises:
        InertTypeError: ``tools`` is neither a mapping nor a callable, or an entry is not callable.
    """

    def __init__(self, tools: Tools | None) -> None:
        self._router: Invocation | None = None
        self._tools: dict[str, Invocation] = {}
        if tools is None:
            return
        if isinstance(tools, Mapping):
            for name, fn in tools.items():
                if is_two_phase(fn):
                    prepare = getattr(fn, "prepare")  # noqa: B009 - fn is typed as a callable; a two-phase tool is not
                    self._tools[name] = Invocation(fn, False, True, is_async_callable(prepare), two_phase=True)
                elif not callable(fn):
                    raise InertTypeError(
                        f"tools[{name!r}] is {type(fn).__name__}: a tool is a callable, or an object with "
                        "prepare, commit and abort methods"
                    )
                else:
                    self._tools[name] = Invocation(fn, False, _takes_idempotency_key(fn), is_async_callable(fn))
        elif callable(tools):
            self._router = Invocation(tools, True, False, is_async_callable(tools))
        else:
            raise InertTypeError(
                f"tools must be a mapping of tool name to callable, or one router callable(name, arguments); "
                f"got {type(tools).__name__}"
            )

    def names(self) -> list[str]:
        """The tools named one by one (a router serves any name)."""
        return list(self._tools)

    def two_phase(self) -> list[str]:
        """The tools that prepare, then commit or abort."""
        return [n for n, inv in self._tools.items() if inv.two_phase]

    def invocations(self) -> list[tuple[str, Invocation]]:
        out = list(self._tools.items())
        if self._router is not None:
            out.append(("*", self._router))
        return out

    def get(self, name: str) -> Invocation | None:
        return self._tools.get(name, self._router)

    def require(self, name: str) -> Invocation:
        """The invocation of ``name``.

        Raises:
            MissingToolError: no callable serves ``name``.
        """
        inv = self.get(name)
        if inv is None:
            raise MissingToolError(f"no callable for tool {name!r}; pass it in tools=")
        return inv
