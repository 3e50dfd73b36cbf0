"""Every figure the README quotes from `inert simulate` is what the command it names prints:
the policy table and the acceptance-rate figure, and the draft-depth sweep."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from inert.cli import main

README = Path(__file__).resolve().parents[2] / "README.md"
COMMAND = "inert simulate --plot docs/simulate.png"
DEPTH_COMMAND = "inert simulate --depths --seeds 50 --plot docs/two_phase.png"


def _range(values: list[float], unit: str = "") -> str:
    return f"{min(values):.1f}-{max(values):.1f}{unit}"


def _section() -> str:
    section = README.read_text().split("## Simulation", 1)[1].split("\n## ", 1)[0]
    return " ".join(section.split())


def _run(command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    args = command.split()[1:]
    args[args.index("--plot") + 1] = str(tmp_path / "figure.png")
    assert main([*args, "--json"]) == 0
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    return out


def test_the_simulation_figures_in_the_readme_are_what_its_command_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib", reason="the optional plot extra (matplotlib) is not installed")
    text = _section()
    assert f"`{COMMAND}`" in text, "the README names the command its figures come from"
    out = _run(COMMAND, tmp_path, capsys)
    seeds = out["plot"]["seeds"]
    by_alpha: dict[float, dict[str, dict[str, float]]] = {}
    for p in out["plot"]["points"]:
        by_alpha.setdefault(p["alpha"], {})[p["policy"]] = p
    alphas = sorted(by_alpha)
    assert f"α from {alphas[0]:.2f} to {alphas[-1]:.2f}, {seeds} turns per point" in text

    saved = [by_alpha[a][p]["saved_p50"] * 1e3 for a in alphas for p in ("defer", "read_eager")]
    assert f"saves {_range(saved, ' ms')} a turn" in text
    further = [
        (by_alpha[a]["eager_unsafe"]["saved_p50"] - by_alpha[a]["read_eager"]["saved_p50"]) * 1e3 for a in alphas
    ]
    assert f"`eager_unsafe` saves {_range(further, ' ms')} more" in text
    bad = [sum(by_alpha[a]["eager_unsafe"][k] for k in ("orphans", "stale_reads", "diverged")) for a in alphas]
    assert f"{min(bad)}-{max(bad)} corruptions in {seeds} turns" in text
    others = [
        by_alpha[a][p][k]
        for a in alphas
        for p in ("end_of_turn", "defer", "read_eager")
        for k in ("orphans", "stale_reads", "diverged")
    ]
    assert not any(others) and "where every other policy has none" in text

    research = {
        (s["workload"], s["policy"]): s["saved_p50"] * 1e3
        for s in out["summaries"]
        if s["workload"].endswith("/ research")
    }
    quoted = (
        f"`read_eager` saving {research['8b-h100 / research', 'read_eager']:.1f} ms (8B) and "
        f"{research['70b / research', 'read_eager']:.1f} ms (70B) a turn where `defer` saves "
        f"{research['8b-h100 / research', 'defer']:.1f} and {research['70b / research', 'defer']:.1f}"
    )
    assert quoted in text

    saving = {(s["workload"], s["policy"]): s["saved_p50"] * 1e3 for s in out["summaries"]}
    two_phase = (
        f"`read_eager` saves {saving['8b-h100 / payments', 'read_eager']:.1f} ms a turn on `payments` against "
        f"`end_of_turn` where `defer` saves {saving['8b-h100 / payments', 'defer']:.1f}"
    )
    assert two_phase in text
    safe = [
        s[k]
        for s in out["summaries"]
        for k in ("orphans", "stale_reads", "diverged")
        if s["policy"] != "eager_unsafe" and s["workload"].endswith(("/ payments", "/ coding-staged"))
    ]
    assert len(safe) == 2 * 2 * 3 * 3, "both two-phase agents, on both profiles, under the three safe policies"
    assert not any(safe) and "no safe policy corrupts either" in text


def test_the_draft_depth_figures_in_the_readme_are_what_its_command_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib", reason="the optional plot extra (matplotlib) is not installed")
    text = _section()
    assert f"`{DEPTH_COMMAND}`" in text, "the README names the command its depth figures come from"
    out = _run(DEPTH_COMMAND, tmp_path, capsys)
    by = {(p["drafter"], p["agent"], p["depth"]): p for p in out["points"]}
    depths, seeds = out["depths"], out["seeds"]
    assert f"sweeps k from {depths[0]} to {depths[-1]} for four drafters" in text
    assert len({p["drafter"] for p in out["points"]}) == 4

    light = [p["verify_step"] * 1e3 for p in out["points"] if not p["drafter"].endswith("batch32")]
    assert f"At light load one verify step is {_range(light, ' ms')}" in text
    right = [by["suffix", a, k]["saved_p50"] * 1e3 for a in ("coding-staged", "payments") for k in depths if k <= 32]
    assert f"{_range(right, ' ms')} with suffix decoding for k from {depths[0]} to 32" in text
    ahead = [by["suffix", "coding-staged", k]["ahead_per_turn"] for k in (depths[0], 32)]
    assert (f"rise from {ahead[0]:.2f} a turn at k = {depths[0]} to {ahead[1]:.2f} at k = 32 (of 5)") in text
    batch = [by["suffix-batch32", "payments", k]["saved_p50"] * 1e3 for k in (depths[0], depths[-1])]
    assert (f"from {batch[0]:.1f} ms at k = {depths[0]} to {batch[1]:.1f} ms at k = {depths[-1]} on `payments`") in text
    loss = by["eagle", "payments", 32]
    assert loss["saved_p50"] < 0
    assert (
        f"on `payments` at k = 32 `read_eager` loses a median {-loss['saved_p50'] * 1e3:.1f} ms a turn to "
        f"`defer` and finishes after it in {loss['slower']} turns of {seeds}"
    ) in text
    lost = [by["call-model", "coding-staged", k]["slower"] for k in depths]
    assert f"on `coding-staged`, in {min(lost)}-{max(lost)} turns of {seeds} at every depth" in text
    assert not any(p["corruptions"] for p in out["points"]) and "No point of the sweep corrupts the world" in text


def test_the_assumptions_the_readme_states_are_the_simulators() -> None:
    """Not figures the command prints, but the inputs the README names beside them."""
    from inert.simulate import AGENTS, DEPTH_AGENTS, DRAFTERS, Workload, call_spans

    text = _section()
    assert f"EAGLE-style heads (α {DRAFTERS['eagle'].alpha} per token)" in text
    assert DRAFTERS["suffix"].call_accuracy == 0.9 and "right 9 times in 10" in text
    assert DRAFTERS["call-model"].call_accuracy == 0.8 and "wrong one time in five" in text
    batch = DRAFTERS["suffix-batch32"]
    assert f"{batch.verify_s * 1e3:g} ms + {batch.verify_per_token_s * 1e3:g} ms per drafted token" in text
    lengths = [end - start for a in DEPTH_AGENTS for start, end in call_spans(Workload(batch, AGENTS[a]))]
    assert f"call blocks of {min(lengths)}-{max(lengths)} tokens" in text
    write, pay = AGENTS["coding-staged"].tools["write_file"], AGENTS["payments"].tools["pay_invoice"]
    assert write.prepare is not None and pay.prepare is not None
    assert (
        f"checks it ({write.prepare.median * 1e3:g} ms) before renaming it into place "
        f"({write.latency.median * 1e3:g} ms)"
    ) in text
    assert (
        f"authorises each payment ({pay.prepare.median * 1e3:g} ms) before capturing it "
        f"({pay.latency.median * 1e3:g} ms)"
    ) in text
