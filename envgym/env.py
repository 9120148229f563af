"""The async environment contract.

An :class:`Env` runs one episode at a time::

    obs, info = await env.reset(task=task, seed=0)      # info["tools"]: OpenAI function schemas
    obs, reward, terminated, truncated, info = await env.step(action)
    verdict = await env.verify()                         # grade the episode as it stands
    await env.close()                                    # or: async with envgym.make(...) as env

What a family writes: ``reset`` (draw the task with :meth:`Env.choose_task`; heavy per-task work may go in
the optional :meth:`Env.prepare`, which the rollout awaits outside the step deadlines), ``step`` (report
``terminated`` / ``truncated``, reward 0: a family never grades itself) and :meth:`Env.verify_context` (what
the verifiers may read: calls, final answer, the state before and after). The kernel grades: the
:class:`~envgym.wrappers.Grading` wrapper ``make`` adds calls :meth:`Env.verify` exactly once when an episode
ends (terminated, truncated by a step limit, or cut by the rollout's deadline) and returns the verdict as
``info["verdict"]`` and its score as the reward. An env whose grading cannot be a verifier kind may override
``verify`` instead (and call ``super().verify(judge=judge)`` to post-process a verdict).

``reset(task=...)`` takes a :class:`~envgym.task.TaskSpec` or the id of a task in the env's suites;
``reset()`` without a task draws one with the seed from the env's registered suites, from every split
unless ``options={"split": "train"}`` (or test, dev) says which; ``info["task_id"]`` and ``info["split"]`` say
what was drawn. A task for another env id is refused (:class:`TaskMismatch`). Capability flags are class
variables a scheduler can read before building anything (also from :attr:`EnvSpec.capabilities`).
Misuse is typed: :class:`ResetNeeded`, :class:`EnvClosed` (enforced by the wrappers ``make`` adds).
A task whose correct answer is to do nothing (BFCL's irrelevance entries: call no function) is declared by
the env through :meth:`Env.null_accepted`, never by the task data, so ``envgym check`` can say which tasks
and why (see :mod:`envgym.check`).
"""

from __future__ import annotations

import abc
import enum
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from envgym._deprecation import MovedAttribute
from envgym.clock import Clock, SystemClock
from envgym.errors import EnvError, TaskMismatch
from envgym.types import Action, Observation, Usage, Verdict

if TYPE_CHECKING:
    from envgym.registry import EnvSpec
    from envgym.task import TaskSpec
    from envgym.verify import JudgeConfig, VerifyContext


class StepResult(NamedTuple):
    observation: Observation
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]


