"""The rollout loop: one episode of one agent in one env, always ending in a Trajectory.

``run_episode`` lets the env prepare the task (:meth:`~envgym.env.Env.prepare`, outside every deadline; a
failure there is blamed like one at reset), resets the env with the task, steps the agent until the
episode terminates or is truncated, and attributes every exception once, here (:func:`blame_of`), to one
of four parties:

========== ============================================================== =========================
blame      when                                                           outcome
========== ============================================================== =========================
agent      its action broke its sandbox (killed it, exhausted memory or   failure
           processes, a command that hung the session), it timed out,
           its own code raised, it raised :class:`AgentFault`, it
           returned something that is not an :class:`Action`
env        the environment's code raised during a step                    failure
verifier   grading raised (a broken check)                                failure
infra      nothing the agent could cause: the engine is down, an image    ``infra_error`` (leaves
           is missing, the model endpoint or the judge does not answer,   the denominator; eval
           the env failed at reset, before the agent acted                retries it)
========== ============================================================== =========================

An error class may name its party in its ``blame`` class variable (an instance may override it); otherwise
the stage decides: a :class:`SandboxError` after the agent's first action is the agent's (only its commands
run there), before it the infrastructure's. Blamed failures carry a zero verdict whose evidence holds the
blame and the cause. Running out of the episode deadline truncates the episode and grades it as it stands;
a ``TimeoutError`` raised by anything else (a sandbox command that could not be stopped) is attributed like
any error, never mistaken for the deadline. Only cancellation propagates (after cleanup). The agent is
closed in ``finally``; the env belongs to the caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import traceback

from envgym.agent import Agent
from envgym.clock import Clock, SystemClock
from envgym.env import Env
from envgym.errors import AgentFault, EnvgymError, PolicyTimeout, SandboxError, StepTimeout
from envgym.task import TaskSpec
from envgym.trajectory import StepRecord, Trajectory
from envgym.types import Action, Blame, Observation, Outcome, Timing, Verdict
from envgym.wrappers import Grading, TimeLimit

_STAGE_BLAME = {"reset": Blame.INFRA, "agent": Blame.AGENT, "env": Blame.ENV, "verify": Blame.VERIFIER}


def blame_of(exc: BaseException, stage: str) -> Blame:
    """Whose failure ``exc`` is, escaping from ``stage`` (``reset``, ``agent``, ``env`` or ``verify``)."""
    explicit = getattr(exc, "blame", None)
    if explicit:
        return Blame(explicit)
    if isinstance(exc, SandboxError):
        return Blame.INFRA if stage == "reset" else Blame.AGENT
    return _STAGE_BLAME[stage]


class _StepDeadline:
    """The step deadline, re-armed before every call for the price of a float store.

    One timer per episode: when it fires it compares the clock with the current due time and re-arms itself
    to that time, and only a due time that has really passed fires ``timeout`` (the enclosing
    ``asyncio.Timeout``, which then cancels the task into a ``TimeoutError``). Rescheduling the Timeout
    itself before every call would cost a timer handle and a heap push per call.
    """

    __slots__ = ("_handle", "due", "loop", "seconds", "timeout")

    def __init__(self, loop: asyncio.AbstractEventLoop, timeout: asyncio.Timeout, seconds: float | None) -> None:
        self.loop, self.timeout, self.seconds = loop, timeout, seconds
        self.due = 0.0
        self._handle: asyncio.TimerHandle | None = None

    def arm(self) -> None:
        if self.seconds is None:
            return
        self.due = self.loop.time() + self.seconds
        if self._handle is None:
            self._handle = self.loop.call_at(self.due, self._check)

    def _check(self) -> None:
        now = self.loop.time()
        if now >= self.due:
            self._handle = None
            with contextlib.suppress(RuntimeError):  # the Timeout has exited already (the episode is grading)
                self.timeout.reschedule(now)
        else:
            self._handle = self.loop.call_at(self.due, self._check)

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


_STEP_FIELDS = frozenset(StepRecord.model_fields)
_set = object.__setattr__


def _step_record(index: int, action: Action, observation: Observation, reward: float, agent_s: float,
                 env_s: float) -> StepRecord:
    """``StepRecord.model_construct(...)`` for the rollout's own, already typed values, at a quarter of its
    cost (it is paid once per step of every episode): the four attributes pydantic's ``model_construct``
    sets, without its per-field alias and default lookups. ``tests/test_rollout.py`` holds it equal."""
    record = StepRecord.__new__(StepRecord)
    _set(record, "__dict__", {"index": index, "action": action, "observation": observation, "reward": reward,
                              "agent_s": agent_s, "env_s": env_s})
    _set(record, "__pydantic_fields_set__", set(_STEP_FIELDS))
    _set(record, "__pydantic_extra__", None)
    _set(record, "__pydantic_private__", None)
    return record


async def run_episode(env: Env, agent: Agent, task: TaskSpec, *, seed: int | None = None,
                      clock: Clock | None = None, max_steps: int | None = None,
                      step_timeout_s: float | None = None) -> Trajectory:
    """One episode (see the module docstring). ``max_steps`` caps the task's step limit (never raises it) and
    ``step_timeout_s`` replaces its per-step deadline: run settings, so the task and its hash stay as they are.
    An episode cut by ``max_steps`` is graded as it stands (through the env's ``verify``) and truncated."""
    clock = clock or SystemClock()
    limits = task.limits
    if step_timeout_s is not None:
        limits = limits.model_copy(update={"step_timeout_s": step_timeout_s})
    env = Grading(TimeLimit(env, cap=max_steps))  # the run's step cap; an env make() built keeps its own Grading
    loop = asyncio.get_running_loop()
    started_wall, started = clock.wall(), clock.now()
    steps: list[StepRecord] = []
    env_s = agent_s = 0.0
    verdict: Verdict | None = None
    reward = 0.0
    outcome = Outcome.FAILURE
    error: BaseException | None = None
    first: Observation | None = None
    # One step deadline for the whole episode, re-armed before each call (see _StepDeadline);
    # ``phase`` says whose deadline it was when it fires.
    step_deadline: asyncio.Timeout | None = None
    episode_deadline: asyncio.Timeout | None = None
    watchdog: _StepDeadline | None = None
    phase = "reset"
    blame: Blame | None = None

    def arm(next_phase: str) -> None:
        nonlocal phase
        phase = next_phase
        if watchdog is not None:
            watchdog.arm()

    env.attach_usage(lambda: agent.usage)  # envs where thinking costs time charge by the agent's tokens
    try:
        await env.prepare(task)  # per-task preparation: before the deadlines, blamed like reset
        async with asyncio.timeout(limits.episode_timeout_s) as episode_deadline, \
                asyncio.timeout(None) as step_deadline:
            watchdog = _StepDeadline(loop, step_deadline, limits.step_timeout_s)
            t = clock.now()
            arm("reset")
            obs, info = await env.reset(task=task, seed=seed)
            first = obs
            env_s += clock.now() - t
            phase = "agent"
            await agent.reset(obs, info)
            now, rearm = clock.now, watchdog.arm  # the per-step path: arm() inlined
            while True:
                t = now()
                phase = "agent"
                rearm()
                action = await agent.act(obs)
                if not isinstance(action, Action):
                    raise AgentFault(f"the agent returned {type(action).__name__}, not an Action")
                t_env = now()
                agent_s += t_env - t
                phase = "env"
                rearm()
                obs, reward, terminated, truncated, info = await env.step(action)
                spent = now() - t_env
                env_s += spent
                steps.append(_step_record(len(steps), action, obs, reward, t_env - t, spent))
                if terminated or truncated:
                    arm("verify")  # never info's: the Grading above returns the one verdict it graded (cached)
                    verdict = await env.verify()
                    outcome = Outcome.SUCCESS if verdict.passed else (
                        Outcome.TRUNCATED if truncated else Outcome.FAILURE)
                    break
    except Exception as exc:
        stage = phase
        if isinstance(exc, TimeoutError) and step_deadline is not None and step_deadline.expired():
            what = {"reset": "reset", "agent": "the agent's step", "env": "the environment's step",
                    "verify": "grading"}[phase]
            kind = PolicyTimeout if phase == "agent" else StepTimeout
            error = kind(f"{what} exceeded its {limits.step_timeout_s:g}s deadline")
        elif isinstance(exc, TimeoutError) and episode_deadline is not None and episode_deadline.expired():
            outcome, stage = Outcome.TRUNCATED, "verify"  # the episode deadline: grade what the agent achieved
            try:
                verdict = await asyncio.wait_for(env.verify(), timeout=30)
                reward = verdict.score
                if verdict.passed:
                    outcome = Outcome.SUCCESS
            except Exception as grade_exc:
                error = grade_exc
        else:
            error = exc
        if error is not None:
            blame = blame_of(error, stage)
            outcome = Outcome.INFRA_ERROR if blame is Blame.INFRA else Outcome.FAILURE
            verdict = None if blame is Blame.INFRA else Verdict(
                score=0.0, passed=False, evidence={"blame": blame.value, "stage": stage,
                                                   "cause": f"{type(error).__name__}: {error}"[:2000]})
    finally:
        if watchdog is not None:
            watchdog.cancel()
        env.attach_usage(None)
        await agent.close()
    usage = agent.usage
    timing = Timing(started_at=started_wall, wall_s=clock.now() - started, env_s=env_s, agent_s=agent_s)
    message = None
    if error is not None:
        message = f"{type(error).__name__}: {error}"
        if not isinstance(error, EnvgymError):
            message += "\n" + "".join(traceback.format_exception(error, limit=-3))
    return Trajectory(task_id=task.id, task_hash=task.hash, env_id=task.env_id, seed=seed, initial_observation=first,
                      steps=tuple(steps), outcome=outcome, verdict=verdict,
                      reward=verdict.score if verdict else (0.0 if error else reward), usage=usage, timing=timing,
                      error=message, error_type=type(error).__name__ if error else None, blame=blame,
                      token_data=list(agent.token_data))
