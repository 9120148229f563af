"""``make``: an env id built, given its task source and wrapped for grading.

``make(env_id, **kwargs)`` reads the registration (:mod:`envgym.registry`), calls the factory with the spec's
keyword arguments overridden by the caller's (a keyword the factory does not take is a :class:`RegistryError`
naming the env id and the keywords it does take), gives the env its task source
(:meth:`envgym.task.SuiteTasks.of`: what ``reset(task=<id>)`` and ``reset()`` resolve against) and wraps it:
``OrderEnforcing(Grading(TimeLimit(env)))``. ``make(..., judge=JudgeConfig)`` is the kernel's, never the
constructor's: it goes to the :class:`~envgym.wrappers.Grading` wrapper, which grades every episode exactly once
(see :mod:`envgym.wrappers`). This module sits above the env contract, the tasks and the wrappers: nothing
below imports it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from envgym.env import Env
from envgym.errors import RegistryError
from envgym.registry import load_entry_point, spec
from envgym.task import SuiteTasks
from envgym.verify import JudgeConfig
from envgym.wrappers import Grading, OrderEnforcing, TimeLimit

__all__ = ["make"]


def _check_kwargs(env_id: str, factory: Callable[..., Any], kwargs: dict[str, Any]) -> None:
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # a builtin or C callable: let the call speak
        return
    params = signature.parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return
    accepted = [p.name for p in params if p.kind in (inspect.Parameter.KEYWORD_ONLY,
                                                     inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    unknown = sorted(set(kwargs) - set(accepted))
    if unknown:
        raise RegistryError(f"{env_id}: unknown keyword argument(s) {', '.join(map(repr, unknown))}; "
                            f"it takes: {', '.join(accepted) or 'none'} (and judge=, which make() keeps)")


def make(env_id: str, *, judge: JudgeConfig | None = None, **kwargs: Any) -> Env:
    """Build ``env_id``, wrapped (see the module docstring). ``kwargs`` override the spec's; ``judge`` (a
    :class:`~envgym.verify.JudgeConfig`) is where LLM-judge criteria are sent when this env is graded."""
    spec_ = spec(env_id)
    factory = load_entry_point(spec_.entry_point)
    merged = {**spec_.kwargs, **kwargs}
    _check_kwargs(env_id, factory, merged)
    try:
        env = factory(**merged)
    except TypeError as exc:  # a factory taking **kwargs passes them on: the constructor below says no
        if "unexpected keyword argument" not in str(exc):
            raise
        raise RegistryError(f"{env_id}: {exc} (make() passes keyword arguments to the env's constructor; "
                            f"the spec gives {sorted(spec_.kwargs) or 'none'})") from None
    env.spec = spec_
    if env._task_source is None:  # an env may bring its own (a fixed pool); otherwise its spec's suites
        env.task_source = SuiteTasks.of(spec_)
    return OrderEnforcing(Grading(TimeLimit(env, max_steps=spec_.max_episode_steps), judge=judge))
