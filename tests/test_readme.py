"""The README's inference-loop example runs and prints what it says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_example_runs_as_documented() -> None:
    text = README.read_text()
    code = re.search(r"```python\n(.*?)```", text, re.DOTALL)
    assert code, "the README has a python example"
    expected = [line[2:] for line in code.group(1).splitlines() if line.startswith("# ") and " " in line[2:]]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code.group(1), str(README), "exec"), {})  # noqa: S102 - the README's own example, run as written
    assert out.getvalue().splitlines() == expected[-2:]


def test_quickstart_has_exactly_two_commands() -> None:
    block = README.read_text().split("## Quickstart", 1)[1].split("```", 2)[1]
    commands = [line for line in block.splitlines() if line.strip()]
    assert len(commands) == 2
    ci = (README.parent / ".ci" / "run").read_text()
    assert commands[1] in ci.splitlines(), "CI runs exactly the README's test command"
