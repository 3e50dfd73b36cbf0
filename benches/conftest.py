"""Prints the ratios the targets are stated in, from medians measured in this one run."""

from __future__ import annotations

from typing import Any

MEDIANS: dict[str, float] = {}


def record(benchmark: Any, name: str, per: int = 1) -> None:
    """Remembers a benchmark's median, divided by ``per`` (e.g. steps per round)."""
    MEDIANS[name] = benchmark.stats.stats.median / per


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not MEDIANS:
        return
    tr = terminalreporter
    tr.section("inert: per-step medians and ratios (same run)")
    for name, v in sorted(MEDIANS.items()):
        tr.write_line(f"{name:<34} {v * 1e6:9.3f} us")
    for impl in ("core", "orchestrator", "baseline_rescan"):
        short, long = MEDIANS.get(f"{impl}@1k"), MEDIANS.get(f"{impl}@64k")
        if short and long:
            tr.write_line(f"{impl:<16} 64k / 1k = {long / short:6.2f}   (flat when ~1)")
    for n in ("1k", "64k"):
        core, orch, base = (MEDIANS.get(f"{i}@{n}") for i in ("core", "orchestrator", "baseline_rescan"))
        if core and orch:
            tr.write_line(f"@{n}: orchestrator / core = {orch / core:6.2f}")
        if core and base:
            tr.write_line(f"@{n}: plain-Python rescan / core = {base / core:8.2f}")
