"""The GRPO objective: group advantages, PPO clipping, masks, importance-sampling corrections."""

from __future__ import annotations

import math

import pytest
import torch

from envgym.rl.train.loss import LossConfig, group_advantages, grpo_loss, kl_estimate, quantiles


def test_group_advantages_normalise_within_each_group():
    adv = group_advantages([1.0, 0.0, 0.5, 0.5, 0.2], ["a", "a", "b", "b", "c"])
    assert adv[0] == pytest.approx(1.0, abs=1e-5) and adv[1] == pytest.approx(-1.0, abs=1e-5)
    assert adv[2:] == [0.0, 0.0, 0.0]  # equal rewards (or a lone member): no signal
    centred = group_advantages([1.0, 0.0, 0.0, 0.0], ["g"] * 4, std_normalize=False)
    assert centred == pytest.approx([0.75, -0.25, -0.25, -0.25])
    assert sum(group_advantages([0.3, 0.9, 0.1], ["g"] * 3)) == pytest.approx(0.0, abs=1e-6)


def _loss(new, old, rollout, mask, adv, **config):
    return grpo_loss(new, old, rollout, mask, torch.tensor(adv), LossConfig(**config))


def test_environment_tokens_never_get_gradient():
    new = torch.randn(2, 5, requires_grad=True)
    mask = torch.tensor([[0, 1, 1, 0, 1], [1, 0, 0, 1, 0]], dtype=torch.float32)
    parts = _loss(new, new.detach() - 0.1, new.detach() - 0.3, mask, [1.0, -2.0], is_mode="token_tis")
    parts.loss.backward()
    assert torch.all(new.grad[mask == 0] == 0)
    assert torch.all(new.grad[mask == 1] != 0)
    assert parts.tokens == 5


def test_ratio_is_clipped_on_the_side_the_advantage_pushes():
    old = torch.zeros(1, 4)
    new = torch.tensor([[0.5, 0.5, -0.5, 0.0]], requires_grad=True)  # ratios e^.5 (clipped), e^.5, e^-.5, 1
    mask = torch.ones(1, 4)
    parts = _loss(new, old, old, mask, [1.0], clip_eps_low=0.2, clip_eps_high=0.2, is_mode="none")
    parts.loss.backward()
    # positive advantage: a ratio above 1 + eps is clipped (no gradient); below 1 - eps it still gets one
    assert new.grad[0, 0] == 0 and new.grad[0, 1] == 0
    assert new.grad[0, 2] != 0 and new.grad[0, 3] != 0
    assert int(parts.clipped) == 2
    new.grad = None
    parts = _loss(new, old, old, mask, [-1.0], clip_eps_low=0.2, clip_eps_high=0.2, is_mode="none")
    parts.loss.backward()
    assert new.grad[0, 2] == 0 and new.grad[0, 0] != 0  # negative advantage: the low side clips


def test_token_tis_caps_the_rollout_correction():
    new = torch.zeros(1, 3, requires_grad=True)
    rollout = torch.tensor([[0.0, -math.log(4.0), math.log(2.0)]])  # trainer/rollout ratios 1, 4, 0.5
    mask = torch.ones(1, 3)
    parts = _loss(new, new.detach(), rollout, mask, [1.0], is_mode="token_tis", is_cap=2.0)
    parts.loss.backward()
    assert new.grad[0].tolist() == pytest.approx([-1 / 3, -2 / 3, -0.5 / 3], rel=1e-5)
    assert sorted(parts.is_ratio.tolist()) == pytest.approx([0.5, 1.0, 4.0], rel=1e-5)


def test_seq_mask_drops_sequences_whose_ratio_is_out_of_bounds():
    new = torch.zeros(3, 2, requires_grad=True)
    rollout = torch.tensor([[0.0, 0.0], [-2.0, -2.0], [0.3, 0.0]])  # geometric ratios 1, e^2, e^-.15
    mask = torch.ones(3, 2)
    parts = _loss(new, new.detach(), rollout, mask, [1.0, 1.0, 1.0], is_mode="seq_mask", is_low=0.5, is_high=2.0)
    parts.loss.backward()
    assert parts.seq_kept.tolist() == [1.0, 0.0, 1.0]
    assert torch.all(new.grad[1] == 0) and torch.all(new.grad[0] != 0) and torch.all(new.grad[2] != 0)


def test_none_mode_trusts_the_rollout_and_unknown_modes_fail():
    new = torch.zeros(1, 2, requires_grad=True)
    parts = _loss(new, new.detach(), torch.tensor([[-3.0, 3.0]]), torch.ones(1, 2), [1.0], is_mode="none")
    parts.loss.backward()
    assert new.grad[0].tolist() == pytest.approx([-0.5, -0.5])
    with pytest.raises(ValueError, match="is_mode"):
        _loss(new, new.detach(), new.detach(), torch.ones(1, 2), [1.0], is_mode="bogus")


def test_kl_and_quantiles():
    assert kl_estimate(torch.zeros(5)) == 0.0
    assert kl_estimate(torch.tensor([0.1, -0.1])) > 0
    q = quantiles(torch.arange(101, dtype=torch.float32))
    assert q["p05"] == pytest.approx(5) and q["p50"] == pytest.approx(50) and q["max"] == 100
    assert quantiles(torch.empty(0))["p50"] == 1.0
