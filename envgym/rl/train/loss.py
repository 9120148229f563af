"""The GRPO-family objective: group-normalised advantages, a clipped PPO ratio, rollout IS correction.

Three log-probabilities meet per completion token:

- ``rollout``: what the inference engine sampled with (``TrainingSample.logprobs``, possibly stale);
- ``old`` (the step's *proximal* policy): the trainer's weights at the start of the step, no gradient;
- ``new``: the weights being optimised.

The PPO ratio is ``exp(new - old)``, clipped to ``[1 - eps_low, 1 + eps_high]`` (decoupled PPO, as AReaL:
clipping is anchored at the trainer's own policy, not at whatever the engine ran). Off-policy drift between
``rollout`` and ``old`` (staleness, engine numerics, sampling settings) is corrected separately:

- ``token_tis``: each token weighted by ``min(exp(old - rollout), is_cap)`` (truncated IS, detached);
- ``seq_mask``: a sequence whose geometric-mean ratio ``exp(mean(old - rollout))`` is outside
  ``[is_low, is_high]`` gets no gradient at all;
- ``none``: weight 1.

Only model tokens count: ``mask`` is the samples' ``loss_mask`` (environment and template tokens are 0),
and every term is multiplied by it before anything is summed, so they never get gradient. The loss is a
token mean over the mask (DAPO's token-level aggregation: long answers are not down-weighted).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch


def group_advantages(rewards: Sequence[float], groups: Sequence[str], *, std_normalize: bool = True,
                     eps: float = 1e-6) -> list[float]:
    """``(r - mean_g) / (std_g + eps)`` per episode, over the episodes sharing its group id.

    A group whose rewards are all equal gets advantage 0 for every member (no signal, no gradient).
    ``std_normalize=False`` is mean-centring only (Dr. GRPO). std is the population std.
    """
    members: dict[str, list[float]] = {}
    for reward, group in zip(rewards, groups, strict=True):
        members.setdefault(group, []).append(float(reward))
    stats = {}
    for group, values in members.items():
        mean = sum(values) / len(values)
        std = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
        stats[group] = (mean, std)
    out = []
    for reward, group in zip(rewards, groups, strict=True):
        mean, std = stats[group]
        centred = float(reward) - mean
        out.append(0.0 if std == 0 else (centred / (std + eps) if std_normalize else centred))
    return out


@dataclass(frozen=True)
class LossConfig:
    clip_eps_low: float = 0.2
    clip_eps_high: float = 0.28
    is_mode: str = "token_tis"
    is_cap: float = 2.0
    is_low: float = 0.5
    is_high: float = 2.0


@dataclass
class LossParts:
    """The loss and the per-token quantities metrics are computed from (all detached except ``loss``)."""

    loss: torch.Tensor
    tokens: int
    clipped: torch.Tensor
    """Masked tokens whose ratio was clipped (count)."""
    is_ratio: torch.Tensor
    """``exp(old - rollout)`` at every masked token (1-D)."""
    log_ratio_rollout: torch.Tensor
    """``old - rollout`` at every masked token (1-D), for the KL estimate."""
    seq_kept: torch.Tensor
    """1 per sequence that contributes gradient, 0 where ``seq_mask`` dropped it."""


def grpo_loss(new: torch.Tensor, old: torch.Tensor, rollout: torch.Tensor, mask: torch.Tensor,
              advantages: torch.Tensor, config: LossConfig, *, normalizer: float | None = None) -> LossParts:
    """The clipped, IS-corrected policy-gradient loss of a padded batch ``[B, T]``.

    ``advantages`` is ``[B]`` (one per sequence). ``normalizer`` is the number of masked tokens the loss is
    averaged over (defaults to this batch's; pass the mini-batch's when accumulating micro-batches).
    """
    mask = mask.to(new.dtype)
    old, rollout = old.detach(), rollout.detach()
    log_ratio = (new - old) * mask
    ratio = torch.exp(log_ratio)
    low, high = 1.0 - config.clip_eps_low, 1.0 + config.clip_eps_high
    adv = advantages.to(new.dtype)[:, None]
    unclipped = ratio * adv
    clipped_term = torch.clamp(ratio, low, high) * adv
    surrogate = torch.minimum(unclipped, clipped_term)

    drift = (old - rollout) * mask  # log of the rollout-correction ratio
    weights = torch.ones_like(new)
    seq_kept = torch.ones(new.shape[0], dtype=new.dtype, device=new.device)
    if config.is_mode == "token_tis":
        weights = torch.clamp(torch.exp(drift), max=config.is_cap)
    elif config.is_mode == "seq_mask":
        per_seq = drift.sum(-1) / mask.sum(-1).clamp(min=1)
        geo = torch.exp(per_seq)
        seq_kept = ((geo >= config.is_low) & (geo <= config.is_high)).to(new.dtype)
        weights = weights * seq_kept[:, None]
    elif config.is_mode != "none":
        raise ValueError(f"unknown is_mode {config.is_mode!r}")

    count = int(mask.sum().item())
    denom = float(normalizer if normalizer is not None else max(count, 1))
    loss = -(weights.detach() * surrogate * mask).sum() / denom
    on = mask.bool()
    was_clipped = on & (clipped_term < unclipped)  # the minimum took the clipped term: no gradient there
    return LossParts(loss=loss, tokens=count, clipped=was_clipped.sum().detach(),
                     is_ratio=torch.exp(drift[on]).detach(), log_ratio_rollout=drift[on].detach(),
                     seq_kept=seq_kept.detach())


def kl_estimate(log_ratio: torch.Tensor) -> float:
    """k3 estimate of KL(rollout || trainer) from ``old - rollout`` at sampled tokens (0 when they agree)."""
    if log_ratio.numel() == 0:
        return 0.0
    x = log_ratio.double()  # float32 rounds exp(x) - x - 1 to 0 for |x| < 1e-4, where engines usually are
    return float((torch.exp(x) - x - 1).mean().item())


def quantiles(values: torch.Tensor, qs: Sequence[float] = (0.05, 0.5, 0.95)) -> dict[str, float]:
    """``{"p05": …, "p50": …, "p95": …, "max": …}`` of a 1-D tensor (empty: ones, the neutral ratio)."""
    if values.numel() == 0:
        return {**{f"p{round(q * 100):02d}": 1.0 for q in qs}, "max": 1.0}
    v = values.float()
    out = {f"p{round(q * 100):02d}": float(torch.quantile(v, q).item()) for q in qs}
    out["max"] = float(v.max().item())
    return out
