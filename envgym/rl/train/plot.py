"""Reward curves of training runs, side by side: a CSV and a PNG (matplotlib, from the ``train`` extra).

    write_curves({"sync": "out/sync", "async s=2": "out/async"}, "out/curves")   # curves.csv, curves.png

The PNG has two panels: mean reward per step, and mean reward against wall-clock time (where asynchronous
training shows its speed). Rewards are also drawn smoothed (a trailing mean over ``window`` steps).
"""

from __future__ import annotations

import csv
from pathlib import Path

from envgym.rl.train.trainer import read_metrics


def _smooth(values: list[float], window: int) -> list[float]:
    return [sum(values[max(0, i - window + 1):i + 1]) / len(values[max(0, i - window + 1):i + 1])
            for i in range(len(values))]


def write_curves(runs: dict[str, str | Path], out: str | Path, *, window: int = 5) -> tuple[Path, Path]:
    """Write ``<out>.csv`` and ``<out>.png`` for the labelled run folders; returns both paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    csv_path, png_path = out.with_suffix(".csv"), out.with_suffix(".png")
    series = {label: read_metrics(path) for label, path in runs.items()}
    with open(csv_path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["run", "step", "wall_s", "reward_mean", "success_rate", "kl_rollout_trainer", "samples"])
        for label, lines in series.items():
            for line in lines:
                writer.writerow([label, line["step"], line["wall_s"], f"{line['reward_mean']:.4f}",
                                 f"{line['success_rate']:.4f}", f"{line['kl_rollout_trainer']:.6f}", line["samples"]])
    fig, (by_step, by_time) = plt.subplots(1, 2, figsize=(11, 4))
    for label, lines in series.items():
        if not lines:
            continue
        steps = [line["step"] for line in lines]
        walls = [line["wall_s"] / 60 for line in lines]
        rewards = [line["reward_mean"] for line in lines]
        smooth = _smooth(rewards, window)
        (drawn,) = by_step.plot(steps, smooth, label=label)
        by_step.plot(steps, rewards, alpha=0.25, color=drawn.get_color())
        by_time.plot(walls, smooth, label=label, color=drawn.get_color())
        by_time.plot(walls, rewards, alpha=0.25, color=drawn.get_color())
    by_step.set(xlabel="step (policy version)", ylabel=f"mean reward (trailing mean of {window})",
                title="reward per step")
    by_time.set(xlabel="wall time (min)", ylabel="mean reward", title="reward against wall time")
    for axis in (by_step, by_time):
        axis.grid(alpha=0.3)
        axis.legend()
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)
    plt.close(fig)
    return csv_path, png_path
