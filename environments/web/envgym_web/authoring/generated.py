"""What the seeded web generators (``web-shop-gen``, ``web-forum-gen``) share.

:class:`Replay` is a generated world with the reference writes applied one at a time through the app's own
write functions (those the server runs when the agent submits a form): a write the app refuses is a bug in the
generator (:class:`RuntimeError`), a write's result (the new order's id) and every answer the task asks for
are read from the replayed database, never computed beside it. :func:`asked` grades a question: the answer
and the page the agent ended on, as two verifiers so the score stays 0 or 1 (a rubric's score is its
criteria's weighted mean, and a tampering agent that lands on the right page must still score 0).
:func:`families_for` picks a task's template families, :func:`numbered` phrases several requests.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Collection
from typing import Any

from envgym.plugin import AnswerSpec, Criterion, RubricSpec, SqlCheck
from envgym_web.apps.base import App, AppFailure, create_db


class Replay:
    """A generated database (``db``: table -> rows) and the reference writes made on it so far."""

    def __init__(self, generator: str, app: App, db: dict[str, Any]) -> None:
        self.generator, self.app = generator, app
        self.conn = create_db(app, {"db": db}, None)
        self.writes: list[dict[str, Any]] = []

    def write(self, tool: str, **args: Any) -> Any:
        """Apply one write as the app does, recording it; returns what the app's write returns."""
        self.conn.execute("BEGIN")
        try:
            result = self.app.writes[tool](self.conn, dict(args))
        except AppFailure as exc:
            self.conn.execute("ROLLBACK")
            raise RuntimeError(f"{self.generator}: the reference write {tool}({args}) was refused: {exc}") from exc
        self.conn.execute("COMMIT")
        self.writes.append({"tool": tool, "args": args})
        return result

    def value(self, sql: str, *params: Any) -> Any:
        """The first column of the first row of ``sql`` on the database as it stands."""
        row: sqlite3.Row | None = self.conn.execute(sql, params).fetchone()
        if row is None:
            raise RuntimeError(f"{self.generator}: no row for {sql!r} {params!r}")
        return row[0]

    def close(self) -> None:
        self.conn.close()


def asked(pattern: str, path: str, what: str) -> tuple[RubricSpec, RubricSpec]:
    """A question's verifiers: the final message matches ``pattern`` (an ``answer_pattern``) and the agent
    ended on page ``path`` (``what`` names that criterion)."""
    return (RubricSpec(criteria=(Criterion(name="answer", check=AnswerSpec(kind="regex", expected=pattern)),)),
            RubricSpec(criteria=(Criterion(name=what, check=SqlCheck(
                query=f"SELECT COUNT(*) FROM page WHERE path = '{path}'", expected=1)),)))


def numbered(asks: list[str]) -> str:
    """One request as is; several as a numbered list to do in order."""
    if len(asks) == 1:
        return asks[0]
    return "Please do these in order: " + " ".join(f"{i}) {a}" for i, a in enumerate(asks, start=1))


def families_for(rng: random.Random, templates: tuple[str, ...], questions: Collection[str], level: int) -> list[str]:
    """``level`` distinct families of ``templates``: writes in a seeded order, then at most one question (one
    always when the split has fewer write families than the level asks for)."""
    writes = [t for t in templates if t not in questions]
    asks = [t for t in templates if t in questions]
    n_questions = 1 if level > len(writes) or rng.random() < 0.35 else 0
    return rng.sample(writes, level - n_questions) + rng.sample(asks, n_questions)
