"""Prints the ratios the targets are stated in, from medians measured in this one run."""

from __future__ import annotations

from typing import Any

MEDIANS: dict[str, float] = {}
FORMAT_MEDIANS: dict[tuple[str, str], float] = {}
PARSE_MBPS: dict[str, float] = {}
THROUGHPUT: dict[tuple[str, int], float] = {}
"""(journal kind, workers) -> intents + outcomes per second (bench_journal.py)."""
JOURNAL_NOTES: dict[str, str] = {}
MEANS: dict[str, float] = {}
"""Mean seconds per step, where the mean differs from the median on purpose (bench_runtime.py)."""
RUNTIME: dict[str, float] = {}
"""One-off figures of a whole turn (bench_runtime.py)."""


def record(benchmark: Any, name: str, per: int = 1) -> None:
    """Remembers a benchmark's median, divided by ``per`` (e.g. steps per round)."""
    MEDIANS[name] = benchmark.stats.stats.median / per


def _journal_summary(tr: Any) -> None:
    if THROUGHPUT:
        tr.section(
            "inert: journal throughput (intents + outcomes per second; each worker a thread with its own journal)"
        )
        for (kind, workers), rate in sorted(THROUGHPUT.items()):
            note = f"   ({JOURNAL_NOTES[kind]})" if kind in JOURNAL_NOTES else ""
            tr.write_line(f"{kind:<9} {workers} worker{'s' if workers > 1 else ' '}  {rate:9.0f} /s{note}")
    memory = MEDIANS.get("journal_turn_memory")
    if memory and "journal_turn_postgres" in MEDIANS:
        extra = MEDIANS["journal_turn_postgres"] - memory
        tr.write_line(
            f"PostgreSQL journal adds {extra * 1e6:.0f} us per dispatched write "
            f"({JOURNAL_NOTES.get('postgres', 'PostgreSQL')})"
        )


def _runtime_summary(tr: Any) -> None:
    short, long = MEDIANS.get("calls_step@1k"), MEDIANS.get("calls_step@64k")
    if short and long:
        tr.section("inert: the runtime (Orchestrator, read_eager, steps that close calls)")
        m_short, m_long = MEANS.get("calls_step@1k", 0.0), MEANS.get("calls_step@64k", 0.0)
        tr.write_line(f"step median  1k {short * 1e6:8.2f} us   64k {long * 1e6:8.2f} us   64k/1k {long / short:5.2f}")
        if m_short and m_long:
            tr.write_line(
                f"step mean    1k {m_short * 1e6:8.2f} us   64k {m_long * 1e6:8.2f} us   "
                f"64k/1k {m_long / m_short:5.2f}   (target <= 1.2)"
            )
    few, many = MEDIANS.get("finish@100"), MEDIANS.get("finish@800")
    if few and many:
        tr.write_line(
            f"finish() 100 calls {few * 1e3:8.2f} ms   800 calls {many * 1e3:8.2f} ms   "
            f"ratio {many / few:5.2f} for 8x the calls (target <= 10)"
        )
    if "tiny_blocks_s" in RUNTIME:
        tr.write_line(
            f"8000 tiny blocks ({RUNTIME['tiny_blocks_text_kb']:.0f} KB of text): "
            f"{RUNTIME['tiny_blocks_s']:.2f} s, "
            f"peak {RUNTIME['tiny_blocks_peak_mb']:.1f} MB of Python memory "
            "(targets < 2 s, < 100 MB)"
        )


