"""Task generators of the web family. Each module's ``build()`` returns its suite's tasks; the output is
committed as ``tasks/<suite>/tasks.jsonl`` and a test checks the two are equal. Regenerate with
``python -m envgym_web.authoring.<module>``."""

from __future__ import annotations

from typing import Any

from envgym.types import Action
from envgym.verify.spec import AnswerSpec, Criterion, RubricSpec, SqlCheck


def act(name: str, /, **arguments: Any) -> Action:
    return Action.call(name, **arguments)


def split_of(index: int) -> str:
    """Seven in ten tasks train, the rest test, interleaved so both splits cover every task kind."""
    return "test" if index % 10 in (3, 7, 9) else "train"


def answer_rubric(expected: str | float, kind: str, page_sql: str, page_what: str) -> RubricSpec:
    """The answer and the page the agent ended on (both must hold)."""
    return RubricSpec(criteria=(
        Criterion(name="answer", weight=2.0, check=AnswerSpec(kind=kind, expected=expected)),
        Criterion(name=page_what, check=SqlCheck(query=page_sql, expected=1)),
    ))