class NullAccepted(NamedTuple):
    """Why doing nothing is a correct answer to a task, and a wrong answer its verifiers must still fail."""

    reason: str
    wrong: tuple[Action, ...]
    """Actions replayed like a reference solution; ``envgym check`` requires them to score 0."""


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
    gate_sample: ClassVar[int | None] = None
    """``envgym check`` runs the admission gates on every task, or, when set, on this many spread over the
    suites and splits (for envs whose every episode costs a container's seconds; ``--all-tasks`` runs all)."""

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

    async def verify_context(self) -> VerifyContext:
        """What the task's verifiers may read about the current episode (the family reports; it never grades)."""
        raise EnvError(f"{type(self).__name__} implements neither verify_context() nor verify()")

    async def verify(self, *, judge: JudgeConfig | None = None) -> Verdict:
        """Grade the current episode: the task's verifiers on :meth:`verify_context` (see the module docstring)."""
        from envgym.verify import grade

        if self.task is None:
            raise EnvError(f"{type(self).__name__}: verify() without an episode")
        return await grade(self.task, await self.verify_context(), judge=judge)

    @classmethod  # noqa: B027 - optional hook
    def warm(cls, **kwargs: Any) -> None:
        """Load what every instance built with these registration ``kwargs`` will need (modules, data its
        constructor reads), without building one. Optional; the default does nothing. envgym calls it in the
        fork server that ``envgym eval --workers`` processes start from (:mod:`envgym.forkserver`), once per env
        id of the run's suites, so that no worker loads it again. It runs before any worker forks: it must not
        start threads or processes, open files it keeps, or connect to anything."""

    async def prepare(self, task: TaskSpec) -> None:  # noqa: B027 - optional hook
        """Heavy per-task work before ``reset`` (building a goal, loading an engine's data). The rollout calls
        it before the episode's deadlines are armed; an env doing real work here runs it off the event loop
        and caches it by ``task.hash`` (:class:`envgym.timed.prepare.TaskCache`). ``reset`` must still work
        without it (it then prepares on its own)."""

    def null_accepted(self, task: TaskSpec) -> NullAccepted | None:
        """Whether doing nothing (the null agent's empty message) is a correct answer to ``task``; None, the
        default, for every task with work to do. An env that returns a :class:`NullAccepted` gets the null
        gate of ``envgym check`` inverted on that task: the null agent must pass and ``wrong`` must score 0,
        so the verifiers are still shown to tell answers apart, and the report counts such tasks with the
        reason."""
        return None

    def attach_usage(self, source: Callable[[], Usage] | None) -> None:  # noqa: B027 - optional hook
        """Offer the agent's running usage (the rollout does); envs that charge thinking time read it."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources. Idempotent."""

    async def __aenter__(self) -> Env:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def env_id(self) -> str:
        return self.spec.id if self.spec else type(self).__name__

    def default_tasks(self) -> list[TaskSpec]:
        """Tasks of this env's registered suites, all splits."""
        if self._task_pool is None:
            from envgym.task import load_suite

            suites = self.spec.suites if self.spec else ()
            env_id = self.spec.id if self.spec else None
            self._task_pool = [t for s in suites for t in load_suite(s) if t.env_id == env_id]
        return self._task_pool

    _choose_task = MovedAttribute("choose_task", since="0.2", removal="0.3")
    """The 0.1 name of :meth:`choose_task` (warns)."""

    def choose_task(self, task: TaskSpec | str | None, seed: int | None,
                    options: dict[str, Any] | None = None) -> TaskSpec:
        """The episode's task: ``task`` itself, the task of that id in the env's suites, or (None) one drawn
        with ``seed`` from the suites, of ``options["split"]`` if given. Seeds the env's RNG."""
        from envgym.task import SPLITS, TaskSpec

        if seed is not None:
            self._rng.seed(seed)
        if isinstance(task, TaskSpec):
            if self.spec is not None and task.env_id != self.spec.id:
                raise TaskMismatch(f"task {task.id!r} is for {task.env_id!r}, not {self.spec.id!r}; "
                                   f"make({task.env_id!r}) runs it")
            return task
        if task is not None and not isinstance(task, str):
            raise TypeError(f"{self.env_id}: reset(task=...) takes a TaskSpec or a task id, "
                            f"not {type(task).__name__}")
        pool = self.default_tasks()
        if not pool:
            raise EnvError(f"{self.env_id}: reset() needs a task (no suite is registered for it)")
        if isinstance(task, str):
            found = next((t for t in pool if t.id == task), None)
            if found is None:
                import difflib

                close = difflib.get_close_matches(task, [t.id for t in pool], n=3)
                hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
                raise EnvError(f"{self.env_id}: no task {task!r} in its suites "
                               f"({', '.join(self.spec.suites if self.spec else ())}){hint}")
            return found
        split = (options or {}).get("split")
        if split is not None:
            if split not in SPLITS:
                raise EnvError(f"{self.env_id}: unknown split {split!r}; the splits are {', '.join(SPLITS)}")
            pool = [t for t in pool if t.split == split]
            if not pool:
                raise EnvError(f"{self.env_id}: its suites have no {split} tasks")
        return self._rng.choice(pool)
