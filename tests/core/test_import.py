"""The package imports wherever Python runs it: docstrings stripped (-OO), and
(in CI) the newest CPython the machine has, from the one abi3 wheel."""

from __future__ import annotations

import subprocess
import sys


def test_import_and_a_turn_under_optimize_2() -> None:
    """-OO strips docstrings; nothing in inert may depend on them."""
    code = (
        "import inert\n"
        "orch = inert.Orchestrator({'f': 'read_only'}, {'f': lambda: 1}, turn_key='t')\n"
        'orch.draft([\'<tool_call>{"name": "f"}</tool_call>\'])\n'
        "orch.verify(1)\n"
        "assert orch.finish().results[0].result == 1\n"
        "assert inert.Orchestrator.__doc__ is None\n"
    )
    done = subprocess.run([sys.executable, "-OO", "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
