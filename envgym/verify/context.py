"""What a verifier may look at: the episode's calls, the final answer, and the store, before and after.

Environments build a :class:`VerifyContext` at grading time. ``state`` is the store as the agent left
it; ``expected_state`` is the store the reference solution produces from the same initial state (None when
the env cannot replay one). Both are :class:`StateView`, so verifiers never care whether the store is a
SQLite file, a web app's database or a container's filesystem.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from envgym.types import FrozenModel

Rows = list[dict[str, Any]]
Snapshot = dict[str, Rows]


def drop_fields(snapshot: Snapshot, ignore: tuple[str, ...] | list[str]) -> Snapshot:
    """The snapshot without the ``table.column`` fields in ``ignore``, rows re-sorted."""
    if not ignore:
        return snapshot
    drop: dict[str, set[str]] = {}
    for item in ignore:
        table, _, column = item.partition(".")
        drop.setdefault(table, set()).add(column)
    return {table: sorted(({k: v for k, v in row.items() if k not in drop.get(table, ())} for row in rows), key=repr)
            for table, rows in snapshot.items()}


class CallRecord(FrozenModel):
    """One tool call as the environment executed (or rejected) it."""

    index: int
    name: str
    kind: Literal["read", "write", "unknown"]
    arguments: dict[str, Any] | None
    ok: bool
    error: str | None = None


class StateView(Protocol):
    def snapshot(self) -> Snapshot:
        """Every table as a list of rows, rows sorted, for comparison."""
        ...

    def query(self, sql: str) -> Rows:
        """Run a read-only query."""
        ...


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
    calls: list[CallRecord]
    final_answer: str | None
    state: StateView | None = None
    expected_state: StateView | None = None
    judge: JudgeConfig | None = None
    transcript: list[dict[str, Any]] = field(default_factory=list)
    sandbox: Any = None
    """For the ``tests`` verifier: a :class:`~envgym.verify.tests.TestsTarget` (the episode's sandbox, whose
    diff alone is read, and a source of fresh sandboxes to grade in)."""

    @property
    def writes(self) -> list[CallRecord]:
        """Successful write calls, in order."""
        return [c for c in self.calls if c.kind == "write" and c.ok]
