"""What a verifier may look at: the episode's calls, the final answer, and the store, before and after.

Environments build a :class:`VerifyContext` at grading time. ``state`` is the store as the agent left
it; ``expected_state`` is the store the reference solution produces from the same initial state (None when
the env cannot replay one). Both are :class:`StateView`, so verifiers never care whether the store is a
SQLite file, a web app's database or a container's filesystem; what a snapshot holds, how it is compared
and how ``ignore_fields`` are checked is :mod:`envgym.verify.state`'s contract.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from envgym.types import FrozenModel
from envgym.verify.state import Rows, Snapshot, SqlView, StateView, drop_fields

__all__ = ["CallRecord", "JudgeConfig", "Rows", "Snapshot", "SqlView", "StateView", "VerifyContext", "drop_fields"]


class CallRecord(FrozenModel):
    """One tool call as the environment executed (or rejected) it."""

    index: int
    name: str
    kind: Literal["read", "write", "unknown"]
    arguments: dict[str, Any] | None
    ok: bool
    error: str | None = None


@dataclass(frozen=True)
class JudgeConfig:
    """Where an LLM-judge criterion sends its question (any OpenAI-compatible endpoint)."""

    base_url: str
    model: str
    api_key: str | None = None
    timeout_s: float = 60.0
    retries: int = 2


@dataclass
class VerifyContext:
    """What the env reports for grading (:meth:`envgym.env.Env.verify_context`); verifiers read nothing else.

    ``initial_state`` is the store before the episode (None where the env cannot show one), so a
    benchmark's own ``check(pre_state, post_state)`` can be a verifier; ``task`` is the task being graded
    (the kernel fills it in when the env leaves it out).
    """

    calls: list[CallRecord]
    final_answer: str | None
    state: StateView | None = None
    expected_state: StateView | None = None
    judge: JudgeConfig | None = None
    transcript: list[dict[str, Any]] = field(default_factory=list)
    sandbox: Any = None
    """For the ``tests`` verifier: a :class:`~envgym.plugin.tests.TestsTarget` (the episode's sandbox, whose
    diff alone is read, and a source of fresh sandboxes to grade in)."""
    initial_state: StateView | None = None
    task: Any = None
    """The :class:`~envgym.task.TaskSpec` being graded."""

    @property
    def writes(self) -> list[CallRecord]:
        """Successful write calls, in order."""
        return [c for c in self.calls if c.kind == "write" and c.ok]
