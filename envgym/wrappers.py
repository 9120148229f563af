"""Wrappers ``make`` puts around every env: ``OrderEnforcing(Grading(TimeLimit(env)))``.

``OrderEnforcing`` turns misuse into typed errors (:class:`ResetNeeded` for a step before reset or after
the episode ended, :class:`EnvClosed` after close). ``TimeLimit`` truncates an episode after the task's
``limits.max_steps`` (or the spec's ``max_episode_steps``), and never later than its run's ``cap`` (the rollout's
``max_steps``: a run setting, so the task and its hash stay as they are). ``Grading`` is the one place an
episode is graded: when a step ends it (terminated by the env, truncated by a limit) it grades it once, itself,
with the run's judge (:func:`envgym.verify.grade_episode`: the env reports through ``verify_context`` and adds
evidence through ``graded``), and returns the verdict as ``info["verdict"]`` and its score as the reward; a
later ``verify()`` of the same episode (the rollout's deadline path, a trainer) returns that same verdict. A
Grading over another one leaves the grading to the inner one (it holds the verdict). No verdict comes from
``info``: one an env puts there is dropped, whatever it says. An env that overrides ``verify`` (0.1's way to
grade itself) is still called, warning once per class; one whose override predates ``judge`` (``def
verify(self)``) is called without it (:func:`envgym._deprecation.call_verify`). Every wrapper shows the
wrapped env's capability flags; attributes of the env that no wrapper defines are forwarded.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from envgym._deprecation import call_verify
from envgym.env import Env, EnvState, StepResult
from envgym.errors import EnvClosed, EnvgymError, ResetNeeded, VerifierError
from envgym.registry import CAPABILITIES
from envgym.task import TaskSpec
from envgym.types import Action, Observation, Usage, Verdict
from envgym.verify import JudgeConfig, grade_episode


class Wrapper(Env):
    """Forwards everything to ``env``; subclasses override what they change."""

    def __init__(self, env: Env) -> None:
        self.env = env

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        value = getattr(self.env, name)
        _warn_forwarded(type(self.unwrapped), name)
        return value

    def get_wrapper_attr(self, name: str) -> Any:
        """``name`` from the outermost layer that has it, this wrapper or any below, down to the env (Gymnasium
        1.0's way to reach an env's own attribute through wrappers)."""
        if name in vars(self) or hasattr(type(self), name):
            return getattr(self, name)
        inner = self.env
        return inner.get_wrapper_attr(name) if isinstance(inner, Wrapper) else getattr(inner, name)

    @property
    def unwrapped(self) -> Env:
        return self.env.unwrapped

    @property
    def spec(self):  # type: ignore[override]
        return self.env.spec

    @property
    def task(self) -> TaskSpec | None:  # type: ignore[override]
        return self.env.task

    @property
    def tamper_agents(self) -> tuple[type, ...]:  # type: ignore[override]
        return self.env.tamper_agents

    async def reset(self, *, task: TaskSpec | str | None = None, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        return await self.env.reset(task=task, seed=seed, options=options)

    async def step(self, action: Action) -> StepResult:
        return await self.env.step(action)

    async def verify(self, *, judge: JudgeConfig | None = None) -> Verdict:
        return await call_verify(self.env, judge)

    async def prepare(self, task: TaskSpec) -> None:
        await self.env.prepare(task)

    def attach_usage(self, source: Callable[[], Usage] | None) -> None:
        self.env.attach_usage(source)

    async def close(self) -> None:
        await self.env.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__}{self.env!r}>"


_FORWARDED: set[tuple[type, str]] = set()


def _warn_forwarded(cls: type, name: str) -> None:
    if (cls, name) not in _FORWARDED:  # once per env class and attribute
        _FORWARDED.add((cls, name))
        warnings.warn(f"{cls.__qualname__}.{name} read through envgym's wrappers: use env.unwrapped.{name} or "
                      f"env.get_wrapper_attr({name!r}) (since 0.2; wrappers stop forwarding unknown attributes in 0.3, "
                      "as Gymnasium 1.0's did)", DeprecationWarning, stacklevel=3)


def _forwarded(flag: str) -> property:
    return property(lambda self: getattr(self.env, flag), doc=f"The wrapped env's ``{flag}``.")


for _flag in CAPABILITIES:  # every capability flag reads through to the env (the Env base's False would hide it)
    setattr(Wrapper, _flag, _forwarded(_flag))


class OrderEnforcing(Wrapper):
    """Raises ResetNeeded / EnvClosed on out-of-order calls."""

    def __init__(self, env: Env) -> None:
        super().__init__(env)
        self.state = EnvState.CREATED

    async def reset(self, *, task: TaskSpec | str | None = None, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        if self.state is EnvState.CLOSED:
            raise EnvClosed("reset() on a closed env")
        result = await self.env.reset(task=task, seed=seed, options=options)
        self.state = EnvState.RUNNING
        return result

    async def step(self, action: Action) -> StepResult:
        if self.state is EnvState.CLOSED:
            raise EnvClosed("step() on a closed env")
        if self.state is not EnvState.RUNNING:
            when = "before reset()" if self.state is EnvState.CREATED else "after the episode ended"
            raise ResetNeeded(f"step() called {when}; call reset() first")
        result = await self.env.step(action)
        if result.terminated or result.truncated:
            self.state = EnvState.DONE
        return result

    async def verify(self, *, judge: JudgeConfig | None = None) -> Verdict:
        if self.state is EnvState.CLOSED:
            raise EnvClosed("verify() on a closed env")
        if self.state is EnvState.CREATED:
            raise ResetNeeded("verify() before reset()")
        return await call_verify(self.env, judge)

    async def close(self) -> None:
        if self.state is not EnvState.CLOSED:
            self.state = EnvState.CLOSED
            await self.env.close()


class TimeLimit(Wrapper):
    """Truncates after ``max_steps`` (the task's limit wins over the spec's); :class:`Grading` grades it."""

    def __init__(self, env: Env, max_steps: int | None = None, *, cap: int | None = None) -> None:
        super().__init__(env)
        self.max_steps, self.cap = max_steps, cap
        self._limit: int | None = self._capped(max_steps)
        self.elapsed_steps = 0

    def _capped(self, limit: int | None) -> int | None:
        return limit if self.cap is None else self.cap if limit is None else min(limit, self.cap)

    async def reset(self, *, task: TaskSpec | str | None = None, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        obs, info = await self.env.reset(task=task, seed=seed, options=options)
        self.elapsed_steps = 0
        current = self.env.task
        self._limit = self._capped(current.limits.max_steps if current is not None else self.max_steps)
        return obs, info

    async def step(self, action: Action) -> StepResult:
        obs, reward, terminated, truncated, info = await self.env.step(action)
        self.elapsed_steps += 1
        if not terminated and not truncated and self._limit is not None and self.elapsed_steps >= self._limit:
            return StepResult(obs, reward, False, True, {**info, "truncated_by": "max_steps"})
        return StepResult(obs, reward, terminated, truncated, info)


class Grading(Wrapper):
    """Grades each episode exactly once, when it ends (see the module docstring)."""

    def __init__(self, env: Env, judge: JudgeConfig | None = None) -> None:
        super().__init__(env)
        self.judge = judge
        self._verdict: Verdict | None = None
        self._ended = False

    async def reset(self, *, task: TaskSpec | str | None = None, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        self._verdict, self._ended = None, False
        obs, info = await self.env.reset(task=task, seed=seed, options=options)
        current = self.env.task
        if current is not None:  # what was drawn, said the same way by every env
            info = {**info, "task_id": current.id, "split": current.split}
        return obs, info

    async def step(self, action: Action) -> StepResult:
        obs, reward, terminated, truncated, info = await self.env.step(action)
        if "verdict" in info:  # an env's own verdict counts for nothing
            info = {k: v for k, v in info.items() if k != "verdict"}
        if not (terminated or truncated):
            return StepResult(obs, reward, terminated, truncated, info)
        self._ended = True
        try:
            verdict = await self.verify()
        except EnvgymError:
            raise  # it says whose it is (its class's or instance's blame), or its stage decides
        except Exception as exc:  # grading's own bug raised inside the step: the verifier's, not the env's
            raise VerifierError(f"grading raised {type(exc).__name__}: {exc}") from exc
        return StepResult(obs, verdict.score, terminated, truncated, {**info, "verdict": verdict})

    async def verify(self, *, judge: JudgeConfig | None = None) -> Verdict:
        """The episode as it stands; once it has ended, its one verdict (graded on the first call)."""
        if self._verdict is not None:
            return self._verdict
        judge = judge or self.judge
        if _grades_below(self.env):  # an inner Grading holds the episode's one verdict
            verdict = await call_verify(self.env, judge)
        else:
            base = self.env.unwrapped
            graded = call_verify(base, judge) if _grades_itself(type(base)) else grade_episode(base, judge=judge)
            verdict = await graded
        if self._ended:
            self._verdict = verdict
        return verdict


def _grades_below(env: Env) -> bool:
    while isinstance(env, Wrapper):
        if isinstance(env, Grading):
            return True
        env = env.env
    return False


_OVERRIDES: dict[type, bool] = {}


def _grades_itself(cls: type) -> bool:
    """Whether ``cls`` overrides ``verify`` (0.1's way to grade in the env): warned about once per class."""
    found = _OVERRIDES.get(cls)
    if found is None:
        found = _OVERRIDES[cls] = cls.verify is not Env.verify  # type: ignore[attr-defined]
        if found:
            warnings.warn(f"{cls.__module__}.{cls.__qualname__} overrides verify(): the kernel grades, so report "
                          "through verify_context() and add evidence in graded() instead (since 0.2; overriding "
                          "verify goes in 0.3)", DeprecationWarning, stacklevel=3)
    return found
