"""The async environment contract.

An :class:`Env` runs one episode at a time::

    obs, info = await env.reset(task=task, seed=0)      # info["tools"]: OpenAI function schemas
    obs, reward, terminated, truncated, info = await env.step(action)
    verdict = await env.verify()                         # grade the episode as it stands
    await env.close()                                    # or: async with envgym.make(...) as env

``reset`` without a task draws one from the env's registered suites with the seed. When an episode
terminates the env grades it and returns the verdict's score as the reward and the verdict as
``info["verdict"]``. Capability flags are class variables a scheduler can read before building anything.
Misuse is typed: :class:`ResetNeeded`, :class:`EnvClosed` (enforced by the wrappers ``make`` adds).
"""

from __future__ import annotations

import abc
import enum
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from envgym.clock import Clock, SystemClock
from envgym.errors import EnvError
from envgym.types import Action, Observation, Usage, Verdict

if TYPE_CHECKING:
    from envgym.registry import EnvSpec
    from envgym.task import TaskSpec


class StepResult(NamedTuple):
    observation: Observation
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]


class EnvState(enum.Enum):
    CREATED = "created"
    RUNNING = "running"
    DONE = "done"
    CLOSED = "closed"


class Env(abc.ABC):
    """Base of every envgym environment."""

    needs_sandbox: ClassVar[bool] = False
    time_evolving: ClassVar[bool] = False
    has_write_actions: ClassVar[bool] = False
    multimodal: ClassVar[bool] = False
    tamper_agents: ClassVar[tuple[type, ...]] = ()
    """The family's tampering agents (:class:`envgym.tamper.TamperAgent` subclasses); each must score 0."""

    spec: EnvSpec | None = None

    def __init__(self, *, clock: Clock | None = None) -> None:
        self.clock: Clock = clock or SystemClock()
        self.task: TaskSpec | None = None
        self._rng = random.Random()
        self._task_pool: list[TaskSpec] | None = None

    @property
    def unwrapped(self) -> Env:
        return self

    @abc.abstractmethod
    async def reset(self, *, task: TaskSpec | None = None, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]: ...

    @abc.abstractmethod
    async def step(self, action: Action) -> StepResult: ...

    @abc.abstractmethod
    async def verify(self) -> Verdict:
        """Grade the current episode from its actions and state."""

    def attach_usage(self, source: Callable[[], Usage] | None) -> None:  # noqa: B027 - optional hook
        """Offer the agent's running usage (the rollout does); envs that charge thinking time read it."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources. Idempotent."""

    async def __aenter__(self) -> Env:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def default_tasks(self) -> list[TaskSpec]:
        """Tasks of this env's registered suites, all splits."""
        if self._task_pool is None:
            from envgym.task import load_suite

            suites = self.spec.suites if self.spec else ()
            env_id = self.spec.id if self.spec else None
            self._task_pool = [t for s in suites for t in load_suite(s) if t.env_id == env_id]
        return self._task_pool

    def _choose_task(self, task: TaskSpec | None, seed: int | None) -> TaskSpec:
        if seed is not None:
            self._rng.seed(seed)
        if task is not None:
            return task
        pool = self.default_tasks()
        if not pool:
            raise EnvError(f"{type(self).__name__}: reset() needs a task (no suite is registered for it)")
        return self._rng.choice(pool)
