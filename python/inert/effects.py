"""Effect classes and the table that assigns them to tools.

A tool's effect class decides when the gate may dispatch it; its footprint
(the resources it reads and writes) decides which calls it must not overtake.
"""

from __future__ import annotations

import enum
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from os import PathLike
from typing import Any

from .durations import seconds
from .errors import EffectTableError, InertTypeError, closest_name
from .files import read_whole

__all__ = ["EffectClass", "EffectTable", "Footprint", "FootprintFn", "ToolSpec"]


class EffectClass(str, enum.Enum):  # noqa: UP042 - str() and format() of a member are part of the API
    """What running a tool does to the world."""

    READ_ONLY = "read_only"
    """Observes only: may run on draft tokens; its result counts only once accepted."""
    IDEMPOTENT = "idempotent"
    """Changes the world, but repeating it with the same idempotency key is harmless."""
    WRITE = "write"
    """Changes the world: runs only after every token of its block is accepted."""

    @classmethod
    def parse(cls, value: EffectClass | str) -> EffectClass:
        try:
            return cls(value)
        except ValueError:
            known = ", ".join(repr(e.value) for e in cls)
            raise EffectTableError(f"unknown effect class {value!r}; use one of {known}") from None


FootprintFn = Callable[[Mapping[str, Any]], Iterable[Any]]
"""Maps a call's arguments to the resource keys it touches."""

FootprintSpec = FootprintFn | str | Iterable[str] | None


def _footprint_fn(spec: FootprintSpec, what: str) -> FootprintFn | None:
    """A callable, or the names of the arguments whose values are the resource keys."""
    if spec is None or callable(spec):
        return spec
    expected = f"{what} must be a callable, an argument name or a list of argument names"
    if isinstance(spec, (bytes, Mapping)) or not isinstance(spec, (str, Iterable)):
        raise EffectTableError(f"{expected}, got {type(spec).__name__}")
    names = (spec,) if isinstance(spec, str) else tuple(spec)
    if not all(isinstance(n, str) for n in names):
        raise EffectTableError(expected)
    # A named argument the model left out raises KeyError, which makes the footprint
    # unknown: skipping it would give an empty footprint that conflicts with nothing.
    return lambda arguments: [arguments[n] for n in names]


@dataclass(frozen=True)
class Footprint:
    """The resources a call may read and write; ``None`` means unknown, which overlaps everything."""

    reads: frozenset[Any] | None
    writes: frozenset[Any] | None

    @staticmethod
    def _overlap(a: frozenset[Any] | None, b: frozenset[Any] | None) -> bool:
        if a is None:
            return b is None or bool(b)
        if b is None:
            return bool(a)
        return not a.isdisjoint(b)

    def conflicts(self, later: Footprint) -> bool:
        """Whether ``later`` must not run before ``self`` finishes: a write meets a read or a write.

        Raises:
            InertTypeError: ``later`` is not a ``Footprint``.
        """
        if not isinstance(later, Footprint):
            raise InertTypeError(f"conflicts(later): expected a Footprint, got {type(later).__name__}")
        return (
            self._overlap(self.writes, later.reads)
            or self._overlap(self.writes, later.writes)
            or self._overlap(self.reads, later.writes)
        )

    def as_json(self) -> dict[str, list[str] | None]:
        """The footprint as JSON for a trace: sorted keys as text, ``None`` for unknown."""

        def keys(s: frozenset[Any] | None) -> list[str] | None:
            return None if s is None else sorted(map(str, s))

        return {"reads": keys(self.reads), "writes": keys(self.writes)}


