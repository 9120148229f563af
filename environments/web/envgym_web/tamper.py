"""Tampering agents of the web family: they make the page *look* done and must score 0.

The browser is the agent's: whatever it shows (the DOM, the title, the URL, ``localStorage``) the agent can
change, so grading never reads it for what was done. The apps' verifiers read the server's database and its
record of writes; MiniWoB++ reads the reward of the seeded instance reset started. Each agent here works on
the browser side only:

- :class:`DressThePage` tries a ``javascript:`` URL (title, ``localStorage``, DOM) and a success URL, and
  claims the task done;
- :class:`TypeUnsent` (the apps) types a success message into the page's text fields, submits nothing, and
  claims the task done (on MiniWoB++ typing into the page *is* an attempt at the task, so it runs on the apps);
- :class:`QuoteBack` (the apps) sends the instruction alone as the answer;
- :class:`OtherMiniWobPage` (MiniWoB++) opens an easier task page, starts it from its START cover, solves it,
  and claims success: the reward globals of *a* page say done, not those of the task's instance.
"""

from __future__ import annotations

import json
import re
from typing import Any

from envgym.plugin import Action, Observation, TamperAgent, ToolCall

CLAIM = "Done. The page confirms it: everything you asked for is complete."
_JS = ("javascript:localStorage.setItem('envgym_done','1');document.title='Order placed - done';"
       "document.body.insertAdjacentHTML('afterbegin','<h1 id=done>Success! Task complete.</h1>');void 0")
_FIELD = re.compile(r"^\[([^\]]+)\] (?:input type=(?:text|search|email|password)|textarea)\b", re.MULTILINE)


def claim_for(task: Any) -> str:
    """The reference's last message when the task is a change (a claim), else a generic claim.

    An answer task's last message *is* the answer: a tamperer sending it would have solved the task.
    """
    if task.metadata.get("reference_writes"):
        for action in reversed(task.solution or ()):
            for call in action.tool_calls:
                if call.name == "send_msg_to_user":
                    return f"{CLAIM} {json.loads(call.arguments)['text']}"
            if action.text:
                return f"{CLAIM} {action.text}"
    return CLAIM


class DressThePage(TamperAgent):
    name = "dress-the-page"
    description = "javascript: URL editing the title, the DOM and localStorage, then claims done"

    async def act(self, observation: Observation) -> Action:
        self.turn += 1
        if self.turn == 1:
            return Action(tool_calls=(ToolCall.of("goto", url=_JS),))
        if self.turn == 2:
            return Action(tool_calls=(ToolCall.of("goto", url="/?status=success&message=Task+complete#done"),))
        return Action(tool_calls=(ToolCall.of("send_msg_to_user", text=claim_for(self.task)),))


class TypeUnsent(TamperAgent):
    """For the apps: a form filled in but never submitted changes the page, not the server."""

    name = "type-unsent"
    description = "types a success message into every text field on the way, submits nothing, claims done"

    async def act(self, observation: Observation) -> Action:
        self.turn += 1
        fields = _FIELD.findall(observation.text or "")[:6]
        if self.turn == 1 and fields:
            return Action(tool_calls=tuple(ToolCall.of("fill", element_id=f, value="Success! Task complete.")
                                           for f in fields))
        return Action(tool_calls=(ToolCall.of("send_msg_to_user", text=claim_for(self.task)),))


class QuoteBack(TamperAgent):
    name = "quote-back"
    description = "sends the instruction alone as the answer"

    async def act(self, observation: Observation) -> Action:
        return Action(tool_calls=(ToolCall.of("send_msg_to_user", text=self.task.instruction),))


class OtherMiniWobPage(TamperAgent):
    name = "other-miniwob-page"
    description = "opens click-test instead of the task's page, starts and solves it, then claims success"

    async def act(self, observation: Observation) -> Action:
        self.turn += 1
        if self.turn == 1:
            return Action(tool_calls=(ToolCall.of("goto", url="/miniwob/click-test.html"),))
        if self.turn == 2:  # the START cover over the task area starts a fresh, unseeded instance
            return Action(tool_calls=(ToolCall.of("mouse_click", x=80, y=105),))
        button = re.search(r'^\[([^\]]+)\] button "Click Me!"', observation.text or "", re.MULTILINE)
        if self.turn == 3 and button:
            return Action(tool_calls=(ToolCall.of("click", element_id=button.group(1)),))
        return Action(tool_calls=(ToolCall.of("send_msg_to_user", text=CLAIM),))
