"""Instructions per sequence-step of StreamBatch (and of a Python loop over TokenStreams),
counted by callgrind, with a breakdown by source file of the Rust core.

    python benches/callgrind_batch.py [--rows 512] [--workload batch|loop|garbled] [--k 8]

Runs the workload of bench_serving.py's test_batch_step under valgrind twice, with
``--short`` and ``--long`` measured steps after the same setup (the same steps are built
in both runs), and divides the difference by (long - short) * rows: setup, imports and
interpreter start cancel out. The breakdown reads the second run's profile (self cost per
innermost source file, inlined code attributed to the file it was written in): build the
extension with line tables for it to name Rust files, e.g.

    CARGO_PROFILE_RELEASE_DEBUG=line-tables-only pip install -q -e .

(line tables change no instruction). Without them the Rust core shows as one object.
Needs valgrind (apt-get install valgrind).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent

WORKLOAD = r"""
import sys
sys.path.insert(0, {here!r})
import numpy as np
import inert
import bench_serving as b

rows, measured, total, kind = {rows}, {measured}, {total}, {kind!r}
WARM = 40  # past the first growth of every buffer: a serving sequence is hundreds of tokens long
steps = b.speculative(rows, WARM + total)
seqs = np.arange(rows, dtype=np.int64)
accepted = np.full(rows, 6, dtype=np.int64)
if kind == "garbled":
    corr = np.full(rows, b.STREAM_IDS[0], dtype=np.int64)
    ws = b.windows(rows)  # STEPS windows, fewer than the run's steps: cycled
    steps = [(ws[i % len(ws)], corr) for i in range(WARM + total)]
if kind in ("batch", "garbled"):
    batch = inert.StreamBatch("hermes", b.VOCAB)
    for s in range(rows):
        batch.add(s, f"turn-{{s}}")
    for tokens, corrections in steps[: WARM + measured]:
        batch.draft(seqs, tokens)
        batch.verify(seqs, accepted, corrections)
else:
    streams = [inert.TokenStream("hermes", f"turn-{{s}}", vocab=b.VOCAB) for s in range(rows)]
    lists = [(t.tolist(), c.tolist()) for t, c in steps]
    for tokens, corrections in lists[: WARM + measured]:
        for stream, row in zip(streams, tokens):
            stream.draft(row)
        for stream, c in zip(streams, corrections):
            stream.verify(6, c)
"""


def run(rows: int, measured: int, total: int, kind: str, out: Path) -> int:
    script = WORKLOAD.format(here=str(HERE), rows=rows, measured=measured, total=total, kind=kind)
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--dump-instr=no"]
    if kind != "loop":
        # Only the two calls of a step: setup (a 150k vocabulary, hashed with random seeds)
        # would otherwise add noise of the order of the difference.
        cmd += [
            "--collect-atstart=no",
            "--toggle-collect=*PyStreamBatch::__pymethod_draft__*",
            "--toggle-collect=*PyStreamBatch::__pymethod_verify__*",
        ]
    env = dict(os.environ, PYTHONHASHSEED="0")
    res = subprocess.run([*cmd, sys.executable, "-c", script], capture_output=True, text=True, check=False, env=env)
    m = re.search(r"Collected : (\d+)", res.stderr)
    if res.returncode != 0 or not m:
        sys.exit(f"callgrind failed ({res.returncode}):\n{res.stderr[-3000:]}")
    return int(m.group(1))


def by_file(profile: Path) -> dict[str, int]:
    """Self instructions per innermost source file (fl=, fi=, fe=), calls' inclusive lines skipped."""
    names: dict[str, str] = {}
    costs: dict[str, int] = defaultdict(int)
    current, skip = "?", False
    obj, fl = "?", "?"
    for line in profile.read_text(errors="replace").splitlines():
        if not line:
            continue
        head = line.split("=", 1)[0]
        if head in ("cfl", "cfi", "cob"):  # name a file or object first seen in a call
            m = re.match(r"\w+=\((\d+)\) (.*)", line)
            if m:
                names[("o" if head == "cob" else "f") + m.group(1)] = m.group(2)
            continue
        if head in ("fl", "fi", "fe", "ob"):
            m = re.match(r"\w+=\((\d+)\)(?: (.*))?", line)
            if m:
                key = head[0] + m.group(1) if head == "ob" else "f" + m.group(1)
                if m.group(2):
                    names[key] = m.group(2)
                name = names.get(key, "?")
            else:
                name = line.split("=", 1)[1]
            if head == "ob":
                obj = name
                continue
            current = name if name not in ("???", "") else obj
            if head == "fl":
                fl = current
            continue
        if head == "fn":
            current = fl  # an inlined file (fi=, fe=) lasts to the next function
            continue
        if head == "calls":
            skip = True
            continue
        if line[0].isdigit() or line[0] in "+-*":
            if skip:
                skip = False
                continue
            parts = line.split()
            if len(parts) >= 2:
                costs[current] += int(parts[1])
    return costs


def label(path: str) -> str:
    """A short name: the core's files by their path under rust/, everything else by library."""
    if "/rust/" in path and ".cargo" not in path:
        return "inert " + path.split("/rust/", 1)[1]
    for lib, name in (
        ("pyo3", "pyo3"),
        ("/rustc/", "Rust std/core"),
        (".cargo/registry", "crates"),
        ("libc", "libc"),
        ("python3", "CPython"),
        ("Python", "CPython"),
        ("numpy", "numpy"),
        ("_core", "inert (no line tables)"),
    ):
        if lib in path:
            return name
    return Path(path).name or path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=512)
    p.add_argument("--workload", choices=["batch", "loop", "garbled"], default="batch")
    p.add_argument("--short", type=int, default=4)
    p.add_argument("--long", type=int, default=16)
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--keep", type=Path, help="a folder to copy both profiles to (for callgrind_annotate)")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        short = run(a.rows, a.short, a.long, a.workload, Path(tmp, "short.out"))
        long = run(a.rows, a.long, a.long, a.workload, Path(tmp, "long.out"))
        per = (long - short) / ((a.long - a.short) * a.rows)
        print(
            f"{a.workload}: {a.rows} sequences x 8-token drafts, 6 accepted + correction: "
            f"{per:,.0f} instructions per sequence-step (callgrind)"
        )
        lo, hi = by_file(Path(tmp, "short.out")), by_file(Path(tmp, "long.out"))
        if a.keep:
            a.keep.mkdir(parents=True, exist_ok=True)
            for name in ("short.out", "long.out"):
                shutil.copy(Path(tmp, name), a.keep / name)
    grouped: dict[str, float] = defaultdict(float)
    for f in set(lo) | set(hi):
        grouped[label(f)] += (hi.get(f, 0) - lo.get(f, 0)) / ((a.long - a.short) * a.rows)
    rows = sorted(grouped.items(), key=lambda kv: -abs(kv[1]))
    shown = sum(v for _, v in rows)
    print(f"{'where (self cost, inlined code by its own file)':<52} {'instr':>8}")
    for name, v in rows[: a.top]:
        if abs(v) >= 0.5:
            print(f"  {name:<50} {v:8.0f}")
    print(f"  {'(all)':<50} {shown:8.0f}")


if __name__ == "__main__":
    main()
