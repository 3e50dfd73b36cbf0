"""`inert simulate --plot`: latency against acceptance rate per policy, with the
corruption that eager dispatch buys beside it. Needs matplotlib (the `plot` extra)."""

from __future__ import annotations

import os

from ..errors import InertError
from .sweep import POLICIES, alpha_sweep
from .workloads import Workload

__all__ = ["plot_alpha_sweep"]

COLOURS = {"end_of_turn": "#7f7f7f", "defer": "#1f77b4", "read_eager": "#2ca02c", "eager_unsafe": "#d62728"}


def plot_alpha_sweep(workload: Workload, path: str | os.PathLike[str], seeds: int = 40) -> None:
    """Writes a PNG: median time to the last tool result and eager_unsafe's corruption, against alpha."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InertError("--plot needs matplotlib: pip install 'inert[plot]'") from None
    alphas = [round(0.5 + 0.05 * i, 2) for i in range(10)]
    curves = alpha_sweep(workload, alphas, seeds)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [3, 2]})
    for policy in POLICIES:
        xs = [a for a, _, _ in curves[policy]]
        left.plot(xs, [p50 * 1000 for _, p50, _ in curves[policy]], marker="o", label=policy, color=COLOURS[policy])
    left.set_xlabel("per-token acceptance rate α")
    left.set_ylabel("median time to last tool result (ms)")
    left.set_title(f"{workload.name}: latency", fontsize=11)
    left.grid(alpha=0.3)
    left.legend()
    unsafe = curves["eager_unsafe"]
    right.bar([a for a, _, _ in unsafe], [c for _, _, c in unsafe], width=0.035, color=COLOURS["eager_unsafe"])
    right.set_xlabel("per-token acceptance rate α")
    right.set_ylabel(f"corruptions in {seeds} turns")
    right.set_title("eager_unsafe: orphans + stale reads + diverged worlds\n(every other policy: 0)", fontsize=10)
    right.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
