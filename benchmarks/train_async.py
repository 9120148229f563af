"""Async (max_staleness 2) versus sync training: wall time to the same number of trained samples, on the CPU.

Both runs are the real trainer (`envgym.rl.train.Trainer`): episodes of `tool/codes-v1` (echo tasks) in the
vector pool, `openai` agents talking to the recording proxy over loopback, an in-process transformers
backend, GRPO steps, weight pushes. The environment is given a latency comparable to a training step
(the `env_latency_s` setting: `LatencyEnv` sleeps before every env step, as a slow tool or a remote world
would): a short sync calibration run measures the mean training step, and that becomes the latency. Sync
then pays rollout + train per step; async overlaps the next steps' rollouts with training.

    python benchmarks/train_async.py                      # tiny random policy (the default, ~2 minutes)
    python benchmarks/train_async.py --model smollm2      # SmolLM2-135M (slow on 2 cores)
    python benchmarks/train_async.py --latency 1.0        # fix the env latency instead of calibrating

Target: async / sync speed-up >= 1.5x.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from envgym.rl.train.config import recipe
from envgym.rl.train.trainer import Trainer


def config(model: str, mode: str, staleness: int, steps: int, latency: float, threads: int | None):
    base = {"steps": steps, "group_size": 4, "groups_per_step": 2, "concurrency": 16, "gen_batch": 16,
            "env_latency_s": latency, "checkpoint_every": 10_000, "torch_threads": threads,
            "task_tags": ("echo",), "max_turns": 1}
    name = "cpu-smollm2" if model == "smollm2" else "tiny"
    return recipe(name, **base, mode=mode, max_staleness=staleness,
                  **({"save_samples": False} if model == "smollm2" else {"max_new_tokens": 12}))


def run(cfg, out: Path) -> tuple[float, list[dict]]:
    started = time.perf_counter()
    result = asyncio.run(Trainer(cfg, out, resume=False).run())
    return time.perf_counter() - started, result.metrics


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("tiny", "smollm2"), default="tiny")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--staleness", type=int, default=2)
    parser.add_argument("--latency", type=float, help="env latency per step in seconds (default: calibrated)")
    parser.add_argument("--threads", type=int, help="torch threads")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        latency = args.latency
        if latency is None:
            _, lines = run(config(args.model, "sync", 0, 3, 0.0, args.threads), root / "calibrate")
            latency = round(statistics.mean(line["train_s"] for line in lines[1:]), 3)
        rows = []
        for mode, staleness in (("sync", 0), ("async", args.staleness)):
            cfg = config(args.model, mode, staleness, args.steps, latency, args.threads)
            wall, lines = run(cfg, root / mode)
            # wall time to the same number of trained samples: from the first step's start to the last step
            samples = sum(line["samples"] for line in lines)
            train = statistics.mean(line["train_s"] for line in lines)
            rows.append((f"{mode} (staleness {staleness})", samples, lines[-1]["wall_s"], train,
                         lines[-1]["reward_mean"], wall))
    base = rows[0][2]
    print(f"model {args.model}, {args.steps} steps of 8 episodes, env latency {latency:.3f}s per step "
          f"(mean training step of a calibration run)")
    print(f"{'run':<22} {'samples':>8} {'wall_s':>8} {'train_s/step':>13} {'speed-up':>9} {'target':>8}")
    for label, samples, wall, train, _reward, _total in rows:
        ratio = base / wall
        target = ">= 1.5x" if label.startswith("async") else ""
        print(f"{label:<22} {samples:>8} {wall:>8.2f} {train:>13.3f} {ratio:>8.2f}x {target:>8}")


if __name__ == "__main__":
    main()
