"""The bundled trainer: rollouts from the vector pool through the recording proxy, a GRPO learner, weight sync.

    result = await Trainer(config, out_dir).run()        # or: envgym train --recipe cpu-smollm2 --out DIR

One process holds two copies of the policy: the learner's (trained) and the inference backend's (an
in-process :class:`~envgym.rl.TransformersBackend` behind a :class:`~envgym.rl.RecordingProxy`; agents are
envgym ``openai`` agents on loopback). After every optimizer step the learner's weights are pushed with
``backend.update_weights(weights, version)``, which waits for the generation in flight, swaps the weights,
bumps the policy version and drops every cache. Step ``s`` trains with weights of version ``s`` and leaves
version ``s + 1``.

``mode="sync"``: generate step ``s``'s groups, train, push, repeat. ``mode="async"``: a producer starts
group ``i`` (consumed at step ``i // groups_per_step``) as soon as the policy version is at least
``step - max_staleness``, so generation of later steps overlaps training; the trainer consumes groups in
index order. A sample whose oldest model token is older than ``step - max_staleness`` is never trained on
(dropped and counted; the gate makes that impossible, the check makes it a guarantee). With
``max_staleness=0`` the producer starts step ``s``'s groups exactly when the sync loop would, so the run is
the synchronous one, bit for bit, given batch-invariant generation (``gen_batch=1``; tested).

``Trainer(..., ray="auto" | ADDRESS)`` plays the rollouts on a Ray cluster's envgym hosts
(:mod:`envgym.vector.ray`; ``envgym train --ray``): the envs run there, the policy stays here behind the proxy,
which then listens on ``proxy_host`` (an address the hosts reach; loopback only suits a one-machine cluster).
The run is the same as a local one for the same config and seeds: a member's env seed, session key and
sampling seeds do not depend on where it ran.

Tasks: a suite's (a seeded shuffle per epoch), or with ``generator`` a :class:`~envgym.rl.stream.TaskStream`:
a fresh generated task for every group, its level set by the configured curriculum (see
:mod:`envgym.rl.train.rollout` for when the curriculum sees outcomes). Every metrics line names its groups'
tasks (``task_ids``) and, from a stream, their levels and per-episode outcomes (``task_levels``,
``task_solved``).

Outputs in ``out_dir``: ``config.json``, ``metrics.jsonl`` (one line per step, with the config hash),
``checkpoints/step-NNNNN/`` (model, optimizer, trainer state; the last ``keep_checkpoints``), and for a VLM
``images/`` (every screenshot the episodes sent, once per content hash: what samples refer to). A run
started again on the same ``out_dir`` resumes from the newest checkpoint. Cancellation (Ctrl-C) saves a
checkpoint of the last finished step, then closes the pool, the proxy and the backend.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
import json
import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envgym.compose import make
from envgym.env import Env
from envgym.errors import SpecError
from envgym.rl.backends import TransformersBackend
from envgym.rl.proxy import RecordingProxy, Sampling
from envgym.rl.samples import write_samples
from envgym.rl.stream import TaskStream
from envgym.rl.train.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from envgym.rl.train.config import TrainConfig
from envgym.rl.train.learner import Learner
from envgym.rl.train.loss import group_advantages
from envgym.rl.train.rollout import EnvBuilder, Group, GroupRunner, call_seed
from envgym.rl.vision import ImageStore
from envgym.task import TaskSpec, load_suite
from envgym.types import Outcome

log = logging.getLogger(__name__)

Reporter = Callable[[dict[str, Any]], None]


@dataclass
class TrainResult:
    steps_done: int
    metrics: list[dict[str, Any]]
    out_dir: Path


def select_tasks(config: TrainConfig) -> Sequence[TaskSpec] | TaskStream:
    """The run's tasks: ``generator``'s endless stream (seeded by the run seed, with the configured level or
    curriculum), or the suite's tasks (a generator suite such as ``NAME@0:1000`` stays lazy: a task is made when
    a group draws it, and ``task_limit`` without tags makes none up front)."""
    if config.generator is not None:
        from envgym.generate import find

        levels = find(config.generator).levels
        curriculum = config.curriculum.build(levels) if config.curriculum is not None else None
        try:
            return TaskStream(config.generator, seed=config.seed, split=config.split, level=config.generator_level,
                              curriculum=curriculum)
        except SpecError as exc:  # named by the config's field, not the stream's argument
            field = {"level": "generator_level"}.get(exc.field or "", exc.field or "generator")
            message = str(exc).removesuffix(f" (field {exc.field!r})") if exc.field else str(exc)
            raise SpecError(message, field=field) from None
    tasks: Sequence[TaskSpec] = load_suite(config.suite, split=config.split)
    if config.task_tags:
        wanted = set(config.task_tags)
        tasks = list(itertools.islice((t for t in tasks if wanted <= set(t.tags)), config.task_limit))
    elif config.task_limit is not None:
        tasks = tasks[: config.task_limit]
    if not tasks:
        raise SpecError(f"no tasks in suite {config.suite!r} match split {config.split!r} and tags "
                        f"{list(config.task_tags)}", field="suite")
    return tasks


def load_policy(config: TrainConfig) -> tuple[Any, ...]:
    """The model to train, its tokenizer and, for a VLM, its processor (blocking)."""
    import torch

    from envgym.rl.models import load_smollm2, load_vlm, tiny_policy, tiny_vlm

    if config.torch_threads:
        torch.set_num_threads(config.torch_threads)
    dtype = torch.bfloat16 if config.dtype == "bfloat16" else torch.float32
    if config.model == "tiny":
        model, tokenizer = tiny_policy(seed=config.seed)
        model = model.to(dtype)
    elif config.model == "tiny-vlm":
        model, tokenizer, processor = tiny_vlm(seed=config.seed)
        return model.to(dtype).to(config.device), tokenizer, processor
    elif config.model == "vlm":
        return tuple(load_vlm(config.model_path, dtype=dtype, device=config.device))
    else:
        model, tokenizer = load_smollm2(dtype=dtype)
    return model.to(config.device), tokenizer


class Trainer:
    """See the module docstring. ``policy`` (model, tokenizer[, processor]) and ``tasks`` override what the
    config names."""

    def __init__(self, config: TrainConfig, out_dir: str | Path, *, policy: tuple[Any, ...] | None = None,
                 tasks: Sequence[TaskSpec] | TaskStream | None = None, make_env: Callable[[str], Env] = make,
                 report: Reporter | None = None, resume: bool = True, ray: str | None = None,
                 proxy_host: str = "127.0.0.1") -> None:
        self.config = config
        self.out_dir = Path(out_dir)
        self.policy = policy
        self.tasks = tasks
        self.make_env = make_env
        self.report = report or (lambda line: None)
        self.resume = resume
        self.ray, self.proxy_host = ray, proxy_host
        self.metrics: list[dict[str, Any]] = []
        self._version = asyncio.Condition()

    # -- the run ----------------------------------------------------------------------------------------

    async def run(self) -> TrainResult:
        import torch

        cfg = self.config
        torch.manual_seed(cfg.seed)
        tasks = self.tasks if self.tasks is not None else select_tasks(cfg)
        model, tokenizer, *rest = self.policy or await asyncio.to_thread(load_policy, cfg)
        processor = rest[0] if rest else None
        self.out_dir.mkdir(parents=True, exist_ok=True)
        images = ImageStore(self.out_dir / "images") if processor is not None else None
        learner = Learner(model, cfg, processor=processor, images=images)
        learner.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        start = 0
        found = latest_checkpoint(self.out_dir) if self.resume else None
        if found is not None:
            state = await asyncio.to_thread(load_checkpoint, found, cfg)
            learner.load(state["learner"])
            start = learner.steps_done
            log.info("resumed from %s (step %d)", found, start)
        await asyncio.to_thread(self._write_config)
        infer_model = copy.deepcopy(model).eval()
        backend = TransformersBackend(infer_model, tokenizer, max_batch=cfg.gen_batch, policy_version=start,
                                      prefix_cache=cfg.prefix_cache, processor=processor)
        sampling = Sampling(temperature=cfg.temperature, top_p=1.0, max_tokens=cfg.max_new_tokens)
        proxy = RecordingProxy(backend, host=self.proxy_host, sampling=sampling, model_name=f"envgym-{cfg.model}",
                               seed_for=call_seed, images=images)
        build_env = EnvBuilder(self.make_env, cfg.env_latency_s, cfg.env_kwargs)
        if self.ray is None:
            from envgym.vector.pool import EpisodePool

            pool: Any = EpisodePool(concurrency=cfg.concurrency, make_env=build_env)
        else:  # the hosts' slots bound the episodes; a lost host's episode is retried by the runner
            from envgym.vector.ray import RayEpisodePool

            pool = RayEpisodePool(address=self.ray, make_env=build_env, max_attempts=1)
        # A resumed run continues its clock and counters from the metrics of the step it resumes at.
        before = [line for line in read_metrics(self.out_dir) if line["step"] <= start] if start else []
        self._t0 = time.perf_counter() - (before[-1]["wall_s"] if before else 0.0)
        self._generated_tokens = sum(line["model_tokens"] for line in before)
        self._trained_samples = sum(line["samples"] for line in before)
        saved = start
        try:
            await proxy.start()
            runner = GroupRunner(pool, proxy, cfg, tasks, run_id=f"s{cfg.seed}")
            runner.replay(before)
            loop = self._sync_loop if cfg.mode == "sync" else self._async_loop
            async with contextlib.aclosing(loop(runner, learner, backend, start)) as steps:
                async for step in steps:
                    if step % cfg.checkpoint_every == 0 or step == cfg.steps:
                        await asyncio.to_thread(save_checkpoint, self.out_dir, learner, cfg)
                        saved = step
        finally:
            # A checkpoint of the last finished step, even when interrupted (it waits for a step in progress).
            if learner.steps_done > saved:
                await asyncio.shield(asyncio.to_thread(save_checkpoint, self.out_dir, learner, cfg))
            await pool.aclose()
            await proxy.aclose()
            await backend.aclose()
        return TrainResult(learner.steps_done, self.metrics, self.out_dir)

    async def _sync_loop(self, runner: GroupRunner, learner: Learner, backend: TransformersBackend, start: int):
        cfg = self.config
        for step in range(start, cfg.steps):
            began = time.perf_counter()
            indices = range(step * cfg.groups_per_step, (step + 1) * cfg.groups_per_step)
            groups = list(await asyncio.gather(*(runner.run_group(i) for i in indices)))
            waited = time.perf_counter() - began
            await self._train(step, groups, learner, backend, waited, began, runner.observe_step(step, groups))
            yield step + 1

    async def _async_loop(self, runner: GroupRunner, learner: Learner, backend: TransformersBackend, start: int):
        cfg = self.config
        pending: dict[int, asyncio.Task[Group]] = {}

        async def produce() -> None:
            for index in range(start * cfg.groups_per_step, cfg.steps * cfg.groups_per_step):
                needed = index // cfg.groups_per_step - cfg.max_staleness
                async with self._version:
                    await self._version.wait_for(lambda needed=needed: backend.policy_version >= needed)
                pending[index] = asyncio.create_task(runner.run_group(index), name=f"envgym-train-group-{index}")
                async with self._version:
                    self._version.notify_all()  # the trainer may be waiting for this group to exist

        producer = asyncio.create_task(produce(), name="envgym-train-producer")
        try:
            for step in range(start, cfg.steps):
                began = time.perf_counter()
                groups = []
                for index in range(step * cfg.groups_per_step, (step + 1) * cfg.groups_per_step):
                    async with self._version:
                        await self._version.wait_for(lambda index=index: index in pending or producer.done())
                    if index not in pending:
                        producer.result()  # the producer died: raise its error
                        raise RuntimeError(f"group {index} was never started")
                    groups.append(await pending.pop(index))
                waited = time.perf_counter() - began
                await self._train(step, groups, learner, backend, waited, began, runner.observe_step(step, groups))
                yield step + 1
        finally:
            producer.cancel()
            for task in pending.values():
                task.cancel()
            await asyncio.gather(producer, *pending.values(), return_exceptions=True)

    # -- one step ---------------------------------------------------------------------------------------

    async def _train(self, step: int, groups: list[Group], learner: Learner, backend: TransformersBackend,
                     waited: float, began: float, tasks_line: dict[str, Any] | None = None) -> None:
        cfg = self.config
        samples, advantages, rewards, staleness = [], [], [], Counter()
        dropped = infra = 0
        for group in groups:
            ok = [m for m in group.members if not m.failed]
            infra += len(group.members) - len(ok)
            adv = group_advantages([m.trajectory.reward for m in ok], [str(group.index)] * len(ok),
                                   std_normalize=cfg.std_normalize)
            for member, a in zip(ok, adv, strict=True):
                rewards.append(member.trajectory.reward)
                for sample in member.samples:
                    self._generated_tokens += sample.model_tokens
                    age = step - sample.min_policy_version
                    if sample.min_policy_version < 0:
                        continue  # no model token: nothing to learn from
                    if age > cfg.max_staleness:
                        dropped += 1
                        continue
                    staleness[age] += 1
                    samples.append(sample)
                    advantages.append(a)
        if cfg.save_samples:
            await asyncio.to_thread(write_samples, self.out_dir / "samples.jsonl", samples, append=True)
        trained = time.perf_counter()
        stats = await asyncio.to_thread(learner.train_step, samples, advantages)
        train_s = time.perf_counter() - trained
        await backend.update_weights(learner.weights(), step + 1)
        async with self._version:
            self._version.notify_all()
        self._trained_samples += len(samples)
        wall = time.perf_counter() - self._t0
        successes = sum(m.trajectory.outcome is Outcome.SUCCESS for g in groups for m in g.members)
        episodes = sum(len(g.members) for g in groups)
        mean = sum(rewards) / len(rewards) if rewards else 0.0
        line = {
            "step": step + 1, "policy_version": step + 1, "mode": cfg.mode, "max_staleness": cfg.max_staleness,
            "config_hash": cfg.hash, "reward_mean": mean,
            "reward_std": (sum((r - mean) ** 2 for r in rewards) / len(rewards)) ** 0.5 if rewards else 0.0,
            "success_rate": successes / max(episodes, 1), "episodes": episodes, "samples": len(samples),
            "infra_errors": infra, "retries": sum(g.retries for g in groups), "stale_dropped": dropped,
            "staleness": {str(k): staleness[k] for k in sorted(staleness)},
            "loss": stats["loss"], "grad_norm": stats["grad_norm"], "clip_frac": stats["clip_frac"],
            "kl_rollout_trainer": stats["kl_rollout_trainer"], "is_ratio": stats["is_ratio"],
            "seq_masked": stats["seq_masked"], "model_tokens": stats["tokens"],
            "wait_s": round(waited, 4), "train_s": round(train_s, 4),
            "step_s": round(time.perf_counter() - began, 4), "wall_s": round(wall, 4),
            "samples_per_s": self._trained_samples / wall if wall else 0.0,
            "tokens_per_s": self._generated_tokens / wall if wall else 0.0,
            **(tasks_line or {}),
        }
        self.metrics.append(line)
        await asyncio.to_thread(self._append_metrics, line)
        self.report(line)

    def _append_metrics(self, line: dict[str, Any]) -> None:
        with open(self.out_dir / "metrics.jsonl", "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line, sort_keys=True) + "\n")

    def _write_config(self) -> None:
        payload = {"config": self.config.model_dump(mode="json"), "config_hash": self.config.hash}
        (self.out_dir / "config.json").write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """A run's metrics lines (``metrics.jsonl`` or its folder); the last line per step wins (resumed runs)."""
    path = Path(path)
    file = path / "metrics.jsonl" if path.is_dir() else path
    by_step: dict[int, dict[str, Any]] = {}
    with contextlib.suppress(FileNotFoundError):
        for raw in file.read_text(encoding="utf-8").splitlines():
            if raw.strip():
                line = json.loads(raw)
                by_step[line["step"]] = line
    return [by_step[k] for k in sorted(by_step)]
