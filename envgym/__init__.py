"""envgym: an agentic environment gym and benchmark suite.

    import envgym
    env = envgym.make("tool/retail-v1")
    obs, info = await env.reset(seed=0)
"""

from __future__ import annotations

from envgym.clock import Clock, SimClock, SystemClock
from envgym.env import Env, StepResult
from envgym.errors import EnvgymError
from envgym.registry import (
    EnvSpec,
    isolated,
    list_envs,
    list_suites,
    list_verifier_kinds,
    make,
    register,
    register_suite,
    register_verifier,
    spec,
)
from envgym.task import TaskSpec, load_suite, load_tasks
from envgym.types import (
    Action,
    FrozenModel,
    Observation,
    Outcome,
    ToolCall,
    ToolResult,
    Usage,
    Verdict,
)

__version__ = "0.1.0"


def _register_with_gymnasium() -> None:
    import warnings

    from envgym.errors import PluginError
    from envgym.gym import register_gymnasium_envs

    try:
        register_gymnasium_envs()
    except PluginError as exc:  # a broken third-party plug-in must not make envgym unimportable
        warnings.warn(f"{exc}; its ids are not registered with Gymnasium", RuntimeWarning, stacklevel=2)


_register_with_gymnasium()


def load_environment(**kwargs: object) -> object:
    """Entry point of PrimeIntellect ``verifiers``: ``verifiers.load_environment("envgym", suite=..., split=...)``
    imports this package and calls this. ``verifiers`` is imported only here, lazily
    (see :mod:`envgym.rl.adapters.verifiers_env`)."""
    from envgym.rl.adapters.verifiers_env import load_environment as load

    return load(**kwargs)  # type: ignore[arg-type]


__all__ = [
    "Action",
    "Clock",
    "Env",
    "EnvSpec",
    "EnvgymError",
    "FrozenModel",
    "Observation",
    "Outcome",
    "SimClock",
    "StepResult",
    "SystemClock",
    "TaskSpec",
    "ToolCall",
    "ToolResult",
    "Usage",
    "Verdict",
    "isolated",
    "list_envs",
    "list_suites",
    "list_verifier_kinds",
    "load_environment",
    "load_suite",
    "load_tasks",
    "make",
    "register",
    "register_suite",
    "register_verifier",
    "spec",
]
