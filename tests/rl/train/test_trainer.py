"""The trainer end to end on a tiny random policy: exact sync equivalence, staleness, retries, checkpoints."""

from __future__ import annotations

import json

import pytest
import torch
from train_fakes import FlakyBuilder, PickyEnv, VowelEnv, tiny_config, vowel_tasks

from envgym.rl.samples import TrainingSample
from envgym.rl.train.checkpoint import latest_checkpoint
from envgym.rl.train.rollout import Group, Member
from envgym.rl.train.trainer import Trainer, read_metrics
from envgym.trajectory import Trajectory
from envgym.types import Outcome

TIMING = {"wait_s", "train_s", "step_s", "wall_s", "samples_per_s", "tokens_per_s", "mode", "config_hash",
          "max_staleness"}


def _policy():
    from envgym.rl.models import tiny_policy

    return tiny_policy(seed=0)


async def _run(tmp_path, name, config, make_env=None, resume=True):
    policy = _policy()
    trainer = Trainer(config, tmp_path / name, policy=policy, tasks=vowel_tasks(),
                      make_env=make_env or (lambda env_id: VowelEnv()), resume=resume)
    result = await trainer.run()
    return result, policy.model


def _learning(metrics):
    return [{k: v for k, v in line.items() if k not in TIMING} for line in metrics]


