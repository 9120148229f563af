"""envgym: an agentic environment gym and benchmark suite.

    import envgym
    env = envgym.make("tool/retail-v1")
    obs, info = await env.reset(seed=0)

``import envgym`` is cheap: every name of ``__all__`` is imported from its module on first use (PEP 562),
and no family, pydantic model, numpy or Gymnasium loads until something needs it. Gymnasium learns every
envgym id (``gymnasium.make("envgym/tool-retail-v1")``, see :mod:`envgym.gym`) as soon as both are imported,
in either order: here when Gymnasium is already loaded, otherwise right after its first import.
"""

from __future__ import annotations

import sys
import typing

from envgym import _lazy

if typing.TYPE_CHECKING:
    from envgym.clock import Clock, SimClock, SystemClock
    from envgym.compose import make
    from envgym.env import Env, StepResult
    from envgym.errors import EnvgymError
    from envgym.registry import (
        EnvSpec,
        isolated,
        list_envs,
        list_suites,
        list_verifier_kinds,
        register,
        register_suite,
        register_verifier,
        spec,
    )
    from envgym.task import TaskSpec, load_suite, load_tasks
    from envgym.types import Action, FrozenModel, Observation, Outcome, ToolCall, ToolResult, Usage, Verdict

__version__ = "0.2.0"

__getattr__, __dir__ = _lazy.lazy_exports(__name__, {
    "envgym.clock": ("Clock", "SimClock", "SystemClock"),
    "envgym.env": ("Env", "StepResult"),
    "envgym.errors": ("EnvgymError",),
    "envgym.compose": ("make",),
    "envgym.registry": ("EnvSpec", "isolated", "list_envs", "list_suites", "list_verifier_kinds", "register",
                        "register_suite", "register_verifier", "spec"),
    "envgym.task": ("TaskSpec", "load_suite", "load_tasks"),
    "envgym.types": ("Action", "FrozenModel", "Observation", "Outcome", "ToolCall", "ToolResult", "Usage", "Verdict"),
})


def load_environment(**kwargs: object) -> object:
    """Entry point of PrimeIntellect ``verifiers``: ``verifiers.load_environment("envgym", suite=..., split=...)``
    imports this package and calls this. ``verifiers`` is imported only here, lazily
    (see :mod:`envgym.rl.adapters.verifiers_env`)."""
    from envgym.rl.adapters.verifiers_env import load_environment as load

    return load(**kwargs)  # type: ignore[arg-type]


class _AfterGymnasium:
    """A ``sys.meta_path`` finder that imports :mod:`envgym.gym` (which registers every id with Gymnasium)
    right after ``gymnasium`` itself is first imported; it finds nothing itself and leaves after one use."""

    def find_spec(self, fullname: str, path: typing.Any, target: typing.Any = None) -> typing.Any:
        if fullname != "gymnasium":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        found = next((spec for finder in sys.meta_path if hasattr(finder, "find_spec")
                      if (spec := finder.find_spec(fullname, path, target)) is not None), None)
        if found is None or found.loader is None:
            return found
        exec_module = found.loader.exec_module

        def exec_then_register(module: typing.Any) -> None:
            exec_module(module)
            __import__("envgym.gym")  # a no-op when envgym.gym's own import brought Gymnasium in

        found.loader.exec_module = exec_then_register  # on the loader's instance: its other methods stay
        return found


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

if "gymnasium" in sys.modules:
    __import__("envgym.gym")
else:
    sys.meta_path.insert(0, _AfterGymnasium())
