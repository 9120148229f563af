"""verl: an agent loop (``AgentLoopBase``) that plays envgym episodes, registered as ``envgym_agent``.

    # verl config: actor_rollout_ref.rollout.agent.agent_loop_config_path -> a YAML list holding
    #   - name: envgym_agent
    #     _target_: envgym.rl.adapters.verl.EnvgymAgentLoop
    # (or import envgym.rl.adapters.verl in the worker: the @register decorator adds it to verl's registry)
    # data rows: verl_rows(tasks) -> parquet with agent_name="envgym_agent" and the task in extra_info

verl's ``AgentLoopWorker`` builds one agent loop per sample and awaits ``run(sampling_params, **row)``.
:class:`EnvgymAgentLoop` plays the row's envgym task as a whole episode: envgym's ``openai`` agent talks to
a :class:`~envgym.rl.proxy.RecordingProxy` (one per worker process and event loop) whose backend is
:class:`ServerManagerBackend`, i.e. verl's own server manager (``generate(request_id, prompt_ids=...,
sampling_params=...) -> TokenOutput``) — so every token comes from verl's rollout engine, token-exact, and
verl's load balancing, sticky sessions and weight sync apply unchanged. The result is verl's
``AgentLoopOutput``: the episode's token segment (``prompt_ids``, ``response_ids`` with tool results and
template tokens inside, ``response_mask`` 1 on model tokens, ``response_logprobs``), ``reward_score`` = the
envgym verdict's score (verl turns it into ``rm_scores``, so no reward function is needed) and the envgym
outcome, task id and segment count in ``extra_fields``. An episode that fails (``infra_error``) is replayed
with a fresh env ``retries`` times before it is returned with reward 0. Like TRL, verl trains one sequence
per sample: an episode with several token segments contributes its last, whose prompt holds the whole
conversation.

Fresh tasks: ``verl_rows(TaskStream(...), rows=N)`` writes rows that name a stream slot instead of a task
(``extra_info.envgym_stream``: generator, run seed, split, fixed level or curriculum settings, index ``i``);
the loop makes the stream's task ``i`` in the worker (a fresh generator seed per row, never one repeated in
the run). With a curriculum (``SolveRateCurriculum`` settings), each worker process keeps one per stream,
fed by the graded episodes it plays, and a row's level is set when that process first plays the row.

Screenshots (a VLM actor: verl hands the loop its ``processor``): the agent sends the observations' images,
the proxy expands their placeholders with that processor, the server manager generates with
``image_data=[PIL images]`` (verl's own multimodal generation path), and the output carries
``multi_modal_data={"images": [...]}`` (the sample's images, read back from the proxy's store), from which
verl recomputes the actor's pixel inputs over the whole sequence. Images whose placeholders fall beyond a
truncated response are left out with them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
import weakref
from collections.abc import Sequence
from typing import Any

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register

from envgym.rl.adapters.episodes import run_recorded_episode
from envgym.rl.backends import BackendError, Completion
from envgym.rl.stream import SolveRateCurriculum, TaskStream
from envgym.task import TaskSpec
from envgym.types import Outcome

AGENT_NAME = "envgym_agent"


def verl_rows(tasks: Sequence[TaskSpec] | TaskStream, *, data_source: str = "envgym", rows: int | None = None
              ) -> list[dict[str, Any]]:
    """Rows of a verl RL dataset (write them as parquet): the chat prompt, the agent loop's name and the task;
    for a :class:`~envgym.rl.stream.TaskStream`, ``rows`` slots naming the stream's tasks ``0 .. rows-1`` (its
    curriculum, a :class:`~envgym.rl.stream.SolveRateCurriculum` or none, travels as settings)."""
    if isinstance(tasks, TaskStream):
        if not rows or rows < 1:
            raise ValueError("a task stream is endless: verl_rows(stream, rows=N) says how many rows to make")
        spec = {"generator": tasks.generator, "seed": tasks.seed, "split": tasks.split, "level": tasks.fixed_level,
                "curriculum": _curriculum_settings(tasks.curriculum)}
        prompt = [{"role": "user", "content": f"(a fresh task of {tasks.generator})"}]
        return [{"data_source": data_source, "agent_name": AGENT_NAME, "prompt": prompt,
                 "reward_model": {"style": "envgym", "ground_truth": ""},
                 "extra_info": {"index": i, "envgym_stream": json.dumps({**spec, "index": i}, sort_keys=True)}}
                for i in range(rows)]
    return [{"data_source": data_source, "agent_name": AGENT_NAME,
             "prompt": [{"role": "user", "content": t.instruction}],
             "reward_model": {"style": "envgym", "ground_truth": ""},
             "extra_info": {"index": i, "envgym_task": t.model_dump_json()}} for i, t in enumerate(tasks)]


def _curriculum_settings(curriculum: Any) -> dict[str, Any] | None:
    if curriculum is None:
        return None
    if not isinstance(curriculum, SolveRateCurriculum):
        raise ValueError(f"verl workers rebuild the curriculum from settings: only SolveRateCurriculum travels, "
                         f"not {type(curriculum).__name__}")
    return {"target": curriculum.target, "window": curriculum.window, "band": curriculum.band,
            "start": curriculum.level()}


_STREAMS: dict[str, TaskStream] = {}  # this worker process's streams, by their settings


def _stream_task(raw: str | dict[str, Any]) -> tuple[TaskStream, TaskSpec]:
    spec = json.loads(raw) if isinstance(raw, str) else dict(raw)
    index = int(spec.pop("index"))
    key = json.dumps(spec, sort_keys=True)
    stream = _STREAMS.get(key)
    if stream is None:
        from envgym.generate import find

        settings = spec.get("curriculum")
        curriculum = SolveRateCurriculum(find(spec["generator"]).levels, **settings) if settings else None
        stream = _STREAMS[key] = TaskStream(spec["generator"], seed=int(spec["seed"]), split=spec["split"],
                                            level=spec.get("level"), curriculum=curriculum)
    return stream, stream.task(index)


class ServerManagerBackend:
    """An :class:`~envgym.rl.backends.InferenceBackend` over verl's server manager (``LLMServerClient``).

    ``sampling_params`` given by verl (temperature, top_p, logprobs, ...) are the base of every request;
    the proxy's per-call limits (``max_tokens``, stop) are added. Weight sync is verl's business (its
    checkpoint engine updates the servers between steps), so :meth:`update_weights` only moves the version.
    """

    def __init__(self, server_manager: Any, tokenizer: Any, sampling_params: dict[str, Any] | None = None, *,
                 policy_version: int = 0, processor: Any = None) -> None:
        self.server_manager = server_manager
        self.tokenizer = tokenizer
        self.processor = processor
        self.sampling_params = dict(sampling_params or {})
        self.policy_version = policy_version
        eos = tokenizer.eos_token_id
        self._eos = {eos} if isinstance(eos, int) else set(eos or ())

    async def generate(self, prompt_ids: list[int], *, max_new_tokens: int, temperature: float = 1.0,
                       top_p: float = 1.0, seed: int | None = None, stop: Sequence[str] | None = None,
                       images: Sequence[bytes] | None = None) -> Completion:
        params = {**self.sampling_params, "temperature": temperature, "top_p": top_p, "logprobs": True,
                  "max_tokens": max_new_tokens}
        if stop:
            params["stop"] = list(stop)
        if seed is not None:
            params["seed"] = seed
        version = self.policy_version
        extra = {"image_data": [_pil(data) for data in images]} if images else {}
        output = await self.server_manager.generate(uuid.uuid4().hex, prompt_ids=list(prompt_ids),
                                                    sampling_params=params, **extra)
        ids = [int(t) for t in output.token_ids]
        logprobs = [float(x) for x in (output.log_probs or [])]
        if len(logprobs) != len(ids):
            raise BackendError(f"the verl server returned {len(ids)} tokens but {len(logprobs)} logprobs "
                               "(sampling_params must ask for logprobs)")
        if output.stop_reason == "aborted":
            raise BackendError("the verl server aborted the request")
        finished = bool(ids) and (ids[-1] in self._eos or len(ids) < max_new_tokens)
        return Completion(ids, logprobs, "stop" if finished else "length", version)

    async def update_weights(self, state_dict_or_path: Any, version: int) -> None:
        self.policy_version = version

    async def aclose(self) -> None:
        return None


# One proxy per (server manager, event loop): agent loops are built per sample, the proxy outlives them. The
# entry is stored before the proxy starts, so samples that arrive together share one proxy.
_PROXIES: weakref.WeakKeyDictionary[Any, dict[asyncio.AbstractEventLoop, tuple[Any, asyncio.Future[Any]]]] = \
    weakref.WeakKeyDictionary()


def _pil(data: bytes) -> Any:
    import io

    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return image.convert("RGB")


async def _proxy_for(server_manager: Any, tokenizer: Any, sampling_params: dict[str, Any],
                     processor: Any = None) -> Any:
    from envgym.rl.proxy import RecordingProxy

    loop = asyncio.get_running_loop()
    per_loop = _PROXIES.setdefault(server_manager, {})
    entry = per_loop.get(loop)
    if entry is None:
        vision = processor if getattr(processor, "image_processor", None) is not None else None  # a VLM's only
        proxy = RecordingProxy(ServerManagerBackend(server_manager, tokenizer, sampling_params, processor=vision))
        entry = per_loop[loop] = (proxy, asyncio.ensure_future(proxy.start()))
    proxy, started = entry
    await asyncio.shield(started)
    proxy.backend.sampling_params = dict(sampling_params)
    return proxy


async def close_proxies() -> None:
    """Stop the proxies this process started on the running loop (a worker's shutdown hook; tests)."""
    loop = asyncio.get_running_loop()
    for per_loop in list(_PROXIES.values()):
        entry = per_loop.pop(loop, None)
        if entry is not None:
            proxy, started = entry
            with contextlib.suppress(Exception):
                await started
            await proxy.aclose()


@register(AGENT_NAME)
class EnvgymAgentLoop(AgentLoopBase):
    """Plays the row's envgym task; see the module docstring."""

    retries = 1
    """Fresh attempts for an episode that ended in ``infra_error`` before its (0-reward) result is returned."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.response_length = int(self.rollout_config.response_length)

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        extra = kwargs.get("extra_info") or {}
        raw = extra.get("envgym_task") or kwargs.get("envgym_task")
        slot = extra.get("envgym_stream")
        stream = None
        if slot is not None:
            stream, task = _stream_task(slot)
        elif raw is None:
            raise ValueError("an envgym_agent row needs extra_info.envgym_task or envgym_stream (see "
                             "envgym.rl.adapters.verl.verl_rows)")
        else:
            task = TaskSpec.model_validate(json.loads(raw) if isinstance(raw, str) else raw)
        proxy = await _proxy_for(self.server_manager, self.tokenizer, sampling_params,
                                 getattr(self, "processor", None))
        started = time.perf_counter()
        group = str(kwargs.get("uid") or kwargs.get("index") or task.id)
        for _attempt in range(self.retries + 1):  # a failed episode is replayed with a fresh env, not dropped
            episode = await run_recorded_episode(
                proxy, task, group_id=group, seed=extra.get("seed"),
                temperature=float(sampling_params.get("temperature", 1.0)), max_tokens=self.response_length,
                images=proxy.vision is not None)
            if episode.trajectory.outcome is not Outcome.INFRA_ERROR and episode.samples:
                break
        metrics = AgentLoopMetrics(generate_sequences=time.perf_counter() - started)
        trajectory = episode.trajectory
        failed = trajectory.outcome is Outcome.INFRA_ERROR
        if stream is not None and not failed:
            stream.observe(task, trajectory.outcome is Outcome.SUCCESS)
        extra_fields = {"envgym_outcome": trajectory.outcome.value, "envgym_task_id": task.id,
                        "envgym_segments": len(episode.samples), "envgym_error": trajectory.error}
        if not episode.samples:  # nothing generated (the env failed first): an empty, untrained response
            prompt_ids = self.tokenizer.apply_chat_template([{"role": "user", "content": task.instruction}],
                                                            add_generation_prompt=True, tokenize=True,
                                                            return_dict=False)
            return AgentLoopOutput(prompt_ids=list(prompt_ids), response_ids=[self.tokenizer.eos_token_id],
                                   response_mask=[0], response_logprobs=[0.0], reward_score=0.0, num_turns=1,
                                   metrics=metrics, extra_fields=extra_fields)
        sample = episode.samples[-1]
        n = self.response_length
        media: dict[str, Any] = {}
        if sample.images:
            kept = _whole_images(list(sample.prompt_ids) + list(sample.completion_ids)[:n],
                                 proxy.vision.image_token_id, cut=len(sample.completion_ids) > n)
            media["multi_modal_data"] = {"images": [proxy.images.pil(ref) for ref in sample.images[:kept]]}
        return AgentLoopOutput(
            prompt_ids=list(sample.prompt_ids), response_ids=list(sample.completion_ids)[:n],
            response_mask=list(sample.loss_mask)[:n], response_logprobs=list(sample.logprobs)[:n],
            reward_score=0.0 if failed else float(trajectory.reward), num_turns=2 * len(trajectory.steps) + 1,
            metrics=metrics, extra_fields=extra_fields, **media)


def _whole_images(ids: list[int], image_token_id: int, *, cut: bool) -> int:
    """Placeholder runs in ``ids``; when the sequence was cut inside a run, that run does not count."""
    runs = sum(1 for i, t in enumerate(ids) if t == image_token_id and (i == 0 or ids[i - 1] != image_token_id))
    return runs - 1 if cut and ids and ids[-1] == image_token_id else runs