async def test_max_staleness_zero_is_synchronous_training_exactly(tmp_path):
    sync, sync_model = await _run(tmp_path, "sync", tiny_config(mode="sync", steps=2))
    lagged, lagged_model = await _run(tmp_path, "async0", tiny_config(mode="async", max_staleness=0, steps=2))
    assert sync.steps_done == lagged.steps_done == 2
    assert any(line["loss"] != 0 for line in sync.metrics)  # the rewards varied: the weights did move
    assert _learning(sync.metrics) == _learning(lagged.metrics)
    for (name, a), (_, b) in zip(sync_model.state_dict().items(), lagged_model.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    initial = _policy().model.state_dict()
    assert any(not torch.equal(initial[k], v) for k, v in sync_model.state_dict().items())


async def test_async_run_never_trains_on_samples_older_than_max_staleness(tmp_path):
    config = tiny_config(mode="async", max_staleness=1, steps=3, env_latency_s=0.05)
    result, _ = await _run(tmp_path, "async1", config)
    histogram = {}
    for line in result.metrics:
        assert line["stale_dropped"] == 0
        for age, count in line["staleness"].items():
            histogram[int(age)] = histogram.get(int(age), 0) + count
    assert histogram and max(histogram) <= 1
    lines = read_metrics(tmp_path / "async1")
    assert [line["step"] for line in lines] == [1, 2, 3] and lines[0]["config_hash"] == config.hash


def _sample(version: int, reward: float, member: int) -> TrainingSample:
    return TrainingSample(sample_id=f"e{member}:0", group_id="g", episode_id=f"e{member}", task_id="t", task_hash="h",
                          env_id="test/vowels-v1", segment=0, prompt_ids=[1, 2, 3], completion_ids=[4, 5, 6],
                          loss_mask=[1, 0, 1], logprobs=[-1.0, 0.0, -1.0], policy_versions=[version, -1, version],
                          reward=reward, status="success")


async def test_the_trainer_drops_a_sample_beyond_the_staleness_bound(tmp_path):
    from envgym.rl.train.learner import Learner

    config = tiny_config(mode="async", max_staleness=1)
    trainer = Trainer(config, tmp_path, tasks=vowel_tasks())
    trainer._t0, trainer._generated_tokens, trainer._trained_samples = 0.0, 0, 0
    seen = []

    class Recording(Learner):
        def train_step(self, samples, advantages):
            seen.extend(samples)
            return super().train_step(samples, advantages)

    class Backend:
        async def update_weights(self, state, version):
            self.version = version

    (tmp_path).mkdir(exist_ok=True)
    members = [Member(Trajectory(task_id="t", task_hash="h", env_id="e", outcome=Outcome.SUCCESS, reward=r),
                      [_sample(v, r, i)], 1) for i, (v, r) in enumerate([(5, 1.0), (3, 0.0), (4, 0.5)])]
    group = Group(0, vowel_tasks()[0], members, 3)
    await trainer._train(5, [group], Recording(_policy().model, config), Backend(), 0.0, 0.0)
    line = trainer.metrics[-1]
    assert line["stale_dropped"] == 1 and line["staleness"] == {"0": 1, "1": 1}  # step 5: versions 5, 4 kept
    assert sorted(s.min_policy_version for s in seen) == [4, 5]


async def test_a_failed_episode_is_retried_with_a_fresh_env_and_the_group_keeps_its_size(tmp_path):
    builder = FlakyBuilder(failures=2)
    config = tiny_config(mode="sync", steps=1, max_retries=2, concurrency=1)
    result, _ = await _run(tmp_path, "flaky", config, make_env=builder)
    line = result.metrics[0]
    assert line["retries"] == 2 and line["infra_errors"] == 0
    assert line["episodes"] == config.episodes_per_step and line["samples"] == config.episodes_per_step
    assert builder.built == 3  # two broken envs discarded, one healthy env reused


async def test_an_episode_that_keeps_failing_leaves_the_loss_but_not_the_run(tmp_path):
    config = tiny_config(mode="sync", steps=1, max_retries=1)
    tasks = [*vowel_tasks(1), vowel_tasks(1)[0].model_copy(update={"id": "bad", "instruction": "broken"})]
    trainer = Trainer(config, tmp_path, policy=_policy(), tasks=tasks, make_env=lambda env_id: PickyEnv())
    line = (await trainer.run()).metrics[0]
    assert line["infra_errors"] == 2 and line["retries"] == 2 and line["samples"] == 2


async def test_checkpoint_resume_continues_the_same_run(tmp_path):
    whole, whole_model = await _run(tmp_path, "whole", tiny_config(mode="sync", steps=2))
    first, _ = await _run(tmp_path, "split", tiny_config(mode="sync", steps=1))
    assert latest_checkpoint(tmp_path / "split").name == "step-00001"
    rest, rest_model = await _run(tmp_path, "split", tiny_config(mode="sync", steps=2))
    assert first.steps_done == 1 and rest.steps_done == 2 and [m["step"] for m in rest.metrics] == [2]
    for (name, a), (_, b) in zip(whole_model.state_dict().items(), rest_model.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    lines = read_metrics(tmp_path / "split")
    assert _learning(lines) == _learning(whole.metrics)
    assert lines[1]["wall_s"] >= lines[0]["wall_s"]  # the clock continues across the resume
    state = json.loads((latest_checkpoint(tmp_path / "split") / "state.json").read_text())
    assert state["step"] == 2


async def test_resuming_with_another_config_is_refused(tmp_path):
    from envgym.errors import SpecError

    await _run(tmp_path, "run", tiny_config(mode="sync", steps=1))
    with pytest.raises(SpecError, match="different training config"):
        await _run(tmp_path, "run", tiny_config(mode="sync", steps=2, lr=1e-2))


async def test_cancelling_a_run_checkpoints_the_last_finished_step_and_closes_everything(tmp_path):
    import asyncio

    built: list[VowelEnv] = []

    class Tracked(VowelEnv):
        closed = False

        async def close(self) -> None:
            self.closed = True

    def make_env(env_id):
        built.append(Tracked())
        return built[-1]

    first_step = asyncio.Event()
    config = tiny_config(mode="async", max_staleness=1, steps=50, checkpoint_every=100)
    trainer = Trainer(config, tmp_path / "run", policy=_policy(), tasks=vowel_tasks(), make_env=make_env,
                      report=lambda line: first_step.set())
    task = asyncio.create_task(trainer.run())
    await first_step.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    saved = latest_checkpoint(tmp_path / "run")
    assert saved is not None and json.loads((saved / "state.json").read_text())["step"] >= 1
    assert built and all(env.closed for env in built)
