"""`inert simulate --plot`: latency against acceptance rate per policy, with the
corruption that eager dispatch buys beside it; with ``--depths``, what read_eager
saves against defer as drafts get deeper. Needs matplotlib (the `plot` extra)."""

from __future__ import annotations

import os
from typing import Any

from ..errors import InertError, InertValueError
from .depth import DepthPoint
from .sweep import POLICIES, Summary, alpha_sweep
from .workloads import Workload

__all__ = ["ALPHAS", "check_plot_path", "plot_alpha_sweep", "plot_depth_sweep", "require_matplotlib", "sweep_lines"]

ALPHAS = [round(0.5 + 0.05 * i, 2) for i in range(10)]
"""The acceptance rates the figure sweeps."""

# defer and read_eager coincide wherever no read can run early (the incident):
# a hollow square under a small dot, dashed under dotted, keeps both visible.
STYLES: dict[str, dict[str, Any]] = {
    "end_of_turn": {"color": "#7f7f7f", "linestyle": "-", "marker": "o", "markersize": 5, "linewidth": 1.6},
    "defer": {
        "color": "#1f77b4",
        "linestyle": "--",
        "marker": "s",
        "markersize": 10,
        "markerfacecolor": "none",
        "markeredgewidth": 1.6,
        "linewidth": 2.4,
    },
    "read_eager": {"color": "#2ca02c", "linestyle": ":", "marker": "o", "markersize": 4, "linewidth": 1.8},
    "eager_unsafe": {"color": "#d62728", "linestyle": "-.", "marker": "^", "markersize": 6, "linewidth": 1.6},
}
KINDS = (
    ("orphans", "orphans", "#8c1c13", "//"),
    ("stale_reads", "stale reads", "#f28e2b", ""),
    ("diverged", "diverged worlds", "#7b4ea3", ".."),
)
"""Corruption counts of a ``Summary``: field, label, colour, hatch."""


def require_matplotlib() -> Any:
    """Imports pyplot on a file-only backend.

    Raises:
        InertError: matplotlib is not installed.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InertError("--plot needs matplotlib: pip install 'inert[plot]'") from None
    return plt


def check_plot_path(path: str) -> None:
    """Refuses a figure path matplotlib would not write as given, before any sweep runs:
    a missing folder, no extension (matplotlib would add ``.png``, and the path reported
    would name no file), or a format it cannot write.

    Raises:
        InertError: matplotlib is not installed.
        InertValueError: the path cannot take the figure.
    """
    plt = require_matplotlib()
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InertValueError(f"--plot {path}: no such folder {folder}")
    probe = plt.figure()
    formats = probe.canvas.get_supported_filetypes()
    plt.close(probe)  # only the probe: never a figure of the caller's
    ext = os.path.splitext(path)[1].lstrip(".").lower()
    if ext not in formats:
        said = f"a .{ext} figure is not a format matplotlib writes" if ext else "the file name has no extension"
        raise InertValueError(f"--plot {path}: {said}; name it .png, .svg or .pdf ({', '.join(sorted(formats))})")


def plot_alpha_sweep(workload: Workload, path: str | os.PathLike[str], seeds: int = 100) -> dict[float, list[Summary]]:
    """Writes a PNG: each policy's median time to the last tool result against alpha,
    and each policy's orphans, stale reads and diverged worlds over ``seeds`` turns per
    alpha. Returns the sweep it drew (alpha -> one ``Summary`` per policy).

    Raises:
        InertError: matplotlib is not installed.
        OSError: ``path`` cannot be written.
    """
    plt = require_matplotlib()
    sweep = alpha_sweep(workload, ALPHAS, seeds)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.4), gridspec_kw={"width_ratios": [3, 2]})
    for i, policy in enumerate(POLICIES):
        p50 = [sweep[a][i].p50 * 1000 for a in ALPHAS]
        left.plot(ALPHAS, p50, label=policy, **STYLES[policy])
    left.set_xlabel("per-token acceptance rate α")
    left.set_ylabel("median time to last tool result (ms)")
    left.set_title(f"{workload.name}: latency ({seeds} turns per point)", fontsize=11)
    left.grid(alpha=0.3)
    left.legend()

    unsafe = POLICIES.index("eager_unsafe")
    width = 0.013
    for j, (field, label, colour, hatch) in enumerate(KINDS):
        xs = [a + (j - 1) * width for a in ALPHAS]
        right.bar(
            xs,
            [getattr(sweep[a][unsafe], field) for a in ALPHAS],
            width=width,
            label=label,
            color=colour,
            hatch=hatch,
            edgecolor="white",
            linewidth=0.4,
        )
    others = sum(s.orphans + s.stale_reads + s.diverged for a in ALPHAS for s in sweep[a] if s.policy != "eager_unsafe")
    right.set_xticks(ALPHAS[::2])
    right.set_xlabel("per-token acceptance rate α")
    right.set_ylabel(f"count in {seeds} turns")
    right.set_title(
        "eager_unsafe's corruptions\n"
        + ("(every other policy: none)" if not others else f"(other policies: {others}, a bug)"),
        fontsize=10,
    )
    right.grid(alpha=0.3, axis="y")
    right.set_ylim(0, 1.3 * max([1] + [getattr(sweep[a][unsafe], f) for a in ALPHAS for f, *_ in KINDS]))
    right.legend(fontsize=9, ncol=3, loc="upper center")
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)
    return sweep


def sweep_lines(workload: Workload, sweep: dict[float, list[Summary]], seeds: int) -> list[str]:
    """The figure's numbers as text: median latency per policy, each policy's median
    saving against ``end_of_turn``, and eager_unsafe's corruptions, per alpha."""
    by = {a: {s.policy: s for s in sweep[a]} for a in sweep}
    saving = [p for p in POLICIES if p != "end_of_turn"]
    top = (
        f"{'':5}  {'median ms to the last tool result':<{13 * len(POLICIES) - 1}}  "
        f"{'median ms saved against end_of_turn':<{13 * len(saving) - 1}}  eager_unsafe's corruptions"
    )
    head = (
        f"{'alpha':<5}  "
        + " ".join(f"{p:>12}" for p in POLICIES)
        + "  "
        + " ".join(f"{p:>12}" for p in saving)
        + f"  {'orphans':>8} {'stale':>6} {'diverged':>9}"
    )
    out = [f"plot: {workload.name}, {seeds} turns per point", top, head, "-" * len(head)]
    for a, s in by.items():
        u = s["eager_unsafe"]
        out.append(
            f"{a:<5.2f}  "
            + " ".join(f"{s[p].p50 * 1e3:12.1f}" for p in POLICIES)
            + "  "
            + " ".join(f"{s[p].saved_p50 * 1e3:12.1f}" for p in saving)
            + f"  {u.orphans:8d} {u.stale_reads:6d} {u.diverged:9d}"
        )
    saved = [by[a][p].saved_p50 * 1e3 for a in by for p in ("defer", "read_eager")]
    further = [(by[a]["eager_unsafe"].saved_p50 - by[a]["read_eager"].saved_p50) * 1e3 for a in by]
    bad = [
        by[a]["eager_unsafe"].orphans + by[a]["eager_unsafe"].stale_reads + by[a]["eager_unsafe"].diverged for a in by
    ]
    lo, hi = min(by), max(by)
    out += [
        f"over alpha {lo:.2f}-{hi:.2f}: defer and read_eager save {min(saved):.1f}-{max(saved):.1f} ms a turn;",
        f"eager_unsafe saves {min(further):.1f}-{max(further):.1f} ms more than read_eager and corrupts the world "
        f"{min(bad)}-{max(bad)} times in {seeds} turns",
        "(orphans, stale reads and diverged worlds added up here; apart in the table and the figure)",
    ]
    return out


