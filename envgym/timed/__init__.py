"""Time-evolving environments: the kernel base any engine can sit behind, and the time model under it.

- :mod:`envgym.timed.env`: :class:`TimedWorldEnv`, the base a plug-in subclasses (tools, wait tools,
  thinking, waiting/idle/acting accounting, notifications, budgets, preparation, grading context:
  :class:`TimedVerifyContext`);
- :mod:`envgym.timed.world`: :class:`TimedWorld`, what a plug-in's world (its engine) subclasses: the clock
  in seconds or steps, the call log, notifications, per-step effects that can pause (:class:`Process`);
- :mod:`envgym.timed.tools`: :class:`TimedTool` (slow tools, actions that take time) and the wait tools;
- :mod:`envgym.timed.scheduler`: events at a time, after a delay or on a condition, with dependencies;
- :mod:`envgym.timed.thinking`: how far the clock moves while the agent decides (seconds or steps);
- :mod:`envgym.timed.latency`: bounded, seeded latency distributions for asynchronous tools;
- :mod:`envgym.timed.timeline`: calls, events, notifications, per-step timings and watched state, graded by
  the ``timed_write`` verifier kind (:mod:`envgym_verifiers.timed_write`, a plug-in package);
- :mod:`envgym.timed.prepare`: :class:`TaskCache`, per-task preparation off the event loop, by task hash;
- :mod:`envgym.timed.replay`: ``replay`` and ``regrade``, re-run and re-grade a recorded run of any timed
  env (import them from the module: the package attribute ``replay`` is the module).

The ``timed`` family (``environments/timed``) is built on it the way a third-party package would be.
"""

from __future__ import annotations

import typing

from envgym import _lazy
from envgym.timed.latency import Latency, latency  # eager: the name ``latency`` is also this submodule's
from envgym.timed.timeline import (
    Notification,
    StateChange,
    StepTiming,
    TimedCall,
    Timeline,
    TimelineEvent,
    format_clock,
    format_time_of_day,
    parse_time_of_day,
)

if typing.TYPE_CHECKING:
    from envgym.timed.env import TimedObservation, TimedWorldEnv
    from envgym.timed.grading import TimedVerifyContext
    from envgym.timed.prepare import TaskCache
    from envgym.timed.scheduler import Event, EventState, Fired, Scheduler
    from envgym.timed.thinking import (
        DEFAULT_THINKING,
        ThinkingPolicy,
        ThinkingSample,
        thinking_policy,
        usage_delta,
    )
    from envgym.timed.tools import TimedTool, ToolFailure, control_tools, tool
    from envgym.timed.world import CallDraft, Process, TimedWorld, WorldState

# Loaded on first use: the env base and the tools import envgym.verify / envgym.tools, so ``import envgym.verify``
# and ``import envgym.timed`` work in either order.
__getattr__, __dir__ = _lazy.lazy_exports(__name__, {
    "envgym.timed.env": ("TimedObservation", "TimedWorldEnv"),
    "envgym.timed.grading": ("TimedVerifyContext",),
    "envgym.timed.prepare": ("TaskCache",),
    "envgym.timed.scheduler": ("Event", "EventState", "Fired", "Scheduler"),
    "envgym.timed.thinking": ("DEFAULT_THINKING", "ThinkingPolicy", "ThinkingSample", "thinking_policy", "usage_delta"),
    "envgym.timed.tools": ("TimedTool", "ToolFailure", "control_tools", "tool"),
    "envgym.timed.world": ("CallDraft", "Process", "TimedWorld", "WorldState"),
})


__all__ = [
    "DEFAULT_THINKING",
    "CallDraft",
    "Event",
    "EventState",
    "Fired",
    "Latency",
    "Notification",
    "Process",
    "Scheduler",
    "StateChange",
    "StepTiming",
    "TaskCache",
    "ThinkingPolicy",
    "ThinkingSample",
    "TimedCall",
    "TimedObservation",
    "TimedTool",
    "TimedVerifyContext",
    "TimedWorld",
    "TimedWorldEnv",
    "Timeline",
    "TimelineEvent",
    "ToolFailure",
    "WorldState",
    "control_tools",
    "format_clock",
    "format_time_of_day",
    "latency",
    "parse_time_of_day",
    "thinking_policy",
    "tool",
    "usage_delta",
]
