"""The learner on a tiny policy: only model tokens and the chosen layers move; mini-batches step separately."""

from __future__ import annotations

import torch
from train_fakes import tiny_config

from envgym.rl.samples import TrainingSample
from envgym.rl.train.learner import Learner


def _samples(n: int = 4) -> list[TrainingSample]:
    return [TrainingSample(sample_id=f"e{i}:0", group_id="g", episode_id=f"e{i}", task_id="t", task_hash="h",
                           env_id="e", segment=0, prompt_ids=[5, 6, 7 + i], completion_ids=[8 + i, 9, 10, 11 + i],
                           loss_mask=[1, 0, 0, 1], logprobs=[-9.0, 0.0, 0.0, -9.0], policy_versions=[0, -1, -1, 0],
                           reward=float(i % 2), status="success") for i in range(n)]


def _model():
    from envgym.rl.models import tiny_policy

    return tiny_policy(seed=1).model


def test_only_the_last_blocks_train_when_asked():
    model = _model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    learner = Learner(model, tiny_config(trainable_layers=1, lr=1e-2))
    stats = learner.train_step(_samples(), [1.0, -1.0, 1.0, -1.0])
    after = model.state_dict()
    changed = {k for k in after if not torch.equal(before[k], after[k])}
    assert changed and all(k.startswith(("model.layers.1.", "model.norm.")) for k in changed)
    assert stats["tokens"] == 8 and learner.steps_done == 1  # two model tokens per sample; env tokens excluded


def test_zero_advantages_leave_the_weights_alone_and_minibatches_step_separately():
    model = _model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    learner = Learner(model, tiny_config(lr=1e-2))
    learner.train_step(_samples(), [0.0] * 4)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    learner = Learner(model, tiny_config(lr=5e-2, updates_per_step=2, clip_eps_low=0.01, clip_eps_high=0.01))
    stats = learner.train_step(_samples(), [1.0, -1.0, 1.0, -1.0])
    assert stats["updates"] == 2
    # rollout logprobs of -9 against the random model's (about -ln 49152): a drift the metrics show
    assert abs(stats["is_ratio"]["p50"] - 1) > 0.1 and stats["kl_rollout_trainer"] > 0
