"""TRL's GRPOTrainer trains on envgym episodes through EnvgymRollout (rollout_func): a real trainer, a tiny model."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("trl", reason="the TRL adapter needs trl (pip install trl)")

import envgym
from envgym.errors import SpecError
from envgym.rl.adapters.trl import EnvgymRollout, envgym_reward, trl_dataset
from envgym.rl.models import tiny_policy


def suite_tasks(n: int, suite: str = "timed-backoffice"):
    # TRL scores every position on a CPU (prompt included): the suite with the shortest prompt keeps it fast
    tasks = envgym.load_suite(suite, split="train")[:n]
    # a random tiny model rarely stops on its own: cap the episode so the test stays fast
    return [t.model_copy(update={"limits": t.limits.model_copy(update={"max_steps": 2})}) for t in tasks]


@pytest.mark.slow
# TRL 1.16 still calls transformers' deprecated gradient-checkpointing names
@pytest.mark.filterwarnings("ignore:.*gradient_checkpointing.*:FutureWarning")
def test_grpo_trainer_takes_an_optimizer_step_on_envgym_verdicts(tmp_path, monkeypatch):
    from trl import GRPOConfig, GRPOTrainer

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    model, tokenizer = tiny_policy(seed=0, layers=1, hidden=32, heads=2)
    tokenizer.padding_side = "left"
    tasks = suite_tasks(2)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=2, num_generations=2, max_steps=1,
                      learning_rate=1e-2, logging_steps=1, report_to="none", use_cpu=True, save_strategy="no",
                      max_completion_length=24, seed=0, dataloader_num_workers=0, beta=0.0,
                      activation_checkpointing=False)
    with EnvgymRollout(tasks, max_tokens=24, concurrency=2, temperature=1.0) as rollout:
        trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=envgym_reward,
                              train_dataset=trl_dataset(tasks), args=args, rollout_func=rollout)
        trainer.train()
        episodes = rollout.episodes

    assert trainer.state.global_step == 1
    assert len(episodes) == 2 and len({e.trajectory.task_id for e in episodes}) == 1  # one GRPO group
    for episode in episodes:
        trajectory = episode.trajectory
        assert trajectory.verdict is not None, trajectory.error  # graded by envgym, not an infra error
        assert trajectory.reward == trajectory.verdict.score
        sample = episode.samples[-1]
        assert len(sample.completion_ids) == len(sample.loss_mask) == len(sample.logprobs)
        assert sum(sample.loss_mask) > 0
    logged = next(entry for entry in trainer.state.log_history if "reward" in entry)
    verdicts = [e.trajectory.verdict.score for e in episodes]
    assert logged["rewards/envgym_reward/mean"] == pytest.approx(sum(verdicts) / len(verdicts))
    assert logged["reward"] == pytest.approx(sum(verdicts) / len(verdicts))
    # the rollouts came from the trainer's own model, at the trainer's step
    assert {s.policy_versions[i] for e in episodes for s in e.samples
            for i, m in enumerate(s.loss_mask) if m} == {0}
    if len(set(verdicts)) > 1:  # a nonzero advantage moves the weights
        assert any(not v.equal(model.state_dict()[k]) for k, v in before.items())


def test_rollout_maps_prompts_back_to_tasks_even_when_instructions_repeat():
    tasks = suite_tasks(3)
    assert len({t.instruction for t in tasks}) < len(tasks)  # the suite repeats an instruction
    rollout = EnvgymRollout(tasks)
    dataset = trl_dataset(tasks)
    assert [rollout._task_for(row["prompt"]).id for row in dataset] == [t.id for t in tasks]
    with pytest.raises(SpecError, match="names no task"):
        rollout._task_for([{"role": "user", "content": tasks[0].instruction}])


def test_a_failed_episode_is_retried_with_a_fresh_env_and_never_scored_zero():
    from types import SimpleNamespace

    from envgym.rl.backends import TransformersBackend

    tasks = suite_tasks(1)
    model, tokenizer = tiny_policy(seed=0, layers=1, hidden=32, heads=2)
    trainer = SimpleNamespace(model=model, processing_class=tokenizer, state=SimpleNamespace(global_step=3),
                              num_generations=2, num_generations_eval=2)
    built: list[str] = []

    def flaky(env_id):  # the first env of the run cannot be built; later ones can
        built.append(env_id)
        if len(built) == 1:
            raise RuntimeError("sandbox did not start")
        return envgym.make(env_id)

    prompts = [row["prompt"] for row in trl_dataset(tasks)] * 2
    backend = TransformersBackend(model, tokenizer)
    with EnvgymRollout(tasks, backend=backend, max_tokens=8, concurrency=1, make_env=flaky) as rollout:
        out = rollout(prompts, trainer)
        assert len(built) == 3  # two episodes, one retried
        assert all(e.trajectory.outcome.value != "infra_error" for e in rollout.episodes)
        assert out["envgym_reward"] == [e.trajectory.verdict.score for e in rollout.episodes]
        assert backend.policy_version == 3  # the version followed the trainer's step
        assert all(v == 3 for s in rollout.episodes[0].samples for v, m in zip(s.policy_versions, s.loss_mask,
                                                                               strict=True) if m)

    def broken(env_id):
        raise RuntimeError("no env today")

    with EnvgymRollout(tasks, backend=backend, max_tokens=8, retries=1, make_env=broken) as rollout:
        out = rollout(prompts[:1], trainer)
    asyncio.run(backend.aclose())  # a backend passed in belongs to the caller
    assert out["envgym_reward"] == [None] and out["envgym_outcome"] == ["infra_error"]  # out of the baseline
    assert out["env_mask"] == [[0]] and out["prompt_ids"][0]  # an untrained placeholder completion
