"""PrimeIntellect ``verifiers``: every envgym suite as a verifiers environment, so prime-rl can train on it.

    import verifiers as vf
    env = vf.load_environment("envgym", suite="tool-retail", split="train")   # resolves envgym.load_environment
    results = await env.evaluate(client, "policy", num_examples=2)           # or prime-rl's orchestrator

This targets the classic environment API (``vf.MultiTurnEnv``, ``vf.Rubric``, ``vf.load_environment``)
that prime-rl's orchestrator loads; verifiers 0.3 serves it from ``verifiers.legacy`` behind
``import verifiers as vf`` (its separate ``verifiers.v1`` Taskset/Harness stack is not covered).

:class:`EnvgymEnv` is a multi-turn tool environment whose rollouts step a real envgym env:

- ``setup_state`` builds the env (``envgym.make``), resets it with the row's task and opens the
  conversation exactly as envgym's own chat agents see it (system prompt with the env's policy and the
  tool-use rules, the first observation); the env's tool schemas become the rollout's ``tool_defs``, so the
  model calls tools natively through the client's function calling.
- ``env_response`` turns the model's reply into an envgym :class:`~envgym.types.Action` (its tool calls
  with the raw argument text, or the final message), steps the env and answers with the observation as
  ``tool`` / ``user`` messages; when the episode ends the exchange ends.
- The rubric's only reward is ``envgym_score``: the envgym verdict's score (an episode cut off by
  ``max_turns`` or a timeout is graded as it stands, like envgym's own truncation). The verdict, the
  outcome and the task id are left in the state (``envgym_verdict``, ``envgym_outcome``, ``envgym_task_id``).

The env is closed in a cleanup hook, which runs before scoring; a rollout whose env fails is a verifiers
error (state ``error``), scored 0.

Fresh tasks: ``EnvgymEnv(TaskStream(...), rows=N)`` (or ``vf.load_environment("envgym",
generator="tool-retail-gen", rows=N, curriculum="solve_rate")``) makes a dataset of ``N`` slots; row ``i``
plays the stream's task ``i`` (a fresh generator seed per row, its level the curriculum's when the row is first
set up, shared by the row's rollouts), and every graded rollout's outcome goes to the stream's curriculum.

Against the recording proxy, give each rollout its own session (a token-faithful trajectory per episode):
``vf.ClientConfig(api_base_url=proxy.base_url, extra_headers_from_state={"Authorization":
"envgym_proxy_auth"})`` sends ``Bearer <state["envgym_session"]>``, which the proxy takes as the session key.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import verifiers as vf
from datasets import Dataset
from verifiers.utils.message_utils import normalize_messages

from envgym.agents.chat import Transcript, system_prompt
from envgym.compose import make
from envgym.env import Env
from envgym.errors import SpecError
from envgym.rl.stream import Curriculum, SolveRateCurriculum, TaskStream
from envgym.task import TaskSpec, load_suite
from envgym.types import Action, Outcome, ToolCall, Verdict


@dataclass
class _Episode:
    env: Env
    transcript: Transcript
    verdict: Verdict | None = None
    truncated: bool = False
    closed: bool = False
    seen: int = field(default=0)


class EnvgymEnv(vf.MultiTurnEnv):
    """A verifiers multi-turn tool environment over envgym tasks; see the module docstring."""

    def __init__(self, tasks: Sequence[TaskSpec] | TaskStream, *, make_env: Callable[[str], Env] = make,
                 seed: int = 0, max_turns: int = -1, rows: int | None = None, **kwargs: Any) -> None:
        self.stream = tasks if isinstance(tasks, TaskStream) else None
        self.envgym_tasks = {} if self.stream is not None else {t.id: t for t in tasks}
        self._make_env = make_env
        self._seed = seed
        if self.stream is not None:
            if not rows or rows < 1:
                raise SpecError("a task stream is endless: EnvgymEnv(stream, rows=N) says how many rows to make",
                                field="rows")
            slot = f"(a fresh task of {self.stream.generator})"
            examples = [{"prompt": [{"role": "user", "content": slot}], "answer": "",
                      "info": {"task_id": None, "envgym_stream_index": i, "envgym_env_id": self.stream.env_id}}
                     for i in range(rows)]
        else:
            examples = [{"prompt": [{"role": "user", "content": t.instruction}], "answer": "",
                      "info": {"task_id": t.id, "envgym_env_id": t.env_id}} for t in tasks]
        dataset = Dataset.from_list(examples)
        rubric = vf.Rubric(funcs=[self.envgym_score], weights=[1.0])
        super().__init__(dataset=dataset, eval_dataset=dataset, rubric=rubric, max_turns=max_turns, **kwargs)

    def _task_of(self, info: dict[str, Any]) -> TaskSpec:
        index = info.get("envgym_stream_index")
        if self.stream is not None and index is not None:
            return self.stream.task(int(index))
        return self.envgym_tasks[info["task_id"]]

    async def setup_state(self, state: vf.State) -> vf.State:
        task = self._task_of(state["info"])
        env = self._make_env(task.env_id)
        state["envgym_task_id"] = task.id
        state["envgym"] = None
        # one recording-proxy session per rollout: ClientConfig(extra_headers_from_state={"Authorization": ...})
        state["envgym_session"] = f"envgym-{state.get('trajectory_id') or task.id}"
        state["envgym_proxy_auth"] = f"Bearer {state['envgym_session']}"
        try:
            obs, info = await env.reset(task=task, seed=self._seed + int(state.get("example_id") or 0))
        except BaseException:
            await env.close()
            raise
        transcript = Transcript(system_prompt(info.get("policy", "")), tools=info.get("tools"))
        transcript.observe(obs)
        episode = _Episode(env=env, transcript=transcript, seen=len(transcript.messages))
        state["envgym"] = episode
        state["prompt"] = normalize_messages(transcript.messages, field_name="envgym.prompt")
        state["tool_defs"] = [vf.Tool(name=t["function"]["name"], description=t["function"].get("description", ""),
                                      parameters=t["function"].get("parameters", {"type": "object"}))
                              for t in transcript.tools]
        return state

    async def env_response(self, messages: vf.Messages, state: vf.State, **kwargs: Any) -> vf.Messages:
        episode: _Episode = state["envgym"]
        action = _action(messages[-1])
        obs, _reward, terminated, truncated, info = await episode.env.step(action)
        episode.transcript.record(action)
        episode.transcript.observe(obs)
        new = episode.transcript.messages[episode.seen + 1:]  # after the assistant turn the client already holds
        episode.seen = len(episode.transcript.messages)
        reply = normalize_messages(new, field_name="envgym.observation") if new else []
        if terminated or truncated:
            episode.verdict = info.get("verdict")
            episode.truncated = bool(truncated)
            state["final_env_response"] = reply
        return reply

    @vf.cleanup
    async def close_envgym(self, state: vf.State) -> None:
        """Grade an episode that did not finish on its own, then close the env (before scoring runs)."""
        episode: _Episode | None = state.get("envgym")
        if episode is None or episode.closed:
            return
        try:
            if episode.verdict is None and state.get("error") is None:
                episode.verdict = await episode.env.verify()
                episode.truncated = True
        finally:
            episode.closed = True
            await episode.env.close()
        verdict = episode.verdict
        state["envgym_verdict"] = verdict.model_dump(mode="json") if verdict else None
        if verdict is None:
            state["envgym_outcome"] = Outcome.INFRA_ERROR.value
        elif verdict.passed:
            state["envgym_outcome"] = Outcome.SUCCESS.value
        else:
            state["envgym_outcome"] = (Outcome.TRUNCATED if episode.truncated else Outcome.FAILURE).value
        if self.stream is not None and verdict is not None:  # a graded episode teaches the curriculum
            self.stream.observe(state["envgym_task_id"], verdict.passed)

    async def envgym_score(self, state: vf.State) -> float:
        """The reward: the envgym verdict's score (0 when the episode could not be graded)."""
        verdict = state.get("envgym_verdict")
        return float(verdict["score"]) if verdict else 0.0


