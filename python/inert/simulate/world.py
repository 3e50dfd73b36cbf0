"""The simulated world: a real in-memory SQLite store that every tool call acts
on, logging each operation with its virtual time, and tools with latencies."""

from __future__ import annotations

import hashlib
import json
import math
import random
import sqlite3
from dataclasses import dataclass
from typing import Any

from ..effects import EffectClass, ToolSpec
from ..errors import InertValueError

__all__ = ["Latency", "SimTool", "World"]

Z99 = 2.3263478740408408  # the standard normal's 99th percentile
_MAX_EXPONENT = 700.0  # math.exp overflows past about 709.78


@dataclass(frozen=True)
class Latency:
    """A tool's latency in seconds: fixed (``p99 == median``) or lognormal with that median and p99."""

    median: float
    p99: float | None = None

    def __post_init__(self) -> None:
        """Refuses what virtual time cannot run on: a NaN latency never came due, and the
        simulated turn ran for ever.

        Raises:
            InertValueError: ``median`` or ``p99`` is not a finite number of seconds, at least 0.
        """
        for field, value in (("median", self.median), ("p99", self.p99)):
            if value is None and field == "p99":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not _finite(value) or value < 0:
                raise InertValueError(
                    f"Latency {field} must be a finite number of seconds, at least 0, got {value!r}"[:200]
                )

    def sample(self, rng: random.Random) -> float:
        """One latency drawn from ``rng`` (the median when fixed, or when the median is 0:
        such a lognormal is 0 throughout). A draw far in the tail is capped short of
        ``math.exp``'s overflow (it may still be ``inf`` seconds: a call that never ends)."""
        if self.p99 is None or self.p99 <= self.median or self.median == 0:
            return self.median
        sigma = math.log(self.p99 / self.median) / Z99
        return self.median * math.exp(min(sigma * rng.gauss(0.0, 1.0), _MAX_EXPONENT))


@dataclass(frozen=True)
class SimTool:
    """A tool of the simulation. ``kind`` is what it does to the resource named by
    its ``key`` argument: ``read`` (observed when it starts), ``write`` or
    ``delete`` (applied when it finishes). A write or delete with a ``prepare``
    latency is two-phase: it prepares (stages, changing nothing) for that long, then
    commits for ``latency`` and applies its effect at the commit's end."""

    name: str
    kind: str
    latency: Latency
    key: str = "key"
    prepare: Latency | None = None

    @property
    def two_phase(self) -> bool:
        """Whether it prepares before it commits (a write or delete with a ``prepare`` latency)."""
        return self.prepare is not None and self.kind != "read"

    @property
    def effect(self) -> EffectClass:
        """Its effect class: reads are read-only, writes writes, deletes idempotent (deleting twice is harmless)."""
        return {"read": EffectClass.READ_ONLY, "write": EffectClass.WRITE, "delete": EffectClass.IDEMPOTENT}[self.kind]

    def spec(self) -> ToolSpec:
        """Its entry in the effect table: its effect, and the resource named by its ``key`` argument as
        its footprint, so calls on other resources never wait for it."""
        if self.kind == "read":
            return ToolSpec(self.effect, reads=self.key)
        return ToolSpec(self.effect, reads=self.key, writes=self.key)

    def duration(self, seed: int, arguments: dict[str, Any], phase: str = "commit") -> float:
        """The same call takes the same time under every policy: seeded by the call, not by when it runs.
        ``phase`` picks a two-phase tool's prepare latency or its commit latency."""
        call = [seed, self.name, arguments] if phase == "commit" else [seed, self.name, arguments, phase]
        ident = json.dumps(call, sort_keys=True).encode()
        latency = self.prepare if phase == "prepare" and self.prepare is not None else self.latency
        return latency.sample(random.Random(int.from_bytes(hashlib.sha256(ident).digest()[:8], "big")))


class World:
    """Rows keyed by resource name, and the log of every operation on them."""

    def __init__(self, rows: dict[str, str] | None = None) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE TABLE rows (name TEXT PRIMARY KEY, value TEXT)")
        self.db.execute("CREATE TABLE ops (t REAL, op TEXT, name TEXT, outcome TEXT)")
        self.db.executemany("INSERT INTO rows VALUES (?, ?)", (rows or {}).items())

    def read(self, t: float, name: str) -> str | None:
        """The row's value (``None`` when missing), logged at time ``t``."""
        row = self.db.execute("SELECT value FROM rows WHERE name = ?", (name,)).fetchone()
        self.db.execute("INSERT INTO ops VALUES (?, 'read', ?, ?)", (t, name, "found" if row else "missing"))
        return None if row is None else str(row[0])

    def write(self, t: float, name: str, value: str) -> None:
        """Sets the row, logged at time ``t``."""
        self.db.execute("INSERT OR REPLACE INTO rows VALUES (?, ?)", (name, value))
        self.db.execute("INSERT INTO ops VALUES (?, 'write', ?, 'ok')", (t, name))

    def delete(self, t: float, name: str) -> None:
        """Removes the row if there is one, logged at time ``t``."""
        gone = self.db.execute("DELETE FROM rows WHERE name = ?", (name,)).rowcount
        self.db.execute("INSERT INTO ops VALUES (?, 'delete', ?, ?)", (t, name, "deleted" if gone else "missing"))

    def rows(self) -> dict[str, str]:
        """Every row, by name: a world whose rows differ from the sequential reference diverged."""
        return dict(self.db.execute("SELECT name, value FROM rows ORDER BY name"))

    def apply(self, tool: SimTool, arguments: dict[str, Any], t: float) -> Any:
        """Runs ``tool`` at once (the sequential reference world)."""
        name = str(arguments.get(tool.key, ""))
        if tool.kind == "read":
            return self.read(t, name)
        if tool.kind == "write":
            self.write(t, name, json.dumps(arguments, sort_keys=True))
        else:
            self.delete(t, name)
        return "ok"


def _finite(value: float) -> bool:
    """``math.isfinite``, for an int past a float's range too (false; isfinite raises)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False
