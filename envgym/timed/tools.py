"""Tools of a timed world: typed functions over the world, some slow, some taking time, and the wait tools.

A :class:`TimedTool` is a function ``fn(world, args)`` over the episode's world (any
:class:`~envgym.timed.world.TimedWorld` subclass: an outside engine sits behind it), declared ``read`` or
``write``; its arguments are a pydantic model whose JSON schema becomes the OpenAI function schema. What
``fn`` returns is what the agent reads: a ``str`` as it is (a text engine's view, newlines and all), anything
else as compact, key-sorted JSON. One call, in this order:

1. the arguments are parsed (a bad argument is refused; no time passes);
2. ``check(world, args)``, when given, runs *before any time passes*: a :class:`ToolFailure` there refuses
   the call at no cost (the world is not touched). ``duration`` runs next and may refuse the same way (the
   older spelling of a check; prefer ``check``);
3. time passes, by one of:

   - ``slow=True``: in an ``async`` world the call returns ``{"handle": "h1", "status": "pending"}`` at once
     and its result arrives later as a ``tool_result`` notification from ``h1``, after a latency the world
     draws (:meth:`~envgym.timed.world.TimedWorld.latency_of`); in a ``sync`` world it answers in the same step;
   - ``duration``: the action itself takes time (walking to the stove, typing a report). The agent is busy:
     the world runs for ``duration`` units (events fire meanwhile), then ``fn`` runs. A number, or a function
     of ``(world, args)``; the time counts as ``acting_s``, not waiting;
   - ``at_tick=True``: **check now, perform on the next tick**, the idiom of a turn-based engine whose
     ``step(action)`` both acts and advances the game one turn: the agent is busy until the world's next
     tick (acting time), and there ``fn`` runs as that tick's turn, *in place of* the world's ``on_tick``
     (so the engine is stepped once, with the action). Not with ``slow`` or ``duration``;

4. ``fn(world, args)`` runs: a :class:`ToolFailure` now refuses the call after its time was spent (shown to
   the agent; the tool must leave the state as it was). Any other exception is the env's bug (an
   :class:`~envgym.errors.EnvError`).

A call is cut, with an error, when the episode's time runs out or the world says it is finished
(:meth:`~envgym.timed.world.TimedWorld.finished`) before step 4. The wait tools (:func:`control_tools`) are
the kernel's: ``wait`` and ``wait_for_notification``, in seconds or, on a step clock, in steps::

    class Stir(BaseModel):
        pot: str

    @tool("write", "Stir a pot (takes 1 step).", duration=1)
    def stir(world: MyWorld, args: Stir) -> dict: ...

    @tool("write", "Move (one turn).", check=lambda world, args: world.refuse_unless_valid(args), at_tick=True)
    def move(world: MyWorld, args: Move) -> str:
        return world.engine.step(args.direction)[0]     # the engine's own turn, with the action
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
Check = Callable[[Any, Any], Any] | None


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
    check: Check = None
    """``check(world, args)``, run before any time passes: raise :class:`ToolFailure` to refuse at no cost."""
    at_tick: bool = False
    """Performed at the world's next tick, as that tick's turn (in place of ``on_tick``)."""

    def __post_init__(self) -> None:
        if self.at_tick and (self.slow or self.duration is not None):
            raise ValueError(f"tool {self.name}: at_tick takes the time to the next tick; not with slow or duration")

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-calling schema of this tool."""
        takes_time = self.duration is not None or self.at_tick
        tags = [self.kind, *(["slow"] if self.slow else []), *(["takes time"] if takes_time else [])]
        return function_schema(self.name, f"[{', '.join(tags)}] {self.description}", self.args_model)

    def duration_of(self, world: Any, args: Any) -> float:
        if self.duration is None:
            return 0.0
        value = self.duration(world, args) if callable(self.duration) else self.duration
        if value < 0:
            raise ValueError(f"tool {self.name}: a duration cannot be negative ({value})")
        return float(value)


def tool(kind: Kind, description: str, *, slow: bool = False, duration: Duration = None, check: Check = None,
         at_tick: bool = False) -> Callable[[Callable[[Any, Any], Any]], TimedTool]:
    """Decorator: the function's ``args`` parameter is annotated with the arguments model."""

    def wrap(fn: Callable[[Any, Any], Any]) -> TimedTool:
        return TimedTool(name=fn.__name__, kind=kind, description=description, args_model=args_model_of(fn), fn=fn,
                         slow=slow, duration=duration, check=check, at_tick=at_tick)

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
