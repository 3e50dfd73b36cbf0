"""`inert simulate`: sanity checks of the model, and the guarantees on every seed."""

from __future__ import annotations

import itertools
import json
import math
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import inert
from inert.cli import main
from inert.simulate import (
    AGENTS,
    DEPTH_AGENTS,
    DRAFTERS,
    MODELS,
    POLICIES,
    ModelProfile,
    Workload,
    call_spans,
    decode,
    default_workloads,
    load_workloads,
    play_turn,
    run_turn,
    simulate,
    tokenize,
)
from inert.simulate.clock import VirtualLoop


@pytest.mark.parametrize(("alpha", "k"), [(0.6, 4), (0.8, 5), (0.9, 7)])
def test_no_tools_mean_tokens_per_step_match_the_analytic_value(alpha: float, k: int) -> None:
    tokens = tokenize("plain prose without any tool calls, " * 400)
    profile = ModelProfile("m", alpha=alpha, k=k)
    loop = VirtualLoop()
    got = decode(tokens, profile, random.Random(7), lambda w: None, lambda n, c: None, loop.run_until)
    tau = (1 - alpha ** (k + 1)) / (1 - alpha)
    per_step = got.tokens / got.steps
    # Per-step count has variance <= (k+1)^2/4; the mean over thousands of steps is within 4 standard errors.
    assert abs(per_step - tau) < 4 * (k + 1) / 2 / math.sqrt(got.steps), (per_step, tau, got.steps)


def test_a_whole_call_drafter_drafts_each_call_in_one_window_right_at_its_accuracy() -> None:
    w = Workload(DRAFTERS["call-model"], AGENTS["coding-staged"])
    spans = call_spans(w)
    tokens = tokenize(w.agent.transcript)
    steps: list[tuple[int, int, int]] = []  # (first token, tokens drafted, tokens accepted) per step
    drafted = 0

    def draft(window: list[str]) -> None:
        nonlocal drafted
        drafted = len(window)

    def verify(n: int, correction: str | None) -> None:
        start = steps[-1][0] + steps[-1][2] + 1 if steps else 0
        steps.append((start, drafted, n))

    tried = right = 0
    for seed in range(400):
        steps.clear()
        decode(tokens, w.model, random.Random(seed), draft, verify, VirtualLoop().run_until, calls=spans)
        for pos, n_drafted, n_accepted in steps:
            reached = [(s, e) for s, e in spans if e > pos and s < pos + n_drafted]
            if reached:
                start, end = reached[0]
                assert pos + n_drafted == end, "a window that reaches a call ends at the call's last token"
                if pos <= start <= pos + n_accepted:  # the whole call was drafted and judged
                    tried += 1
                    right += pos + n_accepted == end
    accuracy = DRAFTERS["call-model"].call_accuracy
    assert accuracy is not None and abs(right / tried - accuracy) < 0.04, (right, tried)


def test_a_deeper_window_under_batch_load_makes_each_verify_step_longer() -> None:
    tokens = tokenize("plain prose without any tool calls, " * 50)
    ends = []
    for k in (4, 64):
        profile = ModelProfile("m", alpha=1.0, k=k, verify_s=0.01, draft_s=0.0, verify_per_token_s=0.001)
        got = decode(tokens, profile, random.Random(1), lambda w: None, lambda n, c: None, VirtualLoop().run_until)
        assert math.isclose(got.end, 0.01 * got.steps + 0.001 * got.drafted), (got.end, got.steps, got.drafted)
        ends.append(got.end / got.steps)
    assert ends[1] > ends[0]


def test_no_call_starts_more_than_one_verify_step_ahead_of_its_acceptance() -> None:
    """Where read_eager's saving comes from, and its bound: a call starts early only from the
    draft its block closes in, and that draft is verified in the next step."""
    for name in ("suffix-batch32", "call-model", "eagle"):
        for agent in DEPTH_AGENTS:
            for k in (4, 64):
                w = Workload(replace(DRAFTERS[name], k=k), AGENTS[agent])
                longest = max([k] + [end - start for start, end in call_spans(w)])
                step = w.model.verify_s + w.model.verify_per_token_s * longest
                for seed in range(4):
                    played = play_turn(w, "read_eager", seed)
                    started = {r.commit_key: r.started for r in played.report.dispatch_log if not r.discarded}
                    for key, at in played.accepted_at.items():
                        start = started[key]
                        assert start is not None, key
                        lead = at - start
                        assert lead <= step + 1e-9, (name, agent, k, seed, lead, step)
                    assert played.outcome.lead <= played.outcome.ahead * step + 1e-9


