"""The learner: one optimizer step of the GRPO-family loss over a step's training samples.

    learner = Learner(model, config)
    metrics = learner.train_step(samples, advantages)    # blocking: call it in a worker thread
    learner.weights()                                    # the state dict to push to the inference backend

A sample is scored as ``prompt_ids + completion_ids``; the trainer's log-probability of each completion
token is taken at the sampling temperature (``log_softmax(logits / T)``), the distribution the rollout
logprobs describe. Sequences are laid out with the prompt left-padded and the completion right-padded, so
every completion starts at the same column and only the completion's logits are materialised
(``logits_to_keep``), which keeps a 49k-token vocabulary affordable on a CPU.

A vision-language policy (``processor=`` and ``images=``, the run's :class:`~envgym.rl.vision.ImageStore`):
a sample's ``images`` are read back from the store and put through the same processor as at rollout time,
so the pixel values, placeholder tokens and M-RoPE positions are the rollout's (the positions of a
left-padded row are computed over its real tokens only, as the backend does).

With ``updates_per_step == 1`` the proximal ("old") policy *is* the current one: ``old = new.detach()``
from the same forward pass, so the PPO ratio is exactly 1 and one forward pass is saved. With more
mini-batches, ``old`` is computed once, without gradient, before the first update. Everything is
deterministic for a given sample order and seed (CPU), which the ``max_staleness=0`` test relies on.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import torch

from envgym.rl.train.config import TrainConfig
from envgym.rl.train.loss import LossConfig, grpo_loss, kl_estimate, quantiles
from envgym.rl.vision import VisionProcessor


class Learner:
    """Owns the trained model and its optimizer; see the module docstring."""

    def __init__(self, model: Any, config: TrainConfig, *, processor: Any = None, images: Any = None) -> None:
        self.model = model
        self.config = config
        self.vision = VisionProcessor.of(processor) if processor is not None else None
        self.images = images
        self.device = next(model.parameters()).device
        self.params = trainable(model, config.trainable_layers)
        self.optimizer = torch.optim.AdamW(self.params, lr=config.lr, weight_decay=config.weight_decay)
        self.loss_config = LossConfig(clip_eps_low=config.clip_eps_low, clip_eps_high=config.clip_eps_high,
                                      is_mode=config.is_mode, is_cap=config.is_cap, is_low=config.is_low,
                                      is_high=config.is_high)
        self.pad_id = 0
        self.steps_done = 0
        """Optimizer steps taken (the policy version of the weights)."""
        self.lock = threading.Lock()
        """Held by a step in progress; checkpoints take it so they never save half a step."""

    def weights(self) -> dict[str, torch.Tensor]:
        """The model's state dict (live tensors: copy them before the next step changes them)."""
        return self.model.state_dict()

    # -- batching ---------------------------------------------------------------------------------------

    def _batch(self, samples: Sequence[Any]) -> dict[str, torch.Tensor]:
        width_p = max(len(s.prompt_ids) for s in samples)
        width_c = max(len(s.completion_ids) for s in samples)
        rows = len(samples)
        ids = torch.full((rows, width_p + width_c), self.pad_id, dtype=torch.long)
        attention = torch.zeros((rows, width_p + width_c), dtype=torch.long)
        targets = torch.full((rows, width_c), self.pad_id, dtype=torch.long)
        mask = torch.zeros((rows, width_c), dtype=torch.float32)
        rollout = torch.zeros((rows, width_c), dtype=torch.float32)
        for row, s in enumerate(samples):
            p, c = len(s.prompt_ids), len(s.completion_ids)
            ids[row, width_p - p:width_p] = torch.tensor(s.prompt_ids, dtype=torch.long)
            ids[row, width_p:width_p + c] = torch.tensor(s.completion_ids, dtype=torch.long)
            attention[row, width_p - p:width_p + c] = 1
            targets[row, :c] = torch.tensor(s.completion_ids, dtype=torch.long)
            mask[row, :c] = torch.tensor(s.loss_mask, dtype=torch.float32)
            rollout[row, :c] = torch.tensor(s.logprobs, dtype=torch.float32)
        positions = (attention.cumsum(-1) - 1).clamp(min=0)
        batch = {"ids": ids.to(self.device), "attention": attention.to(self.device),
                 "positions": positions.to(self.device), "targets": targets.to(self.device),
                 "mask": mask.to(self.device), "rollout": rollout.to(self.device), "width_c": torch.tensor(width_c)}
        if self.vision is not None:
            self._add_images(batch, samples)
        return batch

    def _add_images(self, batch: dict[str, Any], samples: Sequence[Any]) -> None:
        refs = [ref for s in samples for ref in getattr(s, "images", ())]
        if refs and self.images is None:
            raise ValueError("samples with images need the learner's image store (Learner(images=...))")
        features: dict[str, Any] = {}
        if refs:
            pictures = [self.images.pil(ref) for ref in refs]
            features = {k: v.to(self.device) for k, v in self.vision.features(pictures).items()}
            features["pixel_values"] = features["pixel_values"].to(next(self.model.parameters()).dtype)
        rope = self.vision.positions(self.model, batch["ids"], batch["attention"], features)
        if rope is not None:
            batch["positions"] = rope[0]
        batch["features"] = features

    def logprobs(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """The model's log-probability of every completion token, ``[B, width_c]`` (float32)."""
        width_c = int(batch["width_c"])
        out = self.model(input_ids=batch["ids"], attention_mask=batch["attention"], position_ids=batch["positions"],
                         use_cache=False, logits_to_keep=width_c + 1, **batch.get("features", {}))
        logits = out.logits[:, :-1, :].float() / self.config.temperature  # position t predicts token t + 1
        return torch.log_softmax(logits, dim=-1).gather(-1, batch["targets"].unsqueeze(-1)).squeeze(-1)

    # -- one step ---------------------------------------------------------------------------------------

    def train_step(self, samples: Sequence[Any], advantages: Sequence[float]) -> dict[str, Any]:
        """One optimizer step per mini-batch over ``samples`` (in the given order); returns step metrics."""
        with self.lock:
            stats = self._train_step(samples, advantages)
            self.steps_done += 1
            return stats

    def _train_step(self, samples: Sequence[Any], advantages: Sequence[float]) -> dict[str, Any]:
        cfg = self.config
        pairs = [(s, a) for s, a in zip(samples, advantages, strict=True) if sum(s.loss_mask)]
        stats: dict[str, Any] = {"loss": 0.0, "grad_norm": 0.0, "tokens": 0, "clip_frac": 0.0, "seq_masked": 0}
        if not pairs:
            return {**stats, "kl_rollout_trainer": 0.0, "is_ratio": quantiles(torch.empty(0)), "updates": 0}
        self.model.train()
        chunks = _split(pairs, cfg.updates_per_step)
        old_all: list[torch.Tensor] | None = None
        if cfg.updates_per_step > 1:  # the proximal policy: this step's starting weights, no gradient
            with torch.no_grad():
                old_all = [self.logprobs(self._batch([s for s, _ in micro])).detach()
                           for chunk in chunks for micro in _micro(chunk, cfg.micro_batch_size)]
        drifts, clipped, updates, losses, norms = [], 0, 0, [], []
        micro_index = 0
        for chunk in chunks:
            self.optimizer.zero_grad(set_to_none=True)
            total = sum(sum(s.loss_mask) for s, _ in chunk)
            chunk_loss = 0.0
            for micro in _micro(chunk, cfg.micro_batch_size):
                batch = self._batch([s for s, _ in micro])
                new = self.logprobs(batch)
                old = old_all[micro_index] if old_all is not None else new.detach()
                micro_index += 1
                adv = torch.tensor([a for _, a in micro], dtype=torch.float32, device=self.device)
                parts = grpo_loss(new, old, batch["rollout"], batch["mask"], adv, self.loss_config, normalizer=total)
                parts.loss.backward()
                chunk_loss += float(parts.loss.item())
                drifts.append(parts.log_ratio_rollout.cpu())
                clipped += int(parts.clipped.item())
                stats["seq_masked"] += int((parts.seq_kept == 0).sum().item())
                stats["tokens"] += parts.tokens
            norm = torch.nn.utils.clip_grad_norm_(self.params, cfg.max_grad_norm)
            self.optimizer.step()
            updates += 1
            losses.append(chunk_loss)
            norms.append(float(norm))
        self.model.eval()
        drift = torch.cat(drifts) if drifts else torch.empty(0)
        stats.update(loss=sum(losses) / len(losses), grad_norm=max(norms), updates=updates,
                     clip_frac=clipped / max(stats["tokens"], 1), kl_rollout_trainer=kl_estimate(drift),
                     is_ratio=quantiles(torch.exp(drift)))
        return stats

    # -- checkpoints ------------------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """Model, optimizer and step count (call under ``lock``)."""
        return {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                "steps_done": self.steps_done}

    def load(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.steps_done = int(state["steps_done"])


def trainable(model: Any, last_layers: int | None) -> list[torch.nn.Parameter]:
    """The parameters to train: all, or the last ``last_layers`` decoder blocks and the final norm (the rest
    get ``requires_grad=False``, so autograd records nothing below the first trained block)."""
    if last_layers is None:
        return [p for p in model.parameters() if p.requires_grad]
    inner = getattr(model, "model", model)
    inner = getattr(inner, "language_model", inner)  # a VLM: train the language model's last blocks
    blocks = getattr(inner, "layers", None)
    if blocks is None:
        raise ValueError("trainable_layers needs a decoder with model.layers (Llama-style)")
    for p in model.parameters():
        p.requires_grad_(False)
    chosen = [*blocks[-last_layers:], *([inner.norm] if hasattr(inner, "norm") else [])]
    params = [p for module in chosen for p in module.parameters()]
    for p in params:
        p.requires_grad_(True)
    return params


def _split(items: list[Any], parts: int) -> list[list[Any]]:
    """``items`` in ``parts`` contiguous, near-equal, non-empty chunks."""
    size, extra = divmod(len(items), parts)
    out, start = [], 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        if end > start:
            out.append(items[start:end])
        start = end
    return out


def _micro(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i:i + size] for i in range(0, len(items), size)]
