"""`inert simulate`: sanity checks of the model, and the guarantees on every seed."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

import inert
from inert.cli import main
from inert.simulate import (AGENTS, MODELS, POLICIES, ModelProfile, Workload, decode, default_workloads,
                            load_workloads, run_turn, simulate, tokenize)
from inert.simulate.clock import VirtualLoop


@pytest.mark.parametrize(("alpha", "k"), [(0.6, 4), (0.8, 5), (0.9, 7)])
def test_no_tools_mean_tokens_per_step_match_the_analytic_value(alpha: float, k: int) -> None:
    import random

    tokens = tokenize("plain prose without any tool calls, " * 400)
    profile = ModelProfile("m", alpha=alpha, k=k)
    loop = VirtualLoop()
    got = decode(tokens, profile, random.Random(7), lambda w: None, lambda n, c: None, loop.run_until)
    tau = (1 - alpha ** (k + 1)) / (1 - alpha)
    per_step = got.tokens / got.steps
    # Per-step count has variance <= (k+1)^2/4; the mean over thousands of steps is within 4 standard errors.
    assert abs(per_step - tau) < 4 * (k + 1) / 2 / math.sqrt(got.steps), (per_step, tau, got.steps)


def test_with_alpha_one_no_policy_diverges() -> None:
    for w in default_workloads():
        perfect = replace(w, model=replace(w.model, alpha=1.0))
        for policy in POLICIES:
            for seed in range(5):
                out = run_turn(perfect, policy, seed)
                assert not out.diverged and out.orphans == 0 and out.wasted_reads == 0, (w.name, policy, seed)


def test_on_every_seed_read_eager_beats_defer_beats_end_of_turn() -> None:
    for w in default_workloads():
        for seed in range(25):
            eot, defer, eager = (run_turn(w, p, seed).latency for p in ("end_of_turn", "defer", "read_eager"))
            assert eager <= defer + 1e-12 <= eot + 2e-12, (w.name, seed, eager, defer, eot)


def test_only_eager_unsafe_corrupts_the_world() -> None:
    summaries = simulate(default_workloads(), seeds=30)
    for s in summaries:
        if s.policy != "eager_unsafe":
            assert (s.orphans, s.stale_reads, s.diverged) == (0, 0, 0), s
    assert sum(s.orphans + s.stale_reads + s.diverged for s in summaries if s.policy == "eager_unsafe") > 0


def test_deterministic_from_the_seed() -> None:
    w = Workload(MODELS["8b-h100"], AGENTS["incident"])
    assert run_turn(w, "eager_unsafe", 3) == run_turn(w, "eager_unsafe", 3)


def test_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--seeds", "5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["safe"] and len(out["summaries"]) == len(default_workloads()) * 4


def test_cli_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--seeds", "5"]) == 0
    text = capsys.readouterr().out
    assert "end_of_turn, defer and read_eager: no orphans, no stale reads, no diverged world" in text
    assert "8b-h100 / incident" in text


def test_plot(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the optional plot extra (matplotlib) is not installed")
    png = tmp_path / "sim.png"
    assert main(["simulate", "--seeds", "2", "--plot", str(png), "--json"]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_custom_workloads_from_toml(tmp_path: Path) -> None:
    path = tmp_path / "w.toml"
    path.write_text(
        "[models.fast]\nalpha = 0.7\nk = 4\nverify_s = 0.004\n"
        "[agents.lookup]\ntranscript = '''<tool_call>{\"name\": \"get\", \"arguments\": {\"key\": \"a\"}}</tool_call> ok'''\n"
        "rows = { a = \"1\" }\n"
        "[agents.lookup.tools.get]\nkind = \"read\"\nmedian_s = 0.05\np99_s = 0.4\n"
    )
    (w,) = load_workloads(path)
    assert (w.model.alpha, w.agent.name, w.agent.tools["get"].effect) == (0.7, "lookup", inert.EffectClass.READ_ONLY)
    assert main(["simulate", "--workloads", str(path), "--seeds", "3", "--json"]) == 0
    bad = tmp_path / "bad.toml"
    bad.write_text("[agents.x]\ntools = 3\n")
    with pytest.raises(inert.InertValueError, match=r"bad\.toml: agents\.x\."):
        load_workloads(bad)
