"""The LLM user: a chat model plays the user, from the task's profile (τ²-bench's user simulator).

The model gets a system prompt written from the :class:`~envgym.user.UserProfile` (persona, goal, the facts
it may give only when asked, and the rule to end its message with ``###STOP###`` once the goal is met or
cannot be) and the conversation from its own side: its opening message and replies as ``assistant``
turns, the agent's messages as ``user`` turns. A reply holding the marker ends the conversation (the
marker is cut from the text the agent sees). Two backends, both the agents' own clients:

- ``openai``: any OpenAI-compatible chat-completions endpoint (:class:`~envgym.agents.openai.OpenAIAgentFactory`),
- ``hf``: a local model, by default the embedded SmolLM2-135M-Instruct (:class:`~envgym.agents.hf.HFAgentFactory`).

A backend that fails (endpoint down, model missing) raises :class:`~envgym.user.UserUnavailable`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from envgym.errors import PolicyError
from envgym.types import Usage
from envgym.user.profile import STOP, UserProfile
from envgym.user.simulator import SimulatedUser, UserReply, UserUnavailable

__all__ = ["LLMUser", "user_prompt"]

Complete = Callable[[list[dict[str, Any]]], Awaitable[tuple[str, Usage]]]
"""A backend: the chat so far -> the model's text and the call's usage."""


def user_prompt(profile: UserProfile) -> str:
    """The system prompt of an LLM user playing ``profile``."""
    facts = "\n".join(f"- {fact.name}: {fact.says}" for fact in profile.facts) or "- (none)"
    persona = f"Who you are: {profile.persona}\n" if profile.persona else ""
    return (
        "You are a customer talking to a customer-service agent, in a simulation. Stay in role: you are the "
        "customer, never the agent.\n"
        f"{persona}Your goal: {profile.goal}\n"
        f"What you know (give each piece only when the agent asks for it, in your own words):\n{facts}\n"
        "Rules: write one short message at a time, as a customer would. Do not invent facts you were not "
        "given; if asked something you do not know, say so. Do not make up your goal's solution yourself. "
        f"When your goal is done, or clearly cannot be done, end your message with {STOP}.")


class LLMUser(SimulatedUser):
    """A user whose replies a chat model writes (see the module docstring)."""

    kind = "llm"

    def __init__(self, profile: UserProfile, opening: str, complete: Complete) -> None:
        super().__init__(profile, opening)
        self._complete = complete
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": user_prompt(profile)},
                                               {"role": "assistant", "content": opening}]

    async def _respond(self, message: str) -> UserReply:
        self.messages.append({"role": "user", "content": message or "(the agent said nothing)"})
        try:
            text, usage = await self._complete(self.messages)
        except PolicyError as exc:
            raise UserUnavailable(f"the simulated user's model failed: {exc}") from exc
        self.usage = self.usage + usage
        self.messages.append({"role": "assistant", "content": text})
        done = STOP in text
        said = text.replace(STOP, "").strip()
        return UserReply(said or ("Goodbye." if done else "..."), done)
