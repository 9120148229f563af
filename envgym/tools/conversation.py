"""The conversational tool env: function calling over a real store, with a simulated user to talk to.

:class:`ConversationToolEnv` is :class:`~envgym.tools.ToolEnv` where a message without tool calls does not
end the episode: it goes to the task's simulated user (:mod:`envgym.user`), whose reply is the next
observation's ``text``. The episode ends when the user ends the conversation (its goal met, given up, or
out of turns) or at the step limit. An action with tool calls runs them exactly as the tool env does
(any text beside them is the agent's own note, not a message to the user).

The task's ``instruction`` is the user's opening message; ``metadata["user"]`` is its
:class:`~envgym.user.UserProfile` (checked at reset: a task without one is a :class:`~envgym.errors.SpecError`).
Which user plays is the ``user`` keyword (a :data:`~envgym.user.UserConfig`, its dict, or a name such as
``"openai:MODEL"``; default the scripted user), which ``envgym eval --user`` passes through ``make``.

Grading reads the store like the tool env, plus what was said: ``final_answer`` is every message the
agent addressed to the user, in order, one per line (so an ``answer`` verifier checks that the agent
conveyed what it had to), and ``transcript`` is the conversation. Every verdict's evidence names the user
that ran (``evidence["user"]``) and its turns and usage. ``info["policy"]`` is the domain's policy plus a
paragraph saying how the conversation works.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from envgym.env import StepResult
from envgym.tools.domain import Domain
from envgym.tools.env import ToolEnv
from envgym.types import Action, Observation, Verdict
from envgym.user import UserConfig, build_users, profile_of
from envgym.user.simulator import SimulatedUser
from envgym.verify.context import VerifyContext

if TYPE_CHECKING:
    from envgym.task import TaskSpec

__all__ = ["CONVERSATION_RULES", "ConversationToolEnv"]

CONVERSATION_RULES = (
    "# Conversation\nYou are talking with a user. A message without tool calls is sent to the user, whose "
    "reply comes back to you; ask the user for anything you need that the tools cannot tell you. Tell the "
    "user the outcome of their request. The user ends the conversation.")


class ConversationToolEnv(ToolEnv):
    """A tool env whose agent talks to a simulated user (see the module docstring)."""

    simulated_user: ClassVar[bool] = True
    """Read by ``envgym eval`` before building: this env takes the run's ``user`` keyword."""

    def __init__(self, domain: Domain | str, *, user: UserConfig | dict[str, Any] | str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(domain, **kwargs)
        self.users = build_users(user)
        self._user: SimulatedUser | None = None
        self._said: list[str] = []
        self._transcript: list[dict[str, Any]] = []

    async def reset(self, *, task: TaskSpec | str | None = None, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        chosen = self.choose_task(task, seed, options)
        profile = profile_of(chosen.metadata, task_id=chosen.id)
        obs, info = await super().reset(task=chosen, seed=None, options=options)
        self._user = self.users.start(profile, chosen.instruction)
        self._said = []
        self._transcript = [{"role": "user", "content": chosen.instruction}]
        info["policy"] = f"{info['policy'].rstrip()}\n\n{CONVERSATION_RULES}"
        return obs, info

    async def step(self, action: Action) -> StepResult:
        if action.tool_calls or action.text is None or self._user is None:  # calls, or the tool env's errors
            return await super().step(action)
        message = action.text or ""
        self._said.append(message)
        self._transcript.append({"role": "agent", "content": message})
        reply = await self._user.respond(message)
        self._transcript.append({"role": "user", "content": reply.text, "done": reply.done})
        if reply.done:
            self._final_answer = "\n".join(self._said)
        return StepResult(Observation(text=reply.text), 0.0, reply.done, False, {})

    async def verify_context(self) -> VerifyContext:
        context = await super().verify_context()
        context.final_answer = "\n".join(self._said)
        context.transcript = list(self._transcript)
        return context

    async def graded(self, verdict: Verdict) -> dict[str, Any]:
        if self._user is None:
            return {}
        return {"user": {**self.users.describe(), "turns": self._user.turns,
                         "usage": self._user.usage.model_dump(mode="json")}}

    async def close(self) -> None:
        try:
            await super().close()
        finally:
            await self.users.aclose()
