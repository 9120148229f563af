"""Tools of a timed world: typed functions over the world, some slow, some taking time, and the wait tools.

A :class:`TimedTool` is a function ``fn(world, args)`` over the episode's world (any
:class:`~envgym.timed.world.TimedWorld` subclass: an outside engine sits behind it), declared ``read`` or
``write``; its arguments are a pydantic model whose JSON schema becomes the OpenAI function schema. Time
enters in two ways:

- ``slow=True``: in an ``async`` world the call returns ``{"handle": "h1", "status": "pending"}`` at once and
  its result arrives later as a ``tool_result`` notification, after a latency the world draws
  (:meth:`~envgym.timed.world.TimedWorld.latency_of`); in a ``sync`` world it answers in the same step;
- ``duration``: the action itself takes time (walking to the stove, typing a report). The agent is busy: the
  world runs for ``duration`` units (events fire meanwhile), then ``fn`` runs and the call is done. A
  number, or a function of ``(world, args)``; the time counts as ``acting_s``, not waiting.

A tool refuses with :class:`ToolFailure` (shown to the agent, nothing changes); any other exception is the
env's bug (an :class:`~envgym.errors.EnvError`). The wait tools (:func:`control_tools`) are the kernel's:
``wait`` and ``wait_for_notification``, in seconds or, on a step clock, in steps::

    class Stir(BaseModel):
        pot: str

    @tool("write", "Stir a pot (takes 1 step).", duration=1)
    def stir(world: MyWorld, args: Stir) -> dict: ...
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from envgym.errors import ActionRefused
from envgym.tools.args import args_model_of, function_schema

Kind = Literal["read", "write", "control"]
Duration = float | Callable[[Any, Any], float] | None


class ToolFailure(ActionRefused):
    """The call was understood but cannot be done (not found, wrong state). Shown to the agent."""


@dataclass(frozen=True)
class TimedTool:
    name: str
    kind: Kind
    description: str
    args_model: type[BaseModel]
    fn: Callable[[Any, Any], Any]
    slow: bool = False
    duration: Duration = None
    """How long the action takes, in the world's unit (a number or ``fn(world, args)``); None: no time."""

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-calling schema of this tool."""
        tags = [self.kind, *(["slow"] if self.slow else []), *(["takes time"] if self.duration is not None else [])]
        return function_schema(self.name, f"[{', '.join(tags)}] {self.description}", self.args_model)

    def duration_of(self, world: Any, args: Any) -> float:
        if self.duration is None:
            return 0.0
        value = self.duration(world, args) if callable(self.duration) else self.duration
        if value < 0:
            raise ValueError(f"tool {self.name}: a duration cannot be negative ({value})")
        return float(value)


def tool(kind: Kind, description: str, *, slow: bool = False,
         duration: Duration = None) -> Callable[[Callable[[Any, Any], Any]], TimedTool]:
    """Decorator: the function's ``args`` parameter is annotated with the arguments model."""

    def wrap(fn: Callable[[Any, Any], Any]) -> TimedTool:
        return TimedTool(name=fn.__name__, kind=kind, description=description, args_model=args_model_of(fn), fn=fn,
                         slow=slow, duration=duration)

    return wrap


# -- the wait tools (run by the env, which owns the clock; their functions are never called) ---------------

class WaitArgs(BaseModel):
    seconds: float | None = Field(default=None, ge=0, le=86_400, description="How long to let time pass.")
    until: str | None = Field(default=None, description="Or: a time of day to wait until, HH:MM or HH:MM:SS.")


class WaitForNotificationArgs(BaseModel):
    timeout: float = Field(gt=0, le=86_400, description="Give up after this many seconds.")
    source: str | None = Field(default=None, description="Only wake for this sender, appliance or handle (h1).")


class WaitStepsArgs(BaseModel):
    steps: int = Field(ge=1, le=100_000, description="How many steps to let pass.")


class WaitStepsForNotificationArgs(BaseModel):
    timeout: int = Field(ge=1, le=100_000, description="Give up after this many steps.")
    source: str | None = Field(default=None, description="Only wake for this sender, appliance or handle (h1).")


def _run_by_env(world: Any, args: Any) -> None:
    return None


_WAIT_TEXT = "Let time pass: wait a number of seconds, or until a time of day."
_NOTE_TEXT = "Wait until a new notification arrives (from `source`, if given) or the timeout passes."
_SECOND_CONTROLS = (
    TimedTool("wait", "control", _WAIT_TEXT, WaitArgs, _run_by_env),
    TimedTool("wait_for_notification", "control", _NOTE_TEXT, WaitForNotificationArgs, _run_by_env),
)
_STEP_CONTROLS = (
    TimedTool("wait", "control", "Let time pass: wait a number of steps.", WaitStepsArgs, _run_by_env),
    TimedTool("wait_for_notification", "control", _NOTE_TEXT.replace("timeout passes", "timeout (steps) passes"),
              WaitStepsForNotificationArgs, _run_by_env),
)


def control_tools(unit: str = "s") -> dict[str, TimedTool]:
    """The wait tools of a clock in ``unit`` (``"s"`` or ``"step"``), by name."""
    return {t.name: t for t in (_STEP_CONTROLS if unit == "step" else _SECOND_CONTROLS)}
