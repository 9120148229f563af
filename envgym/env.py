"""The async environment contract.

An :class:`Env` runs one episode at a time::

    obs, info = await env.reset(task=task, seed=0)      # info["tools"]: OpenAI function schemas
    obs, reward, terminated, truncated, info = await env.step(action)
    verdict = await env.verify()                         # grade the episode as it stands
    await env.close()                                    # or: async with envgym.make(...) as env

What a family writes: ``reset`` (resolve the task with :meth:`Env.choose_task`, which asks the env's task
source: the env never picks tasks itself; heavy per-task work may go in the optional :meth:`Env.prepare`, which
the rollout awaits outside the step deadlines), ``step`` (report ``terminated`` / ``truncated``, reward 0: a
family never grades itself), :meth:`Env.verify_context` (what the verifiers may read: calls, final answer, the
state before and after) and, optionally, :meth:`Env.graded` (evidence it adds once the verdict is in). The kernel
grades: the :class:`~envgym.wrappers.Grading` wrapper ``make`` adds calls :func:`envgym.verify.grade_episode`
exactly once when an episode ends (terminated, truncated by a step limit, or cut by the rollout's deadline) and
returns the verdict as ``info["verdict"]`` and its score as the reward. Overriding ``verify`` (0.1's way for an
env to grade itself) still works, warning.

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
from envgym.errors import EnvError
from envgym.task import SuiteTasks, TaskSpec
from envgym.types import Action, Observation, Usage, Verdict
from envgym.verify import JudgeConfig, VerifyContext, grade_episode

if TYPE_CHECKING:
    from envgym.registry import EnvSpec


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
    simulated_user: ClassVar[bool] = False
    """It talks to a simulated user (takes ``user=``: ``envgym eval --user`` reaches it)."""
    virtual_time: ClassVar[bool] = False
    """Its world keeps virtual time (takes ``budget=`` / ``budget_factor=``: ``eval --max-virtual-time``)."""
    sql_state: ClassVar[bool] = False
    """Its final state offers the SQL view (:class:`~envgym.verify.state.SqlView`) a rubric ``sql`` check needs;
    a task of its suites with such a check is refused when the suite loads for an env without it."""
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
        self._task_source: SuiteTasks | None = None

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

    async def graded(self, verdict: Verdict) -> dict[str, Any]:
        """Called once the kernel has graded the episode (``verdict``, read-only): evidence this env adds to it
        (the page's own reward row, the simulated user's turns), and its moment to release what only grading
        needed. The default adds nothing. What it returns cannot change the score or ``passed``, and cannot
        replace evidence the verifiers gave (their keys win)."""
        return {}

    async def verify(self, *, judge: JudgeConfig | None = None) -> Verdict:
        """Grade the current episode as it stands: the kernel's :func:`envgym.verify.grade_episode` on what this
        env reports (:meth:`verify_context`, then :meth:`graded`), the same call ``make``'s Grading wrapper makes.
        Overriding it (0.1's way to grade in the env) still works but is deprecated since 0.2."""
        return await grade_episode(self, judge=judge)

    @classmethod
    def answers_sql(cls, task: TaskSpec) -> bool:
        """Whether ``task``'s final state will answer SQL (a rubric ``sql`` check): :attr:`sql_state`. An env
        whose state depends on the task (the MCP server a task names) overrides it; a task with a ``sql`` check
        it answers False for is refused when its suite loads (:class:`envgym.task.SuiteTasks`)."""
        return cls.sql_state

    @classmethod  # noqa: B027 - optional hook
    def warm(cls, **kwargs: Any) -> None:
        """Load what every instance built with these registration ``kwargs`` will need (modules, data its
        constructor reads), without building one. Optional; the default does nothing. envgym calls it in the
        fork server that ``envgym eval --workers`` processes start from (:mod:`envgym._forkserver`), once per env
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

    @property
    def task_source(self) -> SuiteTasks:
        """Where :meth:`choose_task` resolves ids and draws tasks: ``envgym.make`` sets the env's spec's
        (:meth:`envgym.task.SuiteTasks.of`); an env built by hand gets its spec's when first asked."""
        if self._task_source is None:
            self._task_source = SuiteTasks.of(self.spec)
        return self._task_source

    @task_source.setter
    def task_source(self, source: SuiteTasks) -> None:
        self._task_source = source

    def default_tasks(self) -> list[TaskSpec]:
        """Tasks of this env's registered suites, all splits."""
        return self.task_source.tasks

    _choose_task = MovedAttribute("choose_task", since="0.2", removal="0.3")
    """The 0.1 name of :meth:`choose_task` (warns)."""

    def choose_task(self, task: TaskSpec | str | None, seed: int | None,
                    options: dict[str, Any] | None = None) -> TaskSpec:
        """The episode's task, as the env's :attr:`task_source` resolves ``task`` (a TaskSpec, a task id, or None:
        drawn with ``seed``, of ``options["split"]`` if given). Seeds the env's RNG."""
        if seed is not None:
            self._rng.seed(seed)
        return self.task_source.choose(task, self._rng, options, label=self.env_id)