def pytest_terminal_summary(terminalreporter: Any) -> None:
    tr = terminalreporter
    _journal_summary(tr)
    _runtime_summary(tr)
    if FORMAT_MEDIANS:
        tr.section("inert: per-step medians by format (core, k=8) and parse throughput")
        hermes = FORMAT_MEDIANS.get(("hermes", "1k"))
        for fmt in sorted({f for f, _ in FORMAT_MEDIANS}):
            short, long = FORMAT_MEDIANS.get((fmt, "1k")), FORMAT_MEDIANS.get((fmt, "64k"))
            parts = [f"{fmt:<15}"]
            if short:
                parts.append(f"1k {short * 1e6:7.3f} us")
            if long:
                parts.append(f"64k {long * 1e6:7.3f} us")
            if short and long:
                parts.append(f"64k/1k {long / short:5.2f}")
            if short and hermes:
                parts.append(f"vs hermes {short / hermes:5.2f}x")
            if fmt in PARSE_MBPS:
                parts.append(f"parse {PARSE_MBPS[fmt]:7.1f} MB/s")
            tr.write_line("  ".join(parts))
    if not MEDIANS:
        return
    tr.section("inert: per-step medians and ratios (same run)")
    for name, v in sorted(MEDIANS.items()):
        if name.startswith("fmt:"):
            continue
        tr.write_line(f"{name:<34} {v * 1e6:9.3f} us")
    if {"journal_turn_memory", "journal_turn_sqlite"} <= MEDIANS.keys():
        extra = MEDIANS["journal_turn_sqlite"] - MEDIANS["journal_turn_memory"]
        tr.write_line(f"SQLite journal adds {extra * 1e6:.0f} us per dispatched write (WAL, synchronous=FULL)")
    for impl in ("core", "orchestrator", "baseline_rescan"):
        short, long = MEDIANS.get(f"{impl}@1k"), MEDIANS.get(f"{impl}@64k")
        if short and long:
            tr.write_line(f"{impl:<16} 64k / 1k = {long / short:6.2f}   (flat when ~1)")
    _serving(tr)
    _streaming(tr)
    _long_blocks(tr)
    for n in ("1k", "64k"):
        core, orch, base = (MEDIANS.get(f"{i}@{n}") for i in ("core", "orchestrator", "baseline_rescan"))
        if core and orch:
            tr.write_line(f"@{n}: orchestrator / core = {orch / core:6.2f}")
        if core and base:
            tr.write_line(f"@{n}: plain-Python rescan / core = {base / core:8.2f}")


def _long_blocks(tr: Any) -> None:
    """A long block's rejected closer and many blocks in one piece (bench_long_blocks.py)."""
    m = MEDIANS
    for tail in ("closer", "closer+short"):
        short, long = m.get(f"long_block:{tail}@64k"), m.get(f"long_block:{tail}@1024k")
        if short and long:
            tr.write_line(
                f"rejected {tail:<12} step: 64 KB body {short * 1e6:6.2f} us, 1 MB body {long * 1e6:6.2f} us"
                f"   1 MB / 64 KB = {long / short:5.2f}   (flat when ~1)"
            )
    few, many = m.get("one_piece_blocks@10000"), m.get("one_piece_blocks@80000")
    if few and many:
        tr.write_line(
            f"blocks in one piece, per block: 10k {few * 1e6:6.2f} us, 80k {many * 1e6:6.2f} us"
            f"   80k / 10k = {many / few:5.2f}   (linear when ~1)"
        )


def _streaming(tr: Any) -> None:
    """Streaming output's cost per step (bench_streaming.py), from this run's medians."""
    m = MEDIANS
    off, on, on64 = (m.get(f"streaming:stream_{k}") for k in ("off@1k", "on@1k", "on@64k"))
    if off and on:
        tr.write_line(
            f"TokenStream k=8 step: {off * 1e6:6.3f} us, streaming {on * 1e6:6.3f} us   "
            f"streaming / plain = {on / off:5.2f}"
        )
    if on and on64:
        tr.write_line(f"streaming step after 64k / after 1k accepted tokens = {on64 / on:5.2f}   (flat when ~1)")
    o_off, o_on = m.get("streaming:orchestrator_off"), m.get("streaming:orchestrator_on")
    if o_off and o_on:
        tr.write_line(
            f"Orchestrator k=8 step: {o_off * 1e6:6.3f} us, streaming {o_on * 1e6:6.3f} us   "
            f"streaming / plain = {o_on / o_off:5.2f}"
        )
    for kind in ("code", "tags"):
        short, long = m.get(f"streaming:xml_{kind}_on@16k"), m.get(f"streaming:xml_{kind}_on@256k")
        if short and long:
            tr.write_line(
                f"qwen3_coder value of {kind}: {short * 1e9:6.1f} ns/byte at 16 KB, "
                f"{long * 1e9:6.1f} at 256 KB   256k/16k = {long / short:5.2f}   (linear when ~1)"
            )
    few, many = m.get("streaming:calls@2000"), m.get("streaming:calls@32000")
    if few and many:
        tr.write_line(
            f"one pythonic block of calls, per byte: 32k calls / 2k calls = {many / few:5.2f}   (linear when ~1)"
        )
    x_off, x_on = m.get("streaming:xml_code_off@256k"), m.get("streaming:xml_code_on@256k")
    if x_off and x_on:
        tr.write_line(f"qwen3_coder 256 KB value streamed / not streamed = {x_on / x_off:5.2f}")


