"""Simulated users: the other side of a conversation, for tool tasks where the user holds the facts.

In a conversational task (τ²-bench's setting) the agent does not get the whole request up front: the
task's instruction is the user's opening message, and the facts and goal behind it sit in the task's
``metadata["user"]`` (a :class:`UserProfile`, never shown to the agent). Every message the agent writes
without a tool call goes to the user, whose reply is the next observation; the user ends the
conversation (or gives up). :class:`envgym.tools.ConversationToolEnv` is the tool env that runs one.

Which user plays is configuration, not task data: ``scripted`` (:class:`ScriptedUser`, deterministic, for
tests and CI: the default), ``openai:MODEL`` (any OpenAI-compatible endpoint) or ``hf[:PATH]`` (the
embedded SmolLM2 model or another local one), parsed by :func:`parse_user`, built by :func:`build_users`;
``envgym eval --user ...`` sets it for a run and every verdict's evidence names the user that ran.

- :mod:`envgym.user.profile`: :class:`UserProfile`, :class:`Fact`, :data:`STOP`;
- :mod:`envgym.user.simulator`: :class:`SimulatedUser`, :class:`UserReply`, :class:`ScriptedUser`,
  :class:`UserUnavailable`;
- :mod:`envgym.user.llm`: :class:`LLMUser`, :func:`user_prompt`;
- :mod:`envgym.user.config`: the configs, :func:`parse_user`, :class:`UserFactory`, :func:`build_users`.
"""

from __future__ import annotations

from envgym.user.config import (
    HFUserConfig,
    OpenAIUserConfig,
    ScriptedUserConfig,
    UserConfig,
    UserFactory,
    build_users,
    parse_user,
)
from envgym.user.llm import LLMUser, user_prompt
from envgym.user.profile import STOP, Fact, UserProfile, profile_of
from envgym.user.simulator import ScriptedUser, SimulatedUser, UserReply, UserUnavailable

__all__ = [
    "STOP",
    "Fact",
    "HFUserConfig",
    "LLMUser",
    "OpenAIUserConfig",
    "ScriptedUser",
    "ScriptedUserConfig",
    "SimulatedUser",
    "UserConfig",
    "UserFactory",
    "UserProfile",
    "UserReply",
    "UserUnavailable",
    "build_users",
    "parse_user",
    "profile_of",
    "user_prompt",
]
