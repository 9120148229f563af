"""TRL: train with ``GRPOTrainer`` on any envgym suite, through its ``rollout_func`` hook.

    from trl import GRPOConfig, GRPOTrainer
    from envgym.rl.adapters.trl import EnvgymRollout, envgym_reward, trl_dataset

    tasks = envgym.load_suite("tool-retail", split="train")
    rollout = EnvgymRollout(tasks, max_tokens=256)
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=envgym_reward,
                          train_dataset=trl_dataset(tasks), args=GRPOConfig(...), rollout_func=rollout)
    trainer.train()
    rollout.close()

TRL (1.16) calls ``rollout_func(prompts, trainer)`` once per generation batch with one prompt per completion
(each dataset row repeated ``num_generations`` times, consecutively). For each prompt the adapter plays a
whole envgym episode of the matching task (multi-turn, tool calls and tool results included) through the
recording proxy (:mod:`envgym.rl.proxy`) and returns, per episode:

- ``prompt_ids`` / ``completion_ids`` / ``logprobs``: the episode's token segment exactly as sampled
  (completion = model turns interleaved with tool results and template tokens; logprobs are the rollout's,
  0.0 on environment tokens);
- ``env_mask``: 1 on model tokens, 0 on environment tokens (TRL excludes the latter from the loss);
- ``envgym_reward``: the envgym verdict's score, or None for an episode that still failed after
  ``retries`` fresh attempts (TRL then leaves it out of the group baseline instead of scoring it 0);
- ``envgym_outcome``, ``envgym_task_id``: forwarded to reward functions and logs.

Rows of :func:`trl_dataset` name their task inside the prompt message (``envgym_task_id``), since TRL hands
the rollout only the prompts and tasks may share an instruction.

Fresh tasks: give a :class:`~envgym.rl.stream.TaskStream` instead of tasks (``EnvgymRollout(stream)``,
``trl_dataset(stream, rows=N)``). Every row is then a slot for a fresh task: each group of ``num_generations``
consecutive prompts plays the stream's next task (drawn in call order, so the same run seed gives the same
tasks), and every graded episode's outcome goes to the stream's curriculum when its call returns.

    stream = TaskStream("tool-retail-gen", seed=0, curriculum=SolveRateCurriculum((1, 2, 3)))
    rollout = EnvgymRollout(stream)
    trainer = GRPOTrainer(..., train_dataset=trl_dataset(stream, rows=steps * batch), rollout_func=rollout)

Pass :func:`envgym_reward` as the reward function so the trainer's reward is the verdict score. TRL trains
on one token sequence per completion; an episode whose prompts were not all exact extensions of each other
(several segments) contributes its last segment, whose prompt holds the whole earlier conversation, so
every trained token is scored in the context it was sampled in (``dropped_segments`` counts the rest).

The policy is the trainer's own model by default: an in-process
:class:`~envgym.rl.backends.TransformersBackend` over ``trainer.model``, whose version follows
``trainer.state.global_step`` (rollouts are on-policy). Another backend gets the trainer's weights through
``update_weights`` whenever the step moves; for a vLLM server that TRL already syncs (``use_vllm``) pass
``backend=VLLMBackend(...), sync_weights=False``. Episodes run concurrently on an
event loop in a background thread (TRL's loop is synchronous); call :meth:`EnvgymRollout.close` at the end.

Screenshots: **not supported by TRL's rollout path**, and refused plainly. TRL 1.16 computes a VLM's pixel
inputs only from the dataset's ``image``/``images`` column (images known before the episode starts) with its
own processor over the dataset prompt; a ``rollout_func`` cannot hand it the images an env produces during
an episode, so a policy that saw screenshots would be trained on the right tokens with the wrong (or no)
pixels. With a VLM backend the rollout raises a :class:`~envgym.errors.SpecError` instead; train on
screenshots with ``envgym train`` (``model="tiny-vlm"`` / ``"vlm"``, ``images=True``) or the verl adapter.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from envgym.compose import make
from envgym.env import Env
from envgym.errors import SpecError
from envgym.rl.adapters.episodes import LoopThread, RecordedEpisode, run_recorded_episode
from envgym.rl.stream import TaskStream
from envgym.task import TaskSpec
from envgym.types import Outcome

if TYPE_CHECKING:
    from envgym.rl.backends import InferenceBackend
    from envgym.rl.proxy import RecordingProxy


TASK_KEY = "envgym_task_id"
"""The key of the prompt message that names the task (chat templates ignore keys they do not know)."""
STREAM_SLOT = "envgym-stream:"
"""A row of a stream's dataset names no task but ``STREAM_SLOT + generator``: play the stream's next task."""


def task_prompt(task: TaskSpec) -> list[dict[str, str]]:
    """The conversational prompt a dataset row carries for ``task``: the instruction, tagged with the task id.

    TRL hands the rollout only the prompts, and tasks of a suite may share an instruction (the same request
    against different initial states), so the task id travels inside the message.
    """
    return [{"role": "user", "content": task.instruction, TASK_KEY: task.id}]


def trl_dataset(tasks: Sequence[TaskSpec] | TaskStream, *, rows: int | None = None) -> Any:
    """A ``datasets.Dataset`` with TRL's ``prompt`` column (conversational) and the task id, one row per task;
    for a :class:`~envgym.rl.stream.TaskStream`, ``rows`` slots each played as a fresh task of the stream."""
    from datasets import Dataset

    if isinstance(tasks, TaskStream):
        if not rows or rows < 1:
            raise SpecError("a task stream is endless: trl_dataset(stream, rows=N) says how many rows to make",
                            field="rows")
        slot = STREAM_SLOT + tasks.generator
        prompt = [{"role": "user", "content": f"(a fresh task of {tasks.generator})", TASK_KEY: slot}]
        return Dataset.from_list([{"prompt": prompt, "task_id": slot}] * rows)
    return Dataset.from_list([{"prompt": task_prompt(t), "task_id": t.id} for t in tasks])


def envgym_reward(prompts: list[Any], completions: list[Any], envgym_reward: list[float | None],
                  **kwargs: Any) -> list[float | None]:
    """TRL reward function: the envgym verdict score the rollout attached to each completion."""
    return list(envgym_reward)


class EnvgymRollout:
    """A TRL ``rollout_func`` that plays envgym episodes; see the module docstring."""

    def __init__(self, tasks: Sequence[TaskSpec] | TaskStream, *, backend: InferenceBackend | None = None,
                 backend_factory: Callable[[Any], InferenceBackend] | None = None,
                 temperature: float = 1.0, max_tokens: int | None = 256, concurrency: int = 8, retries: int = 1,
                 seed: int = 0, sync_weights: bool = True, make_env: Callable[[str], Env] = make) -> None:
        if concurrency < 1 or retries < 0:
            raise SpecError("concurrency must be >= 1 and retries >= 0")
        self.stream = tasks if isinstance(tasks, TaskStream) else None
        self.tasks = {} if self.stream is not None else {t.id: t for t in tasks}
        if self.stream is None and len(self.tasks) != len(tasks):
            raise SpecError("the rollout's tasks must have distinct ids")
        self.drawn = 0
        """Tasks drawn from the stream so far (the next group plays ``stream.task(drawn)``)."""
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.concurrency = concurrency
        self.retries = retries
        self.seed = seed
        self.make_env = make_env
        self.sync_weights = sync_weights
        self._backend = backend
        self._owns_backend = backend is None
        self._backend_factory = backend_factory or _trainer_backend
        self._loop: LoopThread | None = None
        self._proxy: RecordingProxy | None = None
        self._calls = 0
        self.episodes: list[RecordedEpisode] = []
        """The episodes of the latest call, in prompt order (the adapter's own record for logs and tests)."""
        self.dropped_segments = 0

    # TRL's hook -------------------------------------------------------------------------------------------
    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        mode_train = bool(getattr(trainer.model, "training", True))
        group_size = (trainer.num_generations if mode_train else trainer.num_generations_eval) or 1
        tasks = self._stream_tasks(prompts, group_size) if self.stream is not None else \
            [self._task_for(prompt) for prompt in prompts]
        step = int(trainer.state.global_step)
        call = self._calls
        self._calls += 1
        if self._loop is None:
            self._loop = LoopThread()
        episodes = self._loop.run(self._play(trainer, tasks, step=step, call=call, group_size=group_size))
        self.episodes = episodes
        for episode in episodes if self.stream is not None else ():
            if episode.trajectory.outcome is not Outcome.INFRA_ERROR:  # a curriculum learns from graded episodes
                self.stream.observe(episode.trajectory.task_id, episode.trajectory.outcome is Outcome.SUCCESS)
        return self._to_trl(episodes, prompts, trainer)

    def close(self) -> None:
        """Stop the proxy and the background loop (the backend belongs to whoever built it, unless we did)."""
        loop, self._loop = self._loop, None
        if loop is None:
            return
        try:
            loop.run(self._shutdown())
        finally:
            loop.close()

    def __enter__(self) -> EnvgymRollout:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # inside the loop thread ---------------------------------------------------------------------------------
    async def _play(self, trainer: Any, tasks: list[TaskSpec], *, step: int, call: int,
                    group_size: int) -> list[RecordedEpisode]:
        proxy = await self._ensure_proxy(trainer)
        await self._sync_version(trainer, step)
        limit = asyncio.Semaphore(self.concurrency)

        async def one(index: int, task: TaskSpec) -> RecordedEpisode:
            group = f"{call}:{index // group_size}"
            async with limit:
                for attempt in range(self.retries + 1):
                    episode = await run_recorded_episode(
                        proxy, task, group_id=group, seed=self.seed + call * 100_003 + index * 101 + attempt,
                        temperature=self.temperature, max_tokens=self.max_tokens,
                        make_env=self.make_env, episode_id=f"trl{call}-{index}-{attempt}")
                    if episode.trajectory.outcome is not Outcome.INFRA_ERROR and episode.samples:
                        break
                return episode

        return list(await asyncio.gather(*(one(i, t) for i, t in enumerate(tasks))))

    async def _ensure_proxy(self, trainer: Any) -> RecordingProxy:
        if self._proxy is None:
            from envgym.rl.proxy import RecordingProxy

            if self._backend is None:
                self._backend = self._backend_factory(trainer)
            if getattr(self._backend, "processor", None) is not None:
                raise SpecError("TRL's rollout_func cannot pass the screenshots of an episode to GRPOTrainer (it "
                                "builds pixel inputs from the dataset's image column only); train VLMs on envgym "
                                "screenshots with 'envgym train' or the verl adapter (envgym/rl/adapters/README.md)")
            proxy = RecordingProxy(self._backend)
            await proxy.__aenter__()
            self._proxy = proxy
        return self._proxy

    async def _sync_version(self, trainer: Any, step: int) -> None:
        backend = self._backend
        if backend is None or backend.policy_version == step:
            return
        if getattr(backend, "model", None) is trainer.model or not self.sync_weights:
            # the trainer's own tensors (or weights synced by TRL itself, e.g. use_vllm): only the version moves;
            # TransformersBackend keeps no KV cache across requests, so nothing stale survives
            backend.policy_version = step
        else:
            await backend.update_weights(trainer.model.state_dict(), step)

    async def _shutdown(self) -> None:
        proxy, self._proxy = self._proxy, None
        if proxy is not None:
            await proxy.__aexit__(None, None, None)
        backend = self._backend
        if self._owns_backend and backend is not None:
            self._backend = None
            await backend.aclose()

    # back in TRL's thread -------------------------------------------------------------------------------
    def _task_for(self, prompt: Any) -> TaskSpec:
        message = prompt[-1] if isinstance(prompt, list) and prompt else {}
        task_id = message.get(TASK_KEY) if isinstance(message, dict) else None
        task = self.tasks.get(task_id) if task_id else None
        if task is None:
            raise SpecError(f"the prompt names no task of this rollout (task id {task_id!r}); build the dataset "
                            "with envgym.rl.adapters.trl.trl_dataset")
        return task

    def _stream_tasks(self, prompts: list[Any], group_size: int) -> list[TaskSpec]:
        """One fresh task per group of ``group_size`` consecutive prompts (TRL repeats a row per generation)."""
        stream = self.stream
        if stream is None or len(prompts) % group_size:
            raise SpecError(f"TRL sent {len(prompts)} prompts, not whole groups of {group_size} fresh-task slots")
        tasks = []
        for _ in range(len(prompts) // group_size):
            task = stream.task(self.drawn)
            self.drawn += 1
            tasks.extend([task] * group_size)
        return tasks

    def _to_trl(self, episodes: list[RecordedEpisode], prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {k: [] for k in ("prompt_ids", "completion_ids", "logprobs", "env_mask",
                                                     "envgym_reward", "envgym_outcome", "envgym_task_id")}
        for episode, prompt in zip(episodes, prompts, strict=True):
            trajectory = episode.trajectory
            if episode.samples:
                self.dropped_segments += len(episode.samples) - 1
                sample = episode.samples[-1]
                prompt_ids, completion_ids = list(sample.prompt_ids), list(sample.completion_ids)
                logprobs, mask = list(sample.logprobs), list(sample.loss_mask)
            else:  # nothing was generated: an empty, untrained completion
                tokenizer = trainer.processing_class
                prompt_ids = list(tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True,
                                                                return_dict=False))
                completion_ids, logprobs, mask = [tokenizer.eos_token_id], [0.0], [0]
            failed = trajectory.outcome is Outcome.INFRA_ERROR
            out["prompt_ids"].append(prompt_ids)
            out["completion_ids"].append(completion_ids)
            out["logprobs"].append([lp if math.isfinite(lp) else 0.0 for lp in logprobs])
            out["env_mask"].append(mask)
            out["envgym_reward"].append(None if failed else float(trajectory.reward))
            out["envgym_outcome"].append(trajectory.outcome.value)
            out["envgym_task_id"].append(trajectory.task_id)
        return out


def _trainer_backend(trainer: Any) -> InferenceBackend:
    from envgym.rl.backends import TransformersBackend

    return TransformersBackend(trainer.model, trainer.processing_class)