@dataclass(frozen=True, init=False)
class ToolSpec:
    """A tool's effect class and footprint.

    Args:
        effect: the tool's effect class (or its string value).
        reads: the resources it reads, as ``callable(arguments) -> iterable of keys``,
            an argument name, or a list of argument names whose values are keys.
            ``None`` means unknown: overlaps every other footprint. So does a call
            whose footprint cannot be computed (a named argument missing, a callable
            that raises, a key that is not hashable).
        writes: the same for the resources it writes; ignored for read-only tools.
        speculate: whether the tool may run on draft tokens, before its block is
            accepted. Only read-only tools may; they do by default. Turn it off for
            reads that reveal intent or cost rate limits (open-world tools).
        timeout: seconds (positive, finite) a call may run before it is recorded as timed out (in doubt).
        max_concurrency: most calls of this tool running at once.

    Raises:
        EffectTableError: a bad effect, footprint, or ``speculate=True`` on a tool that is not read-only.
        InertTypeError: ``speculate`` not a bool, ``timeout`` not a number, ``max_concurrency`` not an int.
    """

    effect: EffectClass
    reads: FootprintFn | None
    writes: FootprintFn | None
    speculate: bool
    timeout: float | None
    max_concurrency: int | None

    def __init__(
        self,
        effect: EffectClass | str,
        reads: FootprintSpec = None,
        writes: FootprintSpec = None,
        *,
        speculate: bool | None = None,
        timeout: float | None = None,
        max_concurrency: int | None = None,
    ) -> None:
        effect = EffectClass.parse(effect)
        _check_types(speculate, timeout, max_concurrency)
        if speculate and effect is not EffectClass.READ_ONLY:
            raise EffectTableError(
                f"speculate=True needs a read-only tool; a {effect.value} tool runs only after acceptance"
            )
        if timeout is not None:
            seconds("timeout", timeout, error=EffectTableError)  # checked; kept as given
        if max_concurrency is not None and max_concurrency < 1:
            raise EffectTableError(f"max_concurrency must be at least 1, got {max_concurrency!r}")
        object.__setattr__(self, "effect", effect)
        object.__setattr__(self, "reads", _footprint_fn(reads, "reads"))
        object.__setattr__(self, "writes", _footprint_fn(writes, "writes"))
        object.__setattr__(self, "speculate", effect is EffectClass.READ_ONLY if speculate is None else speculate)
        object.__setattr__(self, "timeout", timeout)
        object.__setattr__(self, "max_concurrency", max_concurrency)

    def footprint(self, arguments: Mapping[str, Any]) -> Footprint:
        """The footprint of one call; a footprint function that fails means unknown."""
        writes = frozenset() if self.effect is EffectClass.READ_ONLY else _apply(self.writes, arguments)
        return Footprint(reads=_apply(self.reads, arguments), writes=writes)


def _check_types(speculate: object, timeout: object, max_concurrency: object) -> None:
    """Refuses a ToolSpec option of the wrong type: ``"no"`` for ``speculate`` would read as true."""
    if speculate is not None and not isinstance(speculate, bool):
        raise InertTypeError(f"speculate must be a bool or None, got {type(speculate).__name__}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))):
        raise InertTypeError(f"timeout must be a number of seconds or None, got {type(timeout).__name__}")
    if max_concurrency is not None and (isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int)):
        raise InertTypeError(f"max_concurrency must be an int or None, got {type(max_concurrency).__name__}")


def _tools(tools: object, what: str) -> Iterable[Any]:
    """A list of tools, refusing a single tool or a str (iterating either yields no tools)."""
    if isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Iterable):
        hint = "; wrap a single tool in a list" if isinstance(tools, Mapping) else ""
        raise InertTypeError(f"{what}: tools must be a list of tools, got {type(tools).__name__}{hint}")
    return tools


def _mapping(value: object, what: str, of: str) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        raise InertTypeError(f"{what} must be a mapping of {of}, got {type(value).__name__}")
    return value


def _tool_name(data: Mapping[str, Any], what: str) -> str:
    name = data.get("name")
    if not isinstance(name, str):
        raise EffectTableError(f"{what} has no name (a str), got {name!r}"[:200])
    return name


def _apply(fn: FootprintFn | None, arguments: Mapping[str, Any]) -> frozenset[Any] | None:
    if fn is None:
        return None
    try:
        return frozenset(fn(arguments))
    except BaseException:  # noqa: BLE001 - model-written arguments: an unusable footprint is an unknown one
        # BaseException too (a KeyboardInterrupt, a SystemExit the function raised): it ran in
        # the middle of a step, after the stream moved on, and escaping left the turn half-applied
        # (finish() then failed with a KeyError). Unknown overlaps everything, which is safe.
        return None


EffectLike = EffectClass | str | ToolSpec


def _mcp_effect(annotations: Mapping[str, Any]) -> EffectLike:
    """A trusted MCP server's annotations as an effect; only a literal ``true`` counts."""
    read_only = annotations.get("readOnlyHint") is True
    if read_only and annotations.get("destructiveHint") is True:
        return EffectClass.WRITE  # contradictory: a read-only tool cannot destroy; believe neither
    if read_only:
        return ToolSpec(EffectClass.READ_ONLY, speculate=annotations.get("openWorldHint") is False)
    if annotations.get("idempotentHint") is True:
        return EffectClass.IDEMPOTENT
    return EffectClass.WRITE


