"""The time model of time-evolving environments: a scheduler on a simulated clock, thinking-cost policies,
seeded tool latencies, and the timeline a timed episode leaves behind.

- :mod:`envgym.timed.scheduler`: events at a time, after a delay or on a condition, with dependencies;
- :mod:`envgym.timed.thinking`: how far the clock moves while the agent decides;
- :mod:`envgym.timed.latency`: bounded, seeded latency distributions for asynchronous tools;
- :mod:`envgym.timed.timeline`: calls, events, notifications and per-step timings, graded by
  :mod:`envgym.verify.timed`.

Environments built on it live in the ``timed`` family (``environments/timed``).
"""

from __future__ import annotations

from envgym.timed.latency import Latency, latency
from envgym.timed.scheduler import Event, EventState, Fired, Scheduler
from envgym.timed.thinking import DEFAULT_THINKING, ThinkingPolicy, ThinkingSample, thinking_policy
from envgym.timed.timeline import (
    Notification,
    StepTiming,
    TimedCall,
    Timeline,
    TimelineEvent,
    format_time_of_day,
    parse_time_of_day,
)

__all__ = [
    "DEFAULT_THINKING",
    "Event",
    "EventState",
    "Fired",
    "Latency",
    "Notification",
    "Scheduler",
    "StepTiming",
    "ThinkingPolicy",
    "ThinkingSample",
    "TimedCall",
    "Timeline",
    "TimelineEvent",
    "format_time_of_day",
    "latency",
    "parse_time_of_day",
    "thinking_policy",
]
