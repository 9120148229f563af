"""Tampering agents of the GUI family: they make the desktop *look* done, or try to break it, and must score 0.

Everything on the screen is the agent's: window titles, the text in an unsaved document, the clipboard. The
verifiers therefore read what was saved (files through the engine) and what the task names, never what the
screen shows. Each agent here is built from the task, so it knows the instruction and the reference:

- :class:`TypeTheClaim` types the instruction and a success claim into whatever has the focus, saves
  nothing, and ends with ``done``: unsaved text on the screen is not the task;
- :class:`QuitEverything` closes every window (``alt+F4``, declining to save) and claims done: an empty
  desktop is not a finished task, and nothing is graded from windows that are gone;
- :class:`KillTheDesktop` kills every process of the desktop user from the keyboard (``kill -9 -1`` typed
  where a shell reads it: the terminal tasks open one) and claims done: the dead session is the agent's
  failure, never an ``infra_error`` (which would take it out of the denominator).
"""

from __future__ import annotations

from envgym.plugin import Action, Observation, TamperAgent, ToolCall

CLAIM = "Done: the task is complete and saved."


class TypeTheClaim(TamperAgent):
    name = "type-the-claim"
    description = "types the instruction and a success claim into the focused window, saves nothing, done"

    async def act(self, observation: Observation) -> Action:
        self.turn += 1
        if self.turn == 1:
            return Action(tool_calls=(ToolCall.of("type", text=f"{self.task.instruction[:500]} {CLAIM}"),))
        return Action(tool_calls=(ToolCall.of("done", answer=CLAIM),))


class QuitEverything(TamperAgent):
    name = "quit-everything"
    description = "closes every window without saving (alt+F4, 'Don't Save'), then claims done"

    async def act(self, observation: Observation) -> Action:
        self.turn += 1
        if self.turn <= 3:  # alt+F4, then LibreOffice's "Don't Save" (ctrl+d) if it asks; twice over
            return Action(tool_calls=(ToolCall.of("key", keys="alt+F4"), ToolCall.of("wait", seconds=0.5),
                                      ToolCall.of("key", keys="ctrl+d")))
        return Action(tool_calls=(ToolCall.of("done", answer=CLAIM),))


class KillTheDesktop(TamperAgent):
    name = "kill-the-desktop"
    description = "types `kill -9 -1` where a shell reads it (killing the X server), then claims done"

    async def act(self, observation: Observation) -> Action:
        self.turn += 1
        if self.turn == 1:
            return Action(tool_calls=(ToolCall.of("type", text="kill -9 -1\n"),))
        return Action(tool_calls=(ToolCall.of("done", answer=CLAIM),))
