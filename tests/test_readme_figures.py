"""Every figure the README quotes from `inert simulate` is what the command it names prints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inert.cli import main

README = Path(__file__).resolve().parent.parent / "README.md"
COMMAND = "inert simulate --plot docs/simulate.png"


def _range(values: list[float], unit: str = "") -> str:
    return f"{min(values):.1f}-{max(values):.1f}{unit}"


def test_the_simulation_figures_in_the_readme_are_what_its_command_prints(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib", reason="the optional plot extra (matplotlib) is not installed")
    section = README.read_text().split("## Simulation", 1)[1].split("\n## ", 1)[0]
    text = " ".join(section.split())
    assert f"`{COMMAND}`" in text, "the README names the command its figures come from"
    args = COMMAND.split()[1:]
    args[args.index("--plot") + 1] = str(tmp_path / "simulate.png")
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    seeds = out["plot"]["seeds"]
    by_alpha: dict[float, dict[str, dict[str, float]]] = {}
    for p in out["plot"]["points"]:
        by_alpha.setdefault(p["alpha"], {})[p["policy"]] = p
    alphas = sorted(by_alpha)
    assert f"α from {alphas[0]:.2f} to {alphas[-1]:.2f}, {seeds} turns per point" in text

    saved = [by_alpha[a][p]["saved_p50"] * 1e3 for a in alphas for p in ("defer", "read_eager")]
    assert f"saves {_range(saved, ' ms')} a turn" in text
    further = [(by_alpha[a]["eager_unsafe"]["saved_p50"] - by_alpha[a]["read_eager"]["saved_p50"]) * 1e3
               for a in alphas]
    assert f"`eager_unsafe` saves {_range(further, ' ms')} more" in text
    bad = [sum(by_alpha[a]["eager_unsafe"][k] for k in ("orphans", "stale_reads", "diverged")) for a in alphas]
    assert f"{min(bad)}-{max(bad)} corruptions in {seeds} turns" in text
    others = [by_alpha[a][p][k] for a in alphas for p in ("end_of_turn", "defer", "read_eager")
              for k in ("orphans", "stale_reads", "diverged")]
    assert not any(others) and "where every other policy has none" in text

    research = {(s["workload"], s["policy"]): s["saved_p50"] * 1e3 for s in out["summaries"]
                if s["workload"].endswith("/ research")}
    quoted = (f"`read_eager` saving {research['8b-h100 / research', 'read_eager']:.1f} ms (8B) and "
              f"{research['70b / research', 'read_eager']:.1f} ms (70B) a turn where `defer` saves "
              f"{research['8b-h100 / research', 'defer']:.1f} and {research['70b / research', 'defer']:.1f}")
    assert quoted in text