DRAFTER_COLOURS = ("#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
DRAFTER_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def plot_depth_sweep(points: list[DepthPoint], path: str | os.PathLike[str]) -> None:
    """Writes a PNG of a depth sweep, one column per agent: above, the median ms read_eager
    saves against defer per drafter, with one verify step (the most a call can start ahead of
    its acceptance) dotted in the drafter's colour; below, the turns read_eager lost.

    Raises:
        InertError: matplotlib is not installed.
        OSError: ``path`` cannot be written.
    """
    plt = require_matplotlib()
    agents = list(dict.fromkeys(p.agent for p in points))
    drafters = list(dict.fromkeys(p.drafter for p in points))
    depths = sorted({p.depth for p in points})
    seeds = points[0].turns if points else 0
    by = {(p.agent, p.drafter, p.depth): p for p in points}
    fig, axes = plt.subplots(
        2,
        len(agents),
        figsize=(6 * len(agents), 7.2),
        squeeze=False,
        gridspec_kw={"height_ratios": [3, 2]},
        sharex=True,
    )
    for col, agent in enumerate(agents):
        top, bottom = axes[0][col], axes[1][col]
        for i, drafter in enumerate(drafters):
            row = [by[agent, drafter, d] for d in depths if (agent, drafter, d) in by]
            if not row:
                continue
            ks = [p.depth for p in row]
            style = {
                "color": DRAFTER_COLOURS[i % len(DRAFTER_COLOURS)],
                "marker": DRAFTER_MARKERS[i % len(DRAFTER_MARKERS)],
            }
            top.plot(ks, [p.saved_p50 * 1e3 for p in row], label=drafter, linewidth=1.8, markersize=6, **style)
            top.plot(
                ks,
                [p.verify_step * 1e3 for p in row],
                linestyle=":",
                linewidth=1.2,
                color=style["color"],
                label="one verify step" if i == 0 else None,
            )
            bottom.plot(ks, [p.slower for p in row], linewidth=1.4, markersize=5, **style)
        top.axhline(0, color="#444444", linewidth=0.8)
        top.set_title(f"{agent}: read_eager against defer", fontsize=11)
        top.set_ylabel("median ms saved per turn")
        top.grid(alpha=0.3)
        bottom.set_ylabel(f"turns read_eager lost (of {seeds})")
        bottom.set_xlabel("draft depth k (tokens per draft)")
        bottom.grid(alpha=0.3)
        bottom.set_xscale("log", base=2)
        bottom.set_xticks(depths)
        bottom.set_xticklabels([str(d) for d in depths])
        bottom.set_ylim(bottom=0)
    axes[0][0].legend(fontsize=9)
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)
