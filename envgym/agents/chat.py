"""The conversation a chat-model agent keeps, in OpenAI's chat format.

Both model-backed agents (``openai``, ``hf``) see an episode the same way::

    chat = Transcript(system_prompt(info["policy"]), tools=info["tools"])
    chat.observe(observation)        # user text, one ``tool`` message per tool result, rejected actions
    chat.attach(parts)               # image content parts of that observation (vision models)
    chat.record(action)              # the assistant turn, with its ``tool_calls``
    chat.messages                    # what goes to the model next

The system message is the environment's policy plus how to use tools. Every tool call gets exactly one
``tool`` message (chat APIs reject a call left unanswered); an error the env attached to no tool result
(``last_action_error`` of an empty or malformed action) is shown to the model as a user message, so a bad
action is something the model reads and can repair. Images of an observation go into its user message as
content parts (a chat API takes images in user messages only), or into a user message of their own.
"""

from __future__ import annotations

from typing import Any

from envgym.types import Action, Observation

TOOL_USE = (
    "Use the tools to carry out the user's request, following the policy above. Call tools as often as "
    "you need; each result comes back to you. When you are done, reply with a final message to the user "
    "and no tool call: that message ends the conversation."
)


def system_prompt(policy: str, *extra: str) -> str:
    """The policy, the tool-use instructions, then any agent-specific sections."""
    parts = [f"# Policy\n{policy.strip()}" if policy.strip() else "", TOOL_USE, *extra]
    return "\n\n".join(p for p in parts if p)


class Transcript:
    """The messages of one episode, as an OpenAI chat-completions request wants them."""

    def __init__(self, system: str, tools: list[dict[str, Any]] | None = None) -> None:
        self.tools: list[dict[str, Any]] = list(tools or [])
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
        self._unanswered: list[str] = []
        self._observed = 1

    def observe(self, observation: Observation) -> None:
        self._observed = len(self.messages)
        answered = set()
        for result in observation.tool_results:
            content = f"Error: {result.error}" if result.error else result.content
            self.messages.append({"role": "tool", "tool_call_id": result.call_id, "content": content})
            answered.add(result.call_id)
        for call_id in self._unanswered:
            if call_id not in answered:
                self.messages.append({"role": "tool", "tool_call_id": call_id, "content": "Error: no result"})
        self._unanswered = []
        if observation.text:
            self.messages.append({"role": "user", "content": observation.text})
        error = observation.last_action_error
        if error and not any(r.error for r in observation.tool_results):
            self.messages.append({"role": "user", "content": f"Your last action was rejected: {error}"})

    def attach(self, parts: list[dict[str, Any]], label: str = "Screenshot:") -> None:
        """Add content parts (images) to the user message the last observation produced, else to a new
        user message that starts with ``label``."""
        if not parts:
            return
        for message in reversed(self.messages[self._observed:]):
            if message["role"] == "user":
                content = message["content"]
                message["content"] = [*([{"type": "text", "text": content}] if isinstance(content, str) and content
                                        else content if isinstance(content, list) else []), *parts]
                return
        self.messages.append({"role": "user", "content": [{"type": "text", "text": label}, *parts]})

    def record(self, action: Action) -> None:
        # A null content is only valid beside tool calls; an empty action still needs a message.
        content = action.text if action.text is not None or action.tool_calls else ""
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if action.tool_calls:
            message["tool_calls"] = [call.to_openai() for call in action.tool_calls]
            self._unanswered = [call.id for call in action.tool_calls]
        self.messages.append(message)
