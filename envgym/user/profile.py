"""What a simulated user knows and wants: the data half of a conversational task.

A task whose agent must talk to a user carries a :class:`UserProfile` in ``metadata["user"]`` (grading-side
data: agents never see a task's metadata). The task's ``instruction`` is the user's opening message; the
profile holds the rest: the goal, the persona, and the facts the agent has to ask for. Each
:class:`Fact` names what it is (for an LLM user's prompt), the text the user says when asked, and the
words that make the scripted user say it (lower-case substrings of the agent's message)::

    {"goal": "Switch to the cheapest plan with at least 20 GB.",
     "facts": [{"name": "phone number", "says": "It's 415-555-0101.", "keys": ["phone", "number"]},
               {"name": "PIN", "says": "My PIN is 4821.", "keys": ["pin"]}],
     "patience": 3, "max_turns": 12}
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, ValidationError, field_validator

from envgym.errors import SpecError
from envgym.types import FrozenModel

__all__ = ["STOP", "Fact", "UserProfile", "profile_of"]

STOP = "###STOP###"
"""The marker an LLM user ends its message with to end the conversation (τ²-bench's convention)."""


class Fact(FrozenModel):
    """One thing the user knows and tells only when asked."""

    name: str = Field(min_length=1)
    """What the fact is ("phone number"), for an LLM user's prompt."""
    says: str = Field(min_length=1)
    """The user's words when asked for it."""
    keys: tuple[str, ...] = Field(min_length=1)
    """Lower-case substrings of an agent message that make the scripted user say it."""

    @field_validator("keys")
    @classmethod
    def _lower(cls, keys: tuple[str, ...]) -> tuple[str, ...]:
        if any(not k.strip() or k != k.lower() for k in keys):
            raise ValueError("keys must be non-empty lower-case strings")
        return keys


class UserProfile(FrozenModel):
    """The user of one conversational task (see the module docstring)."""

    goal: str = Field(min_length=1)
    """What the user wants done, in the user's words (an LLM user's prompt; the scripted user needs none)."""
    persona: str = ""
    facts: tuple[Fact, ...] = ()
    patience: int = Field(default=3, ge=1)
    """Turns in a row the user tolerates without being asked anything it knows or told anything, then leaves."""
    max_turns: int = Field(default=12, ge=1)
    """Agent messages the user answers at most; the next one ends the conversation."""
    closing: str = "Thanks, that's everything I needed."
    """What the scripted user says when it ends the conversation satisfied."""


def profile_of(metadata: dict[str, Any], *, task_id: str = "") -> UserProfile:
    """The :class:`UserProfile` in a task's ``metadata["user"]`` (SpecError naming the field if absent or bad)."""
    raw = metadata.get("user")
    if raw is None:
        raise SpecError(f"task {task_id!r} needs a simulated user: metadata.user is missing", field="metadata.user")
    try:
        return UserProfile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in ("metadata", "user", *first["loc"]))
        raise SpecError(f"task {task_id!r}: bad user profile: {first['msg']}", field=where) from None