class EffectTable:
    """Tool name -> :class:`ToolSpec`. Tools missing from the table get ``default``
    (``WRITE`` unless you choose otherwise), so an unknown tool never runs early.

    Args:
        mapping: tool name -> ``EffectClass``, its string value, or a ``ToolSpec`` (or another
            table, whose entries are copied).
        default: the effect class of tools not in ``mapping``.

    Raises:
        EffectTableError: an entry is not an effect class or a ``ToolSpec``.
        InertTypeError: ``mapping`` or ``schemas`` is not a mapping.
    """

    def __init__(
        self,
        mapping: Mapping[str, EffectLike] | EffectTable | None = None,
        default: EffectClass | str = EffectClass.WRITE,
        *,
        schemas: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self.default = ToolSpec(EffectClass.parse(default))
        # Another table's entries copy too (its items() are what a mapping's would be).
        entries = (
            mapping.items()
            if isinstance(mapping, EffectTable)
            else _mapping(
                mapping if mapping is not None else {}, "EffectTable: mapping", "tool names to effects"
            ).items()
        )
        self.schemas: dict[str, Mapping[str, Any]] = dict(
            _mapping(schemas if schemas is not None else {}, "EffectTable: schemas", "tool names to JSON schemas")
        )
        """Tool name -> JSON schema of its parameters, used to type XML-style arguments."""
        self._specs: dict[str, ToolSpec] = {}
        for name, entry in entries:
            if isinstance(entry, ToolSpec):
                self._specs[name] = entry
            elif isinstance(entry, (EffectClass, str)):
                self._specs[name] = ToolSpec(entry)
            else:
                raise EffectTableError(
                    f"effect table entry for {name!r} is {type(entry).__name__}; "
                    "use an EffectClass, its value, or a ToolSpec"
                )

    def spec(self, name: str) -> ToolSpec:
        """The spec of tool ``name`` (the default spec for unknown tools).

        Raises:
            InertTypeError: ``name`` is not a str.
        """
        if not isinstance(name, str):
            raise InertTypeError(f"a tool name is a str, got {type(name).__name__}")
        return self._specs.get(name, self.default)

    def classify(self, name: str) -> EffectClass:
        """The effect class of tool ``name``; unknown tools get the table's default.

        Raises:
            InertTypeError: ``name`` is not a str.
        """
        return self.spec(name).effect

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._specs

    def items(self) -> list[tuple[str, ToolSpec]]:
        """The tools the table names, with their specs."""
        return list(self._specs.items())

    def __repr__(self) -> str:
        entries = ", ".join(f"{n!r}: {s.effect.value!r}" for n, s in self._specs.items())
        return f"EffectTable({{{entries}}}, default={self.default.effect.value!r})"

    @classmethod
    def from_mcp(
        cls, tools: Iterable[Any], *, trusted: bool = False, overrides: Mapping[str, EffectLike] | None = None
    ) -> EffectTable:
        """A table from MCP ``Tool`` objects or their dicts.

        MCP annotations are hints a server makes about itself. Untrusted (the default),
        they never weaken safety: every tool is a write unless ``overrides`` say
        otherwise. With ``trusted=True``, ``readOnlyHint`` makes a tool read-only, and
        it runs on draft tokens only when it declares ``openWorldHint: false`` (MCP's
        default is an open world, whose reads reveal intent); ``idempotentHint`` makes a
        tool idempotent; hints that contradict each other (``readOnlyHint`` with
        ``destructiveHint``) make it a write, the safer reading. Everything else,
        unannotated tools included, is a write. ``overrides`` win either way.

        Each tool's ``inputSchema`` becomes its schema in ``schemas``, so XML-style
        formats type its arguments. Works with both MCP SDK generations
        (``model_dump(by_alias=True)``) and plain dicts, without importing ``mcp``.

        Args:
            tools: MCP ``Tool`` objects, or dicts with ``name``, ``annotations`` and ``inputSchema``.
            trusted: whether to believe the servers' annotations.
            overrides: tool name -> effect, the caller's word, which no hint changes.

        Raises:
            EffectTableError: a bad entry in ``overrides``; a tool without a name.
            InertTypeError: ``tools`` is not a list of tools (or a tool neither a ``Tool`` nor a dict);
                ``trusted`` is not a bool; ``overrides`` is not a mapping.
        """
        mapping: dict[str, EffectLike] = {}
        schemas: dict[str, Mapping[str, Any]] = {}
        if not isinstance(trusted, bool):  # "no" would read as true and believe every server
            raise InertTypeError(f"from_mcp: trusted must be a bool, got {type(trusted).__name__}")
        overrides = _mapping(overrides if overrides is not None else {}, "from_mcp: overrides", "tool names to effects")
        for i, tool in enumerate(_tools(tools, "from_mcp")):
            data = tool.model_dump(by_alias=True) if hasattr(tool, "model_dump") else tool
            if not isinstance(data, Mapping):
                raise InertTypeError(
                    f"from_mcp: tools[{i}] is {type(tool).__name__}; pass MCP Tool objects or dicts "
                    "with name, annotations and inputSchema"
                )
            name = _tool_name(data, f"from_mcp: tools[{i}]")
            schema = data.get("inputSchema")
            if isinstance(schema, Mapping):
                schemas[name] = schema
            annotations = data.get("annotations")
            trusted_hints = annotations if isinstance(annotations, Mapping) else {}
            mapping[name] = _mcp_effect(trusted_hints) if trusted else EffectClass.WRITE
        mapping.update(overrides)
        return cls(mapping, schemas=schemas)

    @classmethod
    def from_openai(cls, tools: Iterable[Mapping[str, Any]], effects: Mapping[str, EffectLike]) -> EffectTable:
        """A table from an OpenAI ``tools`` list and a name -> effect mapping;
        listed tools without an entry in ``effects`` are writes. The tools'
        parameter schemas type the arguments of XML-style formats.

        Raises:
            EffectTableError: a bad entry in ``effects``; a tool without a name.
            InertTypeError: ``tools`` is not a list of dicts, or ``effects`` not a mapping.
        """
        mapping: dict[str, EffectLike] = {}
        schemas: dict[str, Mapping[str, Any]] = {}
        effects = _mapping(effects, "from_openai: effects", "tool names to effects")
        for i, tool in enumerate(_tools(tools, "from_openai")):
            fn = tool.get("function", tool) if isinstance(tool, Mapping) else None
            if not isinstance(fn, Mapping):
                raise InertTypeError(
                    f"from_openai: tools[{i}] is {type(tool).__name__}; pass OpenAI tool dicts "
                    '({"type": "function", "function": {"name": ..., "parameters": ...}})'
                )
            name = _tool_name(fn, f"from_openai: tools[{i}]")
            mapping[name] = EffectClass.WRITE
            if isinstance(fn.get("parameters"), Mapping):
                schemas[name] = fn["parameters"]
        mapping.update(effects)
        return cls(mapping, schemas=schemas)

    @classmethod
    def from_toml(cls, path: str | PathLike[str]) -> EffectTable:
        """A table from a TOML file::

            default = "write"            # optional
            [tools]
            get_weather = "read_only"
            [tools.delete_file]
            effect = "idempotent"
            writes = ["path"]            # argument names whose values are resource keys
            timeout = 5.0                # optional, as are speculate and max_concurrency

        Raises:
            InertTypeError: ``path`` is not a str or path (an int would be read as an open file descriptor).
            EffectTableError: the file is not TOML, or its ``tools`` is not a table, or a bad entry, or
                a key it does not know (a misspelling is refused, never skipped).
            OSError: the file cannot be read (``FileNotFoundError`` when there is none).
        """
        if not isinstance(path, (str, PathLike)):
            raise InertTypeError(f"from_toml: path must be a str or os.PathLike, got {type(path).__name__}")
        try:
            text = read_whole(path, "a TOML effect table")
        except ValueError as e:
            raise EffectTableError(str(e)) from None
        try:
            doc = tomllib.loads(text.decode())
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise EffectTableError(f"{path}: not a TOML effect table: {e}") from None
        except RecursionError:  # tomllib parses arrays and inline tables by recursion
            raise EffectTableError(f"{path}: not a TOML effect table: it nests too deeply") from None
        # A misspelled key is refused, never skipped: `speculat = false` would leave a read
        # speculating, and `[tool]` for `[tools]` would make every tool a write, without a word.
        _known_keys(doc, _TABLE_KEYS, f"{path}")
        tools = doc.get("tools", {})
        if not isinstance(tools, dict):
            raise EffectTableError(f"{path}: tools must be a table of tool names, got {type(tools).__name__}")
        mapping: dict[str, EffectLike] = {}
        for name, entry in tools.items():
            if isinstance(entry, dict):
                _known_keys(entry, _TOOL_KEYS, f"{path}: [tools.{name}]")
                mapping[name] = ToolSpec(
                    entry.get("effect", EffectClass.WRITE),
                    entry.get("reads"),
                    entry.get("writes"),
                    speculate=entry.get("speculate"),
                    timeout=entry.get("timeout"),
                    max_concurrency=entry.get("max_concurrency"),
                )
            else:
                mapping[name] = entry
        return cls(mapping, default=doc.get("default", EffectClass.WRITE))


_TABLE_KEYS = ("default", "tools")
_TOOL_KEYS = ("effect", "reads", "writes", "speculate", "timeout", "max_concurrency")


def _known_keys(table: dict[str, Any], known: tuple[str, ...], where: str) -> None:
    """Refuses a key of an effect table's TOML that it does not know, naming the likely one."""
    for key in table:
        if key not in known:
            close = closest_name(key, list(known))
            hint = f"did you mean {close!r}? " if close else ""
            raise EffectTableError(f"{where}: unknown key {key!r}; {hint}the keys are {', '.join(known)}")
