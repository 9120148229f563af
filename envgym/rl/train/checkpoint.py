"""Checkpoints: ``<out>/checkpoints/step-NNNNN/`` holding ``learner.pt`` (model, optimizer, step) and ``state.json``.

A checkpoint is written to a temporary folder and renamed, so a crash never leaves half of one; only the
newest ``keep_checkpoints`` are kept. ``state.json`` records the step and the config hash; resuming with a
config that differs in anything but :data:`RESUMABLE` is refused (a :class:`~envgym.errors.SpecError`),
because the run would no longer be the one the metrics describe. Blocking functions: call them in a thread.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from envgym.errors import SpecError
from envgym.rl.train.config import TrainConfig
from envgym.types import content_hash

RESUMABLE = {"steps", "checkpoint_every", "keep_checkpoints", "save_samples", "concurrency", "gen_batch",
             "prefix_cache", "torch_threads"}
"""Fields a resumed run may change: its length, checkpointing, and knobs of speed rather than of learning."""


def _resumable_hash(config: TrainConfig) -> str:
    return content_hash(config.model_dump(mode="json", exclude=RESUMABLE))


def save_checkpoint(out_dir: str | Path, learner: Any, config: TrainConfig) -> Path:
    """Save the learner's state (waiting for a step in progress); returns the checkpoint folder."""
    import torch

    root = Path(out_dir) / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    with learner.lock:
        step = learner.steps_done
        folder = root / f"step-{step:05d}"
        staging = Path(tempfile.mkdtemp(prefix=".step-", dir=root))
        try:
            torch.save(learner.state(), staging / "learner.pt")
            state = {"step": step, "config_hash": config.hash, "resumable_hash": _resumable_hash(config)}
            (staging / "state.json").write_text(json.dumps(state, indent=2) + "\n")
            if folder.exists():
                shutil.rmtree(folder)
            staging.rename(folder)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    for old in sorted(root.glob("step-*"))[: -config.keep_checkpoints]:
        shutil.rmtree(old, ignore_errors=True)
    return folder


def latest_checkpoint(out_dir: str | Path) -> Path | None:
    """The newest complete checkpoint folder under ``out_dir``, if any."""
    found = sorted(p for p in (Path(out_dir) / "checkpoints").glob("step-*") if (p / "state.json").is_file())
    return found[-1] if found else None


def load_checkpoint(folder: str | Path, config: TrainConfig) -> dict[str, Any]:
    """``{"step": n, "learner": state}``; a SpecError when the checkpoint belongs to another config."""
    import torch

    folder = Path(folder)
    state = json.loads((folder / "state.json").read_text())
    if state.get("resumable_hash") != _resumable_hash(config):
        raise SpecError(f"the checkpoint {folder} was written by a different training config; use another --out "
                        f"or the same settings", field="out")
    learner = torch.load(folder / "learner.pt", map_location=config.device, weights_only=True)
    return {"step": int(state["step"]), "learner": learner}
