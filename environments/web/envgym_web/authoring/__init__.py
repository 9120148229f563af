"""Task generators of the web family. Each module's ``build()`` returns its suite's tasks; the output is
committed as ``tasks/<suite>/tasks.jsonl`` and a test checks the two are equal. Regenerate with
``python -m envgym_web.authoring.<module>``."""

from __future__ import annotations

import re
from typing import Any

from envgym.plugin import Action, AnswerSpec, Criterion, RubricSpec, SqlCheck, answer_pattern, number_pattern

__all__ = [
    "Action",
    "AnswerSpec",
    "Criterion",
    "RubricSpec",
    "SqlCheck",
    "act",
    "answer_pattern",
    "answer_rubric",
    "number_pattern",
    "split_of",
]


def act(name: str, /, **arguments: Any) -> Action:
    return Action.call(name, **arguments)


def split_of(index: int) -> str:
    """Seven in ten tasks train, the rest test, interleaved so both splits cover every task kind."""
    return "test" if index % 10 in (3, 7, 9) else "train"


def answer_rubric(expected: str | float, kind: str, page_sql: str, page_what: str,
                  reject: tuple[str, ...] = ()) -> RubricSpec:
    """The answer and the page the agent ended on (both must hold).

    The answer is a few sentences naming ``expected`` (a name, or a number among at most three) and none of
    the wrong candidates ``reject``: a message listing every name or number on the page, or quoting the
    page back, earns nothing.
    """
    if kind == "numeric":
        pattern = answer_pattern(number_pattern(float(expected)), max_numbers=3)
    else:
        pattern = answer_pattern(re.escape(str(expected)), reject=tuple(re.escape(r) for r in reject))
    return RubricSpec(criteria=(
        Criterion(name="answer", weight=2.0, check=AnswerSpec(kind="regex", expected=pattern)),
        Criterion(name=page_what, check=SqlCheck(query=page_sql, expected=1)),
    ))
