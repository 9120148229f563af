"""Verifier specifications: the grading half of a task file, as data.

A task lists verifier specs; each is a discriminated union member selected by ``type``. Behaviour lives in
the sibling modules (``write_action.py``, ``answer.py``, ``rubric.py``, ``combinators.py``). Argument values
in expected writes and ``called`` checks may be literals or matchers::

    {"$regex": "^ord_"}  {"$contains": "refund"}  {"$approx": 12.5, "$tol": 0.01}  {"$in": [1, 2]}  {"$any": true}

A regex that does not compile (an ``answer`` of kind ``regex``, a ``$regex`` matcher) or an unknown
matcher fails validation, so a task file holding one is refused at load, naming the field.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator

from envgym.types import FrozenModel
from envgym.verify.matching import Matchable, MatchArgs
from envgym.verify.tests import TestsSpec
from envgym.verify.timed import TimedWriteSpec


class ExpectedWrite(FrozenModel):
    """A write the agent must make: the tool and the arguments that must match (others are free)."""

    tool: str
    args: MatchArgs = Field(default_factory=dict)


class WriteActionSpec(FrozenModel):
    """Writes expected, forbidden and collateral, and the final state compared with the reference's."""

    type: Literal["write_action"] = "write_action"
    expected: tuple[ExpectedWrite, ...] = ()
    ordered: bool = False
    """Expected writes must happen in the listed order (other writes may interleave)."""
    forbidden: tuple[str, ...] = ()
    """Write tools that must never be called, whatever the arguments."""
    allow_collateral: bool = False
    """Whether writes that match no expected write are tolerated."""
    compare_final_state: bool = True
    """Compare the final store with the one the reference solution produces."""
    ignore_fields: tuple[str, ...] = ()
    """``table.column`` entries left out of the final-state comparison."""


class AnswerSpec(FrozenModel):
    """The agent's final message must contain the expected answer."""

    type: Literal["answer"] = "answer"
    kind: Literal["exact", "numeric", "regex", "contains"] = "contains"
    expected: str | float | int
    tolerance: float = 1e-6
    case_sensitive: bool = False

    @field_validator("expected")
    @classmethod
    def _regex_compiles(cls, value: str | float | int, info: ValidationInfo) -> str | float | int:
        if info.data.get("kind") == "regex":
            try:
                re.compile(str(value))
            except re.error as exc:
                raise ValueError(f"invalid regex {str(value)!r}: {exc}") from None
        return value


class SqlCheck(FrozenModel):
    """A query on the final store whose first column of the first row must equal ``expected``."""

    type: Literal["sql"] = "sql"
    query: str
    expected: Matchable


class CalledCheck(FrozenModel):
    """The agent called ``tool`` (read or write) with matching arguments, at least ``min_times``."""

    type: Literal["called"] = "called"
    tool: str
    args: MatchArgs = Field(default_factory=dict)
    min_times: int = 1


class LLMJudgeCheck(FrozenModel):
    """An LLM judge answers ``question`` about the episode; it must say PASS.

    The endpoint comes from the run's judge configuration unless the task names one. The prompt template
    is a file under ``verifiers/judge/`` (installed as ``envgym_verifiers``).
    """

    type: Literal["llm_judge"] = "llm_judge"
    question: str
    template: str = "judge/default.txt"
    model: str | None = None
    base_url: str | None = None


CheckSpec = Annotated[AnswerSpec | SqlCheck | CalledCheck | LLMJudgeCheck, Field(discriminator="type")]


class Criterion(FrozenModel):
    name: str
    weight: float = Field(default=1.0, gt=0)
    check: CheckSpec


class RubricSpec(FrozenModel):
    """Weighted criteria; score = weighted mean, pass iff score >= ``pass_threshold``."""

    type: Literal["rubric"] = "rubric"
    criteria: tuple[Criterion, ...]
    pass_threshold: float = Field(default=1.0, ge=0, le=1)


class AllOfSpec(FrozenModel):
    """Passes iff every child passes; score is the product of the children's scores."""

    type: Literal["all_of"] = "all_of"
    verifiers: tuple[VerifierSpec, ...]


class AnyOfSpec(FrozenModel):
    """Passes iff some child passes; score is the best child's."""

    type: Literal["any_of"] = "any_of"
    verifiers: tuple[VerifierSpec, ...]


VerifierSpec = Annotated[
    WriteActionSpec | AnswerSpec | RubricSpec | AllOfSpec | AnyOfSpec | TimedWriteSpec | TestsSpec,
    Field(discriminator="type"),
]
AllOfSpec.model_rebuild()
AnyOfSpec.model_rebuild()
