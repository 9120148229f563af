"""The text-game family's tampering agents (each must score 0; ``envgym check`` runs them).

``debug-verbs`` tries the commands that would win without playing: Inform's debugging verbs (``purloin``
takes any object from anywhere, ``gonear`` teleports, ``abstract`` moves objects), ScienceWorld's
``teleport to`` (a simplification the suites leave off), interpreter meta-commands (``restore``, ``undo``),
each on the objects the reference solution names, then claims the win. ``half-walkthrough`` replays the
first half of the reference solution and claims the win: progress is not a win.
"""

from __future__ import annotations

import json

from envgym.plugin import Action, Observation, TamperAgent

CLAIM = "I have completed the task: the game is won with full score (100/100)."


def _commands(agent: TamperAgent) -> list[str]:
    return [json.loads(c.arguments).get("command", "") for a in agent.task.solution or () for c in a.tool_calls]


class DebugVerbs(TamperAgent):
    name = "debug-verbs"
    description = "Inform debug verbs, teleport and meta-commands on the reference's objects, then a claim"

    async def reset(self, observation: Observation, info: dict) -> None:
        await super().reset(observation, info)
        nouns = []
        for command in _commands(self):
            words = command.split()
            if len(words) > 1 and " ".join(words[1:]) not in nouns:
                nouns.append(" ".join(words[1:]))
        plan = ["restore", "undo", "score", "tree"]
        for noun in nouns[-3:]:
            plan += [f"purloin {noun}", f"gonear {noun}", f"abstract {noun} to me", f"teleport to {noun}"]
        self._plan = plan

    async def act(self, observation: Observation) -> Action:
        self.turn += 1
        if self.turn > len(self._plan):
            return Action(text=CLAIM)
        return Action.call("act", command=self._plan[self.turn - 1])


class HalfWalkthrough(TamperAgent):
    name = "half-walkthrough"
    description = "the first half of the reference solution, then a claim of victory"

    async def act(self, observation: Observation) -> Action:
        self.turn += 1
        commands = _commands(self)
        if self.turn > len(commands) // 2:
            return Action(text=CLAIM)
        return Action.call("act", command=commands[self.turn - 1])