def _action(message: Any) -> Action:
    """The model's assistant message as an envgym action (raw argument text kept, as envgym's agents do)."""
    calls = []
    for call in getattr(message, "tool_calls", None) or ():
        arguments = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
        calls.append(ToolCall(name=call.name, arguments=arguments, **({"id": call.id} if call.id else {})))
    content = getattr(message, "content", None)
    text = content if isinstance(content, str) else None
    return Action(text=text or (None if calls else ""), tool_calls=tuple(calls))


def load_environment(suite: str = "tool-retail", split: str | None = "train", limit: int | None = None,
                     seed: int = 0, max_turns: int = -1, generator: str | None = None, rows: int = 1000,
                     level: int | None = None, curriculum: Curriculum | str | None = None,
                     **kwargs: Any) -> EnvgymEnv:
    """The verifiers entry point: an :class:`EnvgymEnv` over a bundled suite (or a task folder/file), or with
    ``generator`` over ``rows`` fresh tasks of its stream (seeded by ``seed``; ``level`` fixed, or
    ``curriculum``: a :class:`~envgym.rl.stream.Curriculum` or ``"solve_rate"`` for the default one)."""
    if generator is not None:
        if curriculum == "solve_rate":
            from envgym.generate import find

            curriculum = SolveRateCurriculum(find(generator).levels)
        elif isinstance(curriculum, str):
            raise SpecError(f"curriculum {curriculum!r}: give 'solve_rate' or a Curriculum object", field="curriculum")
        stream = TaskStream(generator, seed=seed, split=split, level=level, curriculum=curriculum)
        return EnvgymEnv(stream, seed=seed, max_turns=max_turns, rows=rows, **kwargs)
    tasks = load_suite(suite, split=split)
    if limit is not None:
        tasks = tasks[:limit]
    return EnvgymEnv(tasks, seed=seed, max_turns=max_turns, **kwargs)
