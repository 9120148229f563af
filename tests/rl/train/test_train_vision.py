"""``envgym train`` on screenshots: GRPO with a tiny random Qwen2-VL through the proxy, images by reference."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from train_fakes import tiny_config

from envgym.rl.samples import read_samples
from envgym.rl.train.checkpoint import latest_checkpoint
from envgym.rl.train.trainer import Trainer

sys.path.insert(0, str(Path(__file__).parent.parent))  # tests/rl: the screenshot env helpers
from vision_fakes import ColourEnv, colour_tasks

pytest.importorskip("PIL")


def _config(**overrides):
    return tiny_config(model="tiny-vlm", images=True, image_max_pixels=320 * 180, max_turns=2, max_new_tokens=5,
                       save_samples=True, **overrides)


async def _run(path, config):
    from envgym.rl.models import tiny_vlm

    trainer = Trainer(config, path, policy=tiny_vlm(seed=0), tasks=colour_tasks(),
                      make_env=lambda env_id: ColourEnv(turns=2))
    return await trainer.run()


async def test_grpo_on_screenshots_trains_with_image_references_staleness_and_checkpoints(tmp_path):
    result = await _run(tmp_path / "async", _config(mode="async", max_staleness=1, steps=2))
    assert result.steps_done == 2
    for line in result.metrics:
        assert line["infra_errors"] == 0 and line["stale_dropped"] == 0
        assert max(map(int, line["staleness"])) <= 1
    # Step 1 trains on version-0 samples with version-0 weights: the learner rebuilt the rollout's pixels and
    # positions exactly (later steps train on stale samples on purpose, so their drift is real).
    assert result.metrics[0]["staleness"] == {"0": result.metrics[0]["samples"]}
    assert abs(result.metrics[0]["kl_rollout_trainer"]) < 1e-6
    samples = read_samples(tmp_path / "async" / "samples.jsonl")
    assert samples and all(len(s.images) == 2 for s in samples)  # two screenshots per two-turn episode
    stored = {p.stem for p in (tmp_path / "async" / "images").iterdir()}
    assert {ref[7:] for s in samples for ref in s.images} <= stored
    assert len(stored) <= 3 * 3  # by content: 3 colours x (first screen + 2 marked turns), whatever the episodes
    assert latest_checkpoint(tmp_path / "async").name == "step-00002"
    # A resumed run picks up at its checkpoint.
    more = await _run(tmp_path / "async", _config(mode="async", max_staleness=1, steps=3))
    assert [line["step"] for line in more.metrics] == [3]


def test_images_need_a_vision_model():
    from envgym.errors import SpecError

    with pytest.raises(SpecError, match="vision-language"):
        tiny_config(images=True)
    with pytest.raises(SpecError, match="model_path"):
        tiny_config(model="vlm")
