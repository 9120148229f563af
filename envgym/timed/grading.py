"""What a timed env hands its verifiers: :class:`TimedVerifyContext` (the verify context with the episode's
timeline), and :func:`goal_paths`, the world paths a task's verifiers watch during the episode."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from envgym.task import TaskSpec
from envgym.timed.timeline import Timeline
from envgym.verify import VerifyContext
from envgym.verify.spec import AllOfSpec, AnyOfSpec

__all__ = ["TimedVerifyContext", "goal_paths"]


@dataclass
class TimedVerifyContext(VerifyContext):
    """A verify context with the episode's timeline: what a timed env hands every verifier kind (the
    ``timed_write`` kind, :mod:`envgym_verifiers.timed_write`, grades it)."""

    timeline: Timeline | None = None


def goal_paths(task: TaskSpec) -> list[str]:
    """The world paths the task's verifiers watch (watched during the episode, logged in
    ``Timeline.state_changes``): each spec that has ``watched_paths`` names them (the ``timed_write`` kind: its
    ``final_state`` checks)."""
    found: list[str] = []

    def walk(specs: Any) -> Iterator[Any]:
        for spec in specs:
            if isinstance(spec, AllOfSpec | AnyOfSpec):
                yield from walk(spec.verifiers)
            else:
                yield spec

    for spec in walk(task.verifiers):
        found += [path for path in getattr(spec, "watched_paths", ()) if path not in found]
    return found