def _serving(tr: Any) -> None:
    """The serving-surface targets (bench_serving.py), from this run's medians."""
    m = MEDIANS
    if {"attach:none", "attach:shared_150k"} <= m.keys():
        tr.write_line(
            f"attach a 150k Vocabulary / build with none = {m['attach:shared_150k'] / m['attach:none']:6.2f}"
            "   (target <= 3)"
        )
    if "stream:numpy_step" in m:
        step = m["stream:numpy_step"]
        tr.write_line(f"TokenStream numpy k=8 draft+verify       = {step * 1e6:6.3f} us   (target <= 1)")
    for n in (64, 512):
        if f"batch:{n}" in m:
            step = m[f"batch:{n}"]
            target = "   (target <= 100 us, <= 0.2 us)" if n == 512 else ""
            tr.write_line(
                f"StreamBatch {n:>3} x 8: {step * 1e6:8.1f} us per step, "
                f"{step / n * 1e6:6.3f} us per sequence-step{target}"
            )
    if "batch_garbled:512" in m:
        step = m["batch_garbled:512"]
        tr.write_line(
            f"StreamBatch 512 x 8, garbled text (all block body): {step * 1e6:8.1f} us per step, "
            f"{step / 512 * 1e6:6.3f} us per sequence-step"
        )
    if {"batch:64", "batch:512"} <= m.keys():
        flat = (m["batch:512"] / 512) / (m["batch:64"] / 64)
        tr.write_line(f"StreamBatch per sequence-step, 512 / 64  = {flat:6.2f}   (flat when ~1)")
    if {"batch:512", "loop:512"} <= m.keys():
        tr.write_line(
            f"Python loop over 512 TokenStreams / StreamBatch = {m['loop:512'] / m['batch:512']:6.1f}x   (target >= 10)"
        )
    if {"batch:512", "loop:512", "loop_floor:512"} <= m.keys():
        # Loop and batch run the same core per sequence: loop / batch = 1 + overhead / batch,
        # where overhead (the loop's own cost per sequence) is at least the floor.
        floor, overhead = m["loop_floor:512"] / 512, (m["loop:512"] - m["batch:512"]) / 512
        tr.write_line(
            f"Python loop floor (two empty calls per sequence) = {floor * 1e6:6.3f} us, loop - StreamBatch = "
            f"{overhead * 1e6:6.3f} us per sequence-step: 10x needs StreamBatch <= overhead / 9 = "
            f"{overhead / 9 * 1e6:5.3f} us"
        )
    orch = m.get("orchestrator:numpy_step")
    if orch:
        tr.write_line(f"Orchestrator numpy k=8, no block closing = {orch * 1e6:6.3f} us   (target <= 3)")
    bo = m.get("batch_orchestrator:64")
    calls = MEANS.get("batch_orchestrator:calls_per_step")
    if bo:
        per_call = f", {bo / calls * 1e6:8.1f} us per closed call" if calls else ""
        tr.write_line(
            f"BatchOrchestrator 64 x 8: {bo * 1e6:8.1f} us per step, "
            f"{bo / 64 * 1e6:6.2f} us per sequence-step{per_call}"
        )
