"""The simulated-user contract, and the scripted user that tests and CI run.

A :class:`SimulatedUser` is the other side of a conversation for one episode. The env opens it with the
task's :class:`~envgym.user.UserProfile` and the user's opening message, then hands it every message the
agent addresses to the user::

    user = factory.start(profile, opening=task.instruction)
    reply = await user.respond("Could you give me your phone number and PIN?")
    reply.text, reply.done            # what the user says; whether the user ended the conversation

A user that cannot answer (its model endpoint is down) raises :class:`UserUnavailable`, an infra failure
(the agent did nothing wrong), so the episode is retried rather than counted against the agent.

:class:`ScriptedUser` is deterministic and needs no model. For each agent message (lower-cased) it:

1. says every fact one of whose ``keys`` the message contains (and the conversation goes on);
2. otherwise, if the message is a statement (non-empty, no ``?``), takes it as the agent's conclusion, says
   the profile's ``closing`` and ends the conversation;
3. otherwise (an empty message, or a question about nothing it knows) says it does not know; after
   ``patience`` such turns in a row it gives up and ends the conversation.

After ``max_turns`` agent messages it ends the conversation whatever is said. That is enough for an oracle
to be written against it and for an agent that never asks to fail; an LLM user (:mod:`envgym.user.llm`)
is the realistic counterpart.
"""

from __future__ import annotations

import abc
from typing import ClassVar, NamedTuple

from envgym.errors import EnvError
from envgym.types import Usage
from envgym.user.profile import UserProfile

__all__ = ["ScriptedUser", "SimulatedUser", "UserReply", "UserUnavailable"]


class UserUnavailable(EnvError, ConnectionError):
    """The simulated user could not answer (its model endpoint failed): the infrastructure's failure."""

    blame = "infra"


class UserReply(NamedTuple):
    text: str
    done: bool
    """The user ended the conversation with this message."""


class SimulatedUser(abc.ABC):
    """One episode's user (see the module docstring)."""

    kind: ClassVar[str] = "user"

    def __init__(self, profile: UserProfile, opening: str) -> None:
        self.profile = profile
        self.opening = opening
        self.turns = 0
        """Agent messages answered so far."""
        self.usage = Usage()
        """The user's own model usage (never the agent's)."""

    async def respond(self, message: str) -> UserReply:
        """The user's answer to the agent's ``message``; past ``max_turns`` the conversation ends."""
        self.turns += 1
        if self.turns > self.profile.max_turns:
            return UserReply("I have to go now. Goodbye.", True)
        return await self._respond(message)

    @abc.abstractmethod
    async def _respond(self, message: str) -> UserReply: ...


class ScriptedUser(SimulatedUser):
    """The deterministic user of tests and CI (rules in the module docstring)."""

    kind = "scripted"

    def __init__(self, profile: UserProfile, opening: str) -> None:
        super().__init__(profile, opening)
        self._misses = 0

    async def _respond(self, message: str) -> UserReply:
        text = message.lower()
        told = [fact.says for fact in self.profile.facts if any(key in text for key in fact.keys)]
        if told:
            self._misses = 0
            return UserReply(" ".join(told), False)
        if text.strip() and "?" not in text:
            return UserReply(self.profile.closing, True)
        self._misses += 1
        if self._misses >= self.profile.patience:
            return UserReply("This isn't getting anywhere. Goodbye.", True)
        return UserReply("Sorry, I don't know what you need from me. " + self.opening, False)
