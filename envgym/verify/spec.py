"""Verifier specifications: the grading half of a task file, as data.

A task lists verifier specs; each is a discriminated union member selected by ``type``. Behaviour lives in
the sibling modules (``write_action.py``, ``answer.py``, ``rubric.py``, ``combinators.py``). Argument values
in expected writes and ``called`` checks may be literals or matchers::

    {"$regex": "^ord_"}  {"$contains": "refund"}  {"$approx": 12.5, "$tol": 0.01}  {"$in": [1, 2]}  {"$any": true}

A regex that does not compile (an ``answer`` of kind ``regex``, a ``$regex`` matcher) or an unknown
matcher fails validation, so a task file holding one is refused at load, naming the field.

Verifier kinds are open: besides the generic built-in ones (:data:`BUILTIN_KINDS`) a task may name any kind
a plug-in registered with :func:`envgym.register_verifier` (its spec model validates the entry, so a bad
field is named as for a built-in; an unknown ``type`` names the known ones). The bundled ``tests`` and
``timed_write`` kinds live in the package ``envgym_verifiers`` (``verifiers/``), registered through its entry
point exactly as a third party's.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    Field,
    PlainSerializer,
    PlainValidator,
    SerializationInfo,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from envgym import registry
from envgym._deprecation import moved_attribute
from envgym.types import FrozenModel
from envgym.verify.matching import Matchable, MatchArgs


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
            try:  # compiled as grading compiles it by default (not case_sensitive, a later field): ``re``'s
                # cache then hands grading this compilation (these patterns take milliseconds to parse)
                re.compile(str(value), re.IGNORECASE)
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
    is a file under ``verifiers/envgym_verifiers/judge/`` (package ``envgym_verifiers``).
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


def _validate_verifier(value: Any) -> BaseModel:
    """One verifier entry: a built-in kind or a registered one, chosen by ``type``."""
    if isinstance(value, BaseModel):
        kind = getattr(value, "type", None)
        if isinstance(kind, str) and _model_for(kind) is type(value):
            return value
        value = value.model_dump()
    if not isinstance(value, dict):
        raise PydanticCustomError("verifier_type", "a verifier must be an object with a 'type'")
    kind = value.get("type")
    if not isinstance(kind, str):
        raise PydanticCustomError("verifier_type", "a verifier needs a string 'type'")
    model = _model_for(kind)
    if model is None:
        message = (f"unknown verifier type {kind!r}; known: {', '.join(registry.list_verifier_kinds())} "
                   "(a plug-in adds one with envgym.register_verifier)")
        raise PydanticCustomError("verifier_type", message.replace("{", "{{").replace("}", "}}"))
    try:
        return model.model_validate(value)
    except ValidationError as exc:  # keep the kind in the location, as a discriminated union does
        errors = [InitErrorDetails(type=e["type"], loc=(kind, *e["loc"]), input=e["input"], ctx=e.get("ctx", {}))
                  for e in exc.errors()]
        raise ValidationError.from_exception_data("VerifierSpec", errors) from None


def _model_for(kind: str) -> type[BaseModel] | None:
    builtin = BUILTIN_KINDS.get(kind)
    if builtin is not None:
        return builtin
    registered = registry.verifier_kind(kind)
    return registered.model if registered is not None else None


def _dump_verifier(value: BaseModel, info: SerializationInfo) -> Any:
    return value.model_dump(mode=info.mode)


VerifierSpec = Annotated[
    Any,
    PlainValidator(_validate_verifier),
    PlainSerializer(_dump_verifier),
    WithJsonSchema({"type": "object", "required": ["type"], "properties": {"type": {"type": "string"}},
                    "description": "a built-in verifier kind or one a plug-in registered"}),
]
"""A verifier entry of a task (validated by its ``type``: built-in or registered)."""


class AllOfSpec(FrozenModel):
    """Passes iff every child passes; score is the product of the children's scores."""

    type: Literal["all_of"] = "all_of"
    verifiers: tuple[VerifierSpec, ...]


class AnyOfSpec(FrozenModel):
    """Passes iff some child passes; score is the best child's."""

    type: Literal["any_of"] = "any_of"
    verifiers: tuple[VerifierSpec, ...]


BUILTIN_KINDS: dict[str, type[BaseModel]] = {
    "write_action": WriteActionSpec, "answer": AnswerSpec, "rubric": RubricSpec, "all_of": AllOfSpec,
    "any_of": AnyOfSpec,
}
"""The verifier kinds the kernel grades itself: the generic ones. Every other kind (``tests``, ``timed_write``,
``desktop``, ...) is a plug-in's, registered through an entry point."""


_MOVED_KINDS = {"TestsSpec": "envgym_verifiers.tests", "TimedWriteSpec": "envgym_verifiers.timed_write"}


def __getattr__(name: str) -> Any:
    if name in _MOVED_KINDS:  # the kinds moved to plug-in packages in 0.2 (imported by name: no kernel edge up)
        return moved_attribute(__name__, _MOVED_KINDS[name], name, since="0.2", removal="0.3")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
