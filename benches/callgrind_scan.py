"""Instructions the scanner spends per token and per block-body parse, counted by callgrind
on the serving bench's stream (bench_serving.py: hermes prose, a call block every ~70 tokens).

    python benches/callgrind_scan.py

Builds the core's unit tests in release and runs the workloads of rust/scan/cost.rs under
valgrind, collecting only inside their measured functions, twice with different repeat
counts (INERT_COST_REPS); the difference divided by the extra tokens (or parses) is the
figure, so setup cancels out. Pure Rust: no Python extension, no interpreter.
Needs valgrind (apt-get install valgrind).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROSE = "The forecast says light rain later today, so take an umbrella. "
BLOCK = '<tool_call>\n{"name": "search", "arguments": {"q": "weather in Paris"}}\n</tool_call>\n'
BODY = BLOCK.removeprefix("<tool_call>").split("</tool_call>")[0]


def count(text: str) -> int:
    return len(re.findall(r"\w+|\s+|[^\w\s]", text))


# (what, test, measured function, units per repetition)
WORKLOADS = [
    ("per prose token", "prose_tokens", "scan_tokens", count(PROSE * 30)),
    ("per body token", "body_tokens", "scan_tokens", count(BODY * 30)),
    ("per stream token", "stream_tokens", "scan_tokens", count((PROSE * 3 + BLOCK) * 4)),
    ("per body parse", "body_parses", "parse_body", 1),
]


def test_binary() -> str:
    """Builds the unit tests in release; returns the test executable."""
    cmd = ["cargo", "test", "--release", "--lib", "--no-run", "--message-format=json"]
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        sys.exit(f"cargo failed:\n{res.stderr[-3000:]}")
    for line in res.stdout.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg.get("executable") and msg["target"]["name"] == "_core":
            return str(msg["executable"])
    sys.exit("cargo built no test executable")


def collected(exe: str, test: str, function: str, reps: int) -> int:
    cmd = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        "--collect-atstart=no",
        f"--toggle-collect=*scan::cost::{function}*",
        exe,
        "--exact",
        f"scan::cost::{test}",
        "--test-threads=1",
    ]
    env = dict(os.environ, INERT_COST_REPS=str(reps))
    res = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    m = re.search(r"Collected : (\d+)", res.stderr)
    if res.returncode != 0 or not m:
        sys.exit(f"callgrind failed ({res.returncode}):\n{res.stderr[-3000:]}")
    return int(m.group(1))


def main() -> None:
    exe = test_binary()
    low, high = 10, 30
    for what, test, function, units in WORKLOADS:
        diff = collected(exe, test, function, high) - collected(exe, test, function, low)
        print(f"{what:>18}: {diff / ((high - low) * units):8,.0f} instructions")


if __name__ == "__main__":
    main()