def test_with_alpha_one_no_policy_diverges() -> None:
    for w in default_workloads():
        perfect = replace(w, model=replace(w.model, alpha=1.0))
        for policy in POLICIES:
            for seed in range(5):
                out = run_turn(perfect, policy, seed)
                assert not out.diverged and out.orphans == 0 and out.wasted_reads == 0, (w.name, policy, seed)


def test_on_every_seed_read_eager_beats_defer_beats_end_of_turn() -> None:
    """Without two-phase tools, on the built-in profiles; with them, see test_simulate_properties.py
    (a prepare on a rejected draft can hold the corrected call, so read_eager can lose to defer)."""
    for w in default_workloads():
        if any(t.two_phase for t in w.agent.tools.values()):
            continue
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


def test_cli_table_shows_its_header_and_each_workload_before_the_sweep_ends(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found by an attack: the header waited for the whole sweep (7-18 s of nothing). What
    was printed is read at each turn the sweep starts, so no timing decides the outcome."""
    from inert.simulate import sweep

    names = [w.name for w in default_workloads()]
    printed: list[str] = []
    seen_at_start: dict[str, str] = {}
    real = sweep.run_turn

    def watched(w: Any, policy: str, seed: int) -> Any:
        printed.append(capsys.readouterr().out)
        seen_at_start.setdefault(w.name, "".join(printed))
        return real(w, policy, seed)

    monkeypatch.setattr(sweep, "run_turn", watched)
    assert main(["simulate", "--seeds", "1"]) == 0
    text = "".join(printed) + capsys.readouterr().out
    first = seen_at_start[names[0]]
    assert first.startswith("inert simulate: ") and "workload               policy" in first, first
    for done, running in itertools.pairwise(names):
        assert done in seen_at_start[running], f"{done}'s rows were not shown before {running} ran"
    assert names[-1] not in seen_at_start[names[-1]]
    assert text.count("eager_unsafe") == len(names) + 1 and text.endswith("corruptions\n"), text


def test_plot(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the optional plot extra (matplotlib) is not installed")
    png = tmp_path / "sim.png"
    assert main(["simulate", "--seeds", "2", "--plot", str(png), "--json"]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_custom_workloads_from_toml(tmp_path: Path) -> None:
    path = tmp_path / "w.toml"
    path.write_text(
        "[models.fast]\nalpha = 0.7\nk = 4\nverify_s = 0.004\n"
        "[agents.lookup]\n"
        'transcript = \'\'\'<tool_call>{"name": "get", "arguments": {"key": "a"}}</tool_call> ok\'\'\'\n'
        'rows = { a = "1" }\n'
        '[agents.lookup.tools.get]\nkind = "read"\nmedian_s = 0.05\np99_s = 0.4\n'
    )
    (w,) = load_workloads(path)
    assert (w.model.alpha, w.agent.name, w.agent.tools["get"].effect) == (0.7, "lookup", inert.EffectClass.READ_ONLY)
    assert main(["simulate", "--workloads", str(path), "--seeds", "3", "--json"]) == 0
    bad = tmp_path / "bad.toml"
    bad.write_text("[agents.x]\ntools = 3\n")
    with pytest.raises(inert.InertValueError, match=r"bad\.toml: agents\.x\."):
        load_workloads(bad)


def test_plot_without_matplotlib_fails_before_the_sweep(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    import inert.simulate

    def no_sweep(*args: object, **kwargs: object) -> None:
        raise AssertionError("the sweep ran before --plot said what it needs")

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    monkeypatch.setattr(inert.simulate, "simulate", no_sweep)
    monkeypatch.setattr(inert.simulate.sweep, "simulate", no_sweep)
    assert main(["simulate", "--seeds", "2", "--plot", str(tmp_path / "x.png")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "--plot needs matplotlib" in err and len(err.strip().splitlines()) == 1


class _Figures:
    """Keeps every figure the plot saves, to look at what was drawn."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from matplotlib.figure import Figure

        self.saved: list[Figure] = []
        save = Figure.savefig

        def keep(fig: Figure, *args: Any, **kwargs: Any) -> None:
            self.saved.append(fig)
            save(fig, *args, **kwargs)

        monkeypatch.setattr(Figure, "savefig", keep)


def test_plot_honours_seeds_and_shows_each_policy_and_each_corruption_apart(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib", reason="the optional plot extra (matplotlib) is not installed")
    from inert.simulate import plot

    seen: list[object] = []
    sweep = plot.alpha_sweep  # type: ignore[attr-defined]  # plot's own name (not exported), which is patched

    def spy(workload: object, alphas: object, seeds: int = 50) -> object:
        seen.append(seeds)
        return sweep(workload, alphas, seeds)  # type: ignore[arg-type]

    monkeypatch.setattr(plot, "alpha_sweep", spy)
    figures = _Figures(monkeypatch)
    assert main(["simulate", "--seeds", "3", "--plot", str(tmp_path / "x.png"), "--json"]) == 0
    assert seen == [3], "the figure uses --seeds"
    points = json.loads(capsys.readouterr().out)["plot"]["points"]
    (fig,) = figures.saved
    left, right = fig.axes
    styles = {line.get_label(): (line.get_linestyle(), line.get_marker()) for line in left.get_lines()}
    assert set(styles) == set(POLICIES)
    assert len(set(styles.values())) == len(POLICIES), "every policy's curve has its own line style and marker"
    bars = {c.get_label(): [b.get_height() for b in c] for c in right.containers}
    unsafe = [p for p in points if p["policy"] == "eager_unsafe"]
    assert bars == {
        "orphans": [p["orphans"] for p in unsafe],
        "stale reads": [p["stale_reads"] for p in unsafe],
        "diverged worlds": [p["diverged"] for p in unsafe],
    }, "one bar per kind, never added up"


def test_plot_prints_the_numbers_it_draws(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib", reason="the optional plot extra (matplotlib) is not installed")
    assert main(["simulate", "--seeds", "3", "--plot", str(tmp_path / "x.png")]) == 0
    text = capsys.readouterr().out
    assert "plot: 8b-h100 / incident, 3 turns per point" in text
    assert "defer and read_eager save" in text and f"wrote {tmp_path / 'x.png'}" in text


def test_two_phase_tools_from_toml(tmp_path: Path) -> None:
    path = tmp_path / "w.toml"
    path.write_text(
        "[models.deep]\nalpha = 0.7\nk = 32\nverify_per_token_s = 0.0007\ncall_accuracy = 0.9\nwhole_calls = true\n"
        "[agents.pay]\n"
        'transcript = \'\'\'<tool_call>{"name": "pay", "arguments": {"key": "a", "n": 1}}</tool_call>\'\'\'\n'
        '[agents.pay.tools.pay]\nkind = "write"\nmedian_s = 0.04\nprepare = { median_s = 0.3, p99_s = 1.2 }\n'
    )
    (w,) = load_workloads(path)
    pay = w.agent.tools["pay"]
    assert pay.two_phase and pay.prepare == inert.simulate.Latency(0.3, 1.2) and pay.latency.median == 0.04
    model = w.model
    assert (model.k, model.verify_per_token_s, model.call_accuracy, model.whole_calls) == (32, 0.0007, 0.9, True)
    for policy in ("defer", "read_eager"):
        played = play_turn(w, policy, 3)
        assert played.report.violations == [] and [r.phase for r in played.report.dispatch_log][-1] == "commit"


def test_depth_sweep_json_and_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--depths", "4,16", "--seeds", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["safe"] and out["depths"] == [4, 16] and out["seeds"] == 3
    names = {(p["drafter"], p["agent"]) for p in out["points"]}
    assert names == {(d, a) for d in DRAFTERS for a in DEPTH_AGENTS}
    assert {p["depth"] for p in out["points"]} == {4, 16} and all(p["corruptions"] == 0 for p in out["points"])
    assert main(["simulate", "--depths", "--seeds", "2"]) == 0
    text = capsys.readouterr().out
    assert "median ms read_eager saves against defer" in text and "k=64" in text
    assert "defer and read_eager: no orphans, no stale reads, no diverged world" in text


def test_depth_plot_draws_each_drafter_and_its_verify_step(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib", reason="the optional plot extra (matplotlib) is not installed")
    import numpy as np  # matplotlib's own dependency

    figures = _Figures(monkeypatch)
    png = tmp_path / "depth.png"
    assert main(["simulate", "--depths", "4,8", "--seeds", "2", "--plot", str(png), "--json"]) == 0
    points = json.loads(capsys.readouterr().out)["points"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (fig,) = figures.saved
    top = fig.axes[0]
    # get_ydata is typed ArrayLike; a plotted line holds an ndarray, which asarray returns as it is
    saved = {
        line.get_label(): list(np.asarray(line.get_ydata())) for line in top.get_lines() if line.get_linestyle() == "-"
    }
    drawn: dict[str, list[float]] = {p["drafter"]: [] for p in points if p["agent"] == DEPTH_AGENTS[0]}
    for p in points:
        if p["agent"] == DEPTH_AGENTS[0]:
            drawn[p["drafter"]].append(p["saved_p50"] * 1e3)
    assert {k: v for k, v in saved.items() if k in drawn} == drawn, "the figure draws the saving it prints"


@pytest.mark.parametrize("median", [math.nan, math.inf, -1.0, 10**400])
def test_a_latency_virtual_time_cannot_run_on_is_refused(median: float) -> None:
    """Found by a helper: a NaN latency never came due, and the simulated turn ran for ever."""
    with pytest.raises(inert.InertValueError, match="finite number of seconds"):
        inert.simulate.Latency(median)
    with pytest.raises(inert.InertValueError, match="finite number of seconds"):
        inert.simulate.Latency(0.01, median)


def test_latencies_at_the_edges_sample_without_raising() -> None:
    """Found by a helper: a median of 0 with a tail (valid in a workload file) divided by zero,
    and a far tail overflowed math.exp."""
    assert inert.simulate.Latency(0.0, 1.0).sample(random.Random(1)) == 0.0
    tail = inert.simulate.Latency(0.01, 1e300)
    assert all(tail.sample(random.Random(seed)) >= 0 for seed in range(2000))


@pytest.mark.parametrize("name", ["figure", "figure.txt"], ids=["no-extension", "unknown-format"])
def test_a_plot_path_matplotlib_would_not_write_as_named_is_refused_before_the_sweep(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """Found by a helper: `--plot figure.txt` ran the sweep, then matplotlib's ValueError ended it
    in a traceback (exit 1, the findings code); `--plot figure` wrote figure.png and reported
    `figure`, a file that did not exist."""
    pytest.importorskip("matplotlib", reason="the optional plot extra (matplotlib) is not installed")
    import inert.simulate

    def no_sweep(*args: object, **kwargs: object) -> None:
        raise AssertionError("the sweep ran before --plot was checked")

    monkeypatch.setattr(inert.simulate, "simulate", no_sweep)
    monkeypatch.setattr(inert.simulate, "depth_workloads", no_sweep)
    for depths in ([], ["--depths", "4"]):
        assert main(["simulate", "--seeds", "2", *depths, "--plot", str(tmp_path / name)]) == 2
        out, err = capsys.readouterr()
        assert out == "" and len(err.strip().splitlines()) == 1 and "name it .png, .svg or .pdf" in err
    assert list(tmp_path.iterdir()) == []


def test_a_workload_number_past_a_floats_range_is_refused_by_name(tmp_path: Path) -> None:
    """Found by a helper: TOML integers have no size limit, and a 400-digit one raised
    OverflowError (a traceback from the CLI) instead of naming the field."""
    path = tmp_path / "w.toml"
    path.write_text(f"[agents.a]\ntranscript = 'hi'\n[agents.a.tools.get]\nkind = \"read\"\nmedian_s = {'9' * 400}\n")
    with pytest.raises(inert.InertValueError, match=r"agents\.a\.tools\.get\.median_s: must be a number .* 400 digits"):
        load_workloads(path)
