"""The timed base: what a family of asynchronous, time-evolving worlds builds on, an outside engine included
(part of the plug-in surface).

Covered by Semantic Versioning like all of :mod:`envgym.plugin` (see ``CHANGELOG.md``).

- the world: :class:`TimedWorld` (state, scheduled :class:`Event`\\ s, a call's :class:`CallDraft`; the hooks
  an engine fills in: ``snapshot``, ``describe``, ``finished``, ``pending``, ``ticking``/``on_tick``), its
  tools (the :func:`tool` decorator with ``check=`` and ``at_tick=``, :class:`TimedTool`, :class:`ToolFailure`
  for a refused call) and their latencies (:func:`latency`, :data:`INSTANT`);
- the env: :class:`TimedWorldEnv` and its :class:`TimedObservation`; :class:`TaskCache` for what a task
  prepares once;
- time: :class:`Timeline` (the verdict's evidence) and its calls (:class:`TimedCall`), :func:`parse_time_of_day`;
- grading: :class:`TimedVerifyContext` (what a timed env hands its verifiers), :class:`TimedWriteSpec` (the
  ``timed_write`` verifier kind, from the plug-in package :mod:`envgym_verifiers.timed_write`), and replay:
  :func:`replay` / :func:`regrade` run a recorded episode again, :func:`recorded_charges` reads its thinking
  charges.
"""

from __future__ import annotations

import typing as _typing

from envgym import _lazy
from envgym.timed.env import TimedObservation, TimedWorldEnv
from envgym.timed.grading import TimedVerifyContext
from envgym.timed.latency import INSTANT, latency
from envgym.timed.prepare import TaskCache
from envgym.timed.replay import recorded_charges, regrade, replay
from envgym.timed.scheduler import Event
from envgym.timed.timeline import TimedCall, Timeline, parse_time_of_day
from envgym.timed.tools import TimedTool, ToolFailure, tool
from envgym.timed.world import CallDraft, TimedWorld

if _typing.TYPE_CHECKING:
    from envgym_verifiers.timed_write import TimedWriteSpec

# Loaded on first use: the timed_write kind (a plug-in package) imports this module.
__getattr__, __dir__ = _lazy.lazy_exports(__name__, {"envgym_verifiers.timed_write": ("TimedWriteSpec",)})

__all__ = [
    "INSTANT",
    "CallDraft",
    "Event",
    "TaskCache",
    "TimedCall",
    "TimedObservation",
    "TimedTool",
    "TimedVerifyContext",
    "TimedWorld",
    "TimedWorldEnv",
    "TimedWriteSpec",
    "Timeline",
    "ToolFailure",
    "latency",
    "parse_time_of_day",
    "recorded_charges",
    "regrade",
    "replay",
    "tool",
]
