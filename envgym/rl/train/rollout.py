"""Rollouts for the trainer: GRPO groups of episodes, played through the recording proxy, as samples.

    runner = GroupRunner(pool, proxy, config, tasks, run_id="r0")
    group = await runner.run_group(index)          # group.samples: list[TrainingSample]; group.rewards

Group ``index`` always draws the same task (a seeded shuffle of the task list, reshuffled every epoch)
and its ``group_size`` members the same env seeds and sampling seeds, whatever the timing: that is what
makes a run reproducible and lets ``max_staleness=0`` equal synchronous training exactly.

From a :class:`~envgym.rl.stream.TaskStream` (``generator``), group ``index`` plays the stream's task
``index``: a fresh generator seed for every group. The stream's curriculum sees the outcomes of step ``t``'s
episodes (in group and member order; infra errors left out) only once groups of step ``t + max_staleness + 1``
are drawn, never earlier: the async producer may draw step ``s``'s groups once ``s - max_staleness`` steps are
trained, and feeding any later result would make a group's level depend on timing. So the levels, like the
tasks, are the same in every run of a config, sync or async, and a resumed run replays the outcomes from its
metrics (``task_levels``, ``task_solved``). Each member is an
envgym ``openai`` agent talking to the :class:`~envgym.rl.RecordingProxy` over loopback (so the episode is
exactly what any OpenAI harness would produce), in its own session; the proxy records the token ids,
logprobs and policy version, and the trajectory carries them into :func:`~envgym.rl.samples_from_episode`.

On a Ray cluster (a :class:`~envgym.vector.ray.RayEpisodePool`) the episodes run on the hosts: each member's
agent is a plain ``openai`` agent sent with its job, talking over HTTP to the proxy's session URL (so the proxy
must listen where the hosts reach it), and the driver copies the session's token data into the trajectory
when it comes back. A lost host's episode is not re-sent by the pool (its session already holds the lost
attempt's calls) but retried here as a fresh session, like any infra error.

A member whose episode ends in ``infra_error`` is played again in a fresh session (the pool replaces its
env) up to ``max_retries`` times, so a flaky environment does not shrink its group; a member that still
fails is kept with ``status="infra_error"`` and excluded from the loss and from its group's baseline.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from envgym.agents.openai import OpenAIAgent, OpenAIAgentFactory
from envgym.env import Env, StepResult
from envgym.generate import parse_task_id
from envgym.rl.agents import RecordingAgent
from envgym.rl.proxy import RecordingProxy, SessionRecord
from envgym.rl.samples import TrainingSample, samples_from_episode
from envgym.rl.stream import TaskStream
from envgym.rl.train.config import TrainConfig
from envgym.task import TaskSpec
from envgym.trajectory import Trajectory
from envgym.types import Action, Outcome
from envgym.vector.pool import EpisodePool, Job
from envgym.wrappers import Wrapper

if TYPE_CHECKING:
    from envgym.vector.ray import RayEpisodePool


def derive_seed(*parts: Any) -> int:
    """A stable 63-bit seed from any printable parts (not Python's salted ``hash``)."""
    digest = hashlib.sha256("\0".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def call_seed(session: SessionRecord) -> int:
    """The proxy's ``seed_for``: a call's seed from its session key and its index in the session."""
    return derive_seed("call", session.key, len(session.calls))


class EnvBuilder:
    """``make_env`` of the trainer's pool: ``make_env(env_id, **kwargs)``, behind a :class:`LatencyEnv` when
    ``latency_s``.
    A class rather than a closure so that it pickles (Ray hosts build their envs with it)."""

    def __init__(self, make_env: Callable[..., Env], latency_s: float = 0.0, kwargs: dict[str, Any] | None = None
                 ) -> None:
        self.make_env, self.latency_s, self.kwargs = make_env, latency_s, dict(kwargs or {})

    def __call__(self, env_id: str) -> Env:
        env = self.make_env(env_id, **self.kwargs) if self.kwargs else self.make_env(env_id)
        return LatencyEnv(env, self.latency_s) if self.latency_s else env


class SessionAgent(OpenAIAgent):
    """An ``openai`` agent that owns its factory (closed with it): one sent to a Ray host with its job."""

    name = "recording-openai"

    async def close(self) -> None:
        await self._factory.aclose()


class LatencyEnv(Wrapper):
    """Adds ``latency_s`` of wall time to every step: an env whose tools or world take time to answer."""

    def __init__(self, env: Env, latency_s: float) -> None:
        super().__init__(env)
        self.latency_s = latency_s

    async def step(self, action: Action) -> StepResult:
        await asyncio.sleep(self.latency_s)
        return await self.env.step(action)


@dataclass
class Member:
    """One episode of a group (after retries)."""

    trajectory: Trajectory
    samples: list[TrainingSample]
    attempts: int

    @property
    def failed(self) -> bool:
        return self.trajectory.outcome is Outcome.INFRA_ERROR


@dataclass
class Group:
    """A GRPO group: ``group_size`` episodes of one task, in member order."""

    index: int
    task: TaskSpec
    members: list[Member]
    started_version: int
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def rewards(self) -> list[float]:
        return [m.trajectory.reward for m in self.members]

    @property
    def samples(self) -> list[TrainingSample]:
        return [s for m in self.members for s in m.samples]

    @property
    def retries(self) -> int:
        return sum(m.attempts - 1 for m in self.members)


class GroupRunner:
    """Plays GRPO groups on an :class:`EpisodePool` through a proxy; see the module docstring."""

    def __init__(self, pool: EpisodePool | RayEpisodePool, proxy: RecordingProxy, config: TrainConfig,
                 tasks: Sequence[TaskSpec] | TaskStream, *, run_id: str = "run") -> None:
        if not isinstance(tasks, TaskStream) and not tasks:
            raise ValueError("no tasks to train on")
        self.pool = pool
        self.proxy = proxy
        self.config = config
        # max_turns is a run setting of each episode: the tasks stay as written (a lazy suite stays lazy)
        self.tasks = tasks if isinstance(tasks, TaskStream | Sequence) else list(tasks)
        self.run_id = run_id
        self._orders: dict[int, list[int]] = {}
        self._outcomes: dict[int, list[tuple[int, list[bool]]]] = {}  # step -> (level, solved per member) per group
        self._fed = 0  # steps whose outcomes the stream's curriculum has seen

    def task_for(self, index: int) -> TaskSpec:
        if isinstance(self.tasks, TaskStream):
            self._feed(index // self.config.groups_per_step - self.config.max_staleness)
            return self.tasks.task(index)
        epoch, position = divmod(index, len(self.tasks))
        order = self._orders.get(epoch)
        if order is None:
            order = list(range(len(self.tasks)))
            random.Random(derive_seed("order", self.config.seed, epoch)).shuffle(order)
            self._orders = {epoch: order}  # one epoch at a time is enough: groups run in index order ± a window
        return self.tasks[order[position]]

    def observe_step(self, step: int, groups: list[Group]) -> dict[str, Any]:
        """Keep step ``step``'s outcomes for the stream's curriculum (fed when the schedule allows, see the
        module docstring); returns what the step's metrics line records of its tasks."""
        line: dict[str, Any] = {"task_ids": [g.task.id for g in groups]}
        if isinstance(self.tasks, TaskStream):
            outcomes = [(_level_of(g.task),
                         [m.trajectory.outcome is Outcome.SUCCESS for m in g.members if not m.failed]) for g in groups]
            self._outcomes[step] = outcomes
            line["task_levels"] = [level for level, _ in outcomes]
            line["task_solved"] = [solved for _, solved in outcomes]
        return line

    def replay(self, lines: list[dict[str, Any]]) -> None:
        """A resumed run: the outcomes of its finished steps, from their metrics lines."""
        for line in lines:
            if "task_levels" in line:
                self._outcomes[line["step"] - 1] = list(zip(line["task_levels"], line["task_solved"], strict=True))

    def _feed(self, until: int) -> None:
        curriculum = self.tasks.curriculum if isinstance(self.tasks, TaskStream) else None
        while self._fed < until:
            outcomes = self._outcomes.pop(self._fed, None)
            if outcomes is None:  # the staleness gate makes this impossible; drawing on would break determinism
                raise RuntimeError(f"the outcomes of step {self._fed} are not in yet (curriculum schedule)")
            for level, solved in outcomes:
                for one in solved if curriculum is not None else ():
                    curriculum.observe(level, one)
            self._fed += 1


    async def run_group(self, index: int) -> Group:
        task = self.task_for(index)
        started = asyncio.get_running_loop().time()
        version = self.proxy.backend.policy_version
        members = await asyncio.gather(*(self._member(index, m, task) for m in range(self.config.group_size)))
        return Group(index, task, list(members), version, asyncio.get_running_loop().time() - started)

    async def _member(self, index: int, member: int, task: TaskSpec) -> Member:
        cfg = self.config
        group_id = f"{self.run_id}:g{index}"
        env_seed = derive_seed("env", cfg.seed, index, member) % 2**31
        attempt = 1
        while True:
            key = f"{self.run_id}-g{index}-m{member}-a{attempt}"
            factory = OpenAIAgentFactory(self.proxy.base_url_for(key), self.proxy.model_name,
                                         temperature=cfg.temperature, max_tokens=cfg.max_new_tokens,
                                         timeout_s=600, retries=0, images=cfg.images,
                                         image_max_pixels=cfg.image_max_pixels)
            if isinstance(self.pool, EpisodePool):
                agent = RecordingAgent(factory, self.proxy, key)
                job = Job(task, seed=env_seed, key=key, agent=agent, max_steps=self.config.max_turns)
                trajectory = await self.pool.run_one(job)
            else:  # a Ray host plays it; the session's calls are recorded here
                session = self.proxy.session(key)
                job = Job(task, seed=env_seed, key=key, agent=SessionAgent(factory), max_steps=self.config.max_turns)
                try:
                    trajectory = await self.pool.run_one(job)
                    trajectory = trajectory.model_copy(update={"token_data": list(session.token_data)})
                finally:
                    self.proxy.close_session(key)
            if trajectory.outcome is not Outcome.INFRA_ERROR or attempt > cfg.max_retries:
                break
            attempt += 1
        samples = samples_from_episode(trajectory, group_id=group_id, episode_id=key) if trajectory.token_data else []
        return Member(trajectory, samples, attempt)


def _level_of(task: TaskSpec) -> int:
    parsed = parse_task_id(task.id)
    if parsed is None:
        raise ValueError(f"task {task.id!r} of a task stream has no generated id")
    return parsed[2]
