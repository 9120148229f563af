"""Tampering agents of the tool family: writes the verifier does not credit, and answers that claim or hedge.

Grading reads the store the episode's tools wrote (the successful write calls, matched by tool and
arguments, and a diff of the final store against the reference's) and the final answer; each agent here
tries to earn reward some other way, and must score 0 (besides the kernel's generic ones, the family lists
the kernel's ``forward-instruction``: the reference with every email body or title replaced by the
instruction):

- :class:`WrongRecord` replays the reference solution with every record id moved to another record of the
  same table (the right values on the wrong order, event or code; a write naming no record gets its text
  values swapped between fields), then says it is done;
- :class:`OtherWriteTool` replays it with each write sent through another write tool that accepts the same
  arguments (a side door the expected writes do not name);
- :class:`ClaimDone` calls nothing and answers that every write of the reference was made, naming each;
- :class:`ListCandidates` calls nothing and answers with every value of the initial store: every candidate
  answer at once;
- :class:`QuoteBack` calls nothing and answers with the instruction alone (short enough for any length cap:
  "is it in stock?" once earned the in-stock criterion, "The code for garnet is 42Q3. Reply with that code."
  the contains criterion of every ``echo`` task).

They are built from the task, so they know the reference solution; none sends the reference's final
answer on a task without writes, where that message *is* the solution.
"""

from __future__ import annotations

import json
from typing import Any

from envgym.plugin import Action, ForwardInstruction, Observation, TamperAgent, ToolCall

CLAIM = "Done: I have taken care of your request and saved the changes."


def _key(row: dict[str, Any]) -> Any:
    """A row's record id: its ``id`` column, else its first column (``codes.name``)."""
    return row["id"] if "id" in row else next(iter(row.values()), None)


def record_ids(initial_state: dict[str, Any]) -> dict[str, list[str]]:
    """Table -> its string record ids, sorted, from the task's initial state."""
    ids: dict[str, list[str]] = {}
    for table, rows in initial_state.items():
        keys = sorted({str(k) for row in rows if isinstance(row, dict) and isinstance(k := _key(row), str)})
        if len(keys) > 1:
            ids[table] = keys
    return ids


def _writes_of(task: Any, tools: list[dict[str, Any]]) -> list[ToolCall]:
    write_tools = {t["function"]["name"] for t in tools
                   if t["function"].get("description", "").startswith("[write]")}
    return [c for action in task.solution or () for c in action.tool_calls if c.name in write_tools]


class WrongRecord(TamperAgent):
    name = "wrong-record"
    description = "the reference's calls with every record id moved to another record, then claims done"

    async def reset(self, observation: Observation, info: dict[str, Any]) -> None:
        await super().reset(observation, info)
        self._moved: dict[str, str] = {}
        for keys in record_ids(self.task.initial_state).values():
            for i, key in enumerate(keys):
                self._moved[key] = keys[(i + 1) % len(keys)]
        self._steps = [a for a in self.task.solution or () if a.tool_calls]

    def _move(self, value: Any) -> Any:
        if isinstance(value, str):
            return self._moved.get(value, value)
        if isinstance(value, list):
            return [self._move(v) for v in value]
        if isinstance(value, dict):
            return {k: self._move(v) for k, v in value.items()}
        return value

    def _wrong(self, call: ToolCall, writes: set[str]) -> ToolCall | None:
        """The call on another record; a write naming no record gets its text values rotated between its
        fields (the right values in the wrong fields), or is dropped when it has only one."""
        args = json.loads(call.arguments or "{}")
        moved = self._move(args)
        if moved == args and call.name in writes:
            texts = [k for k, v in args.items() if isinstance(v, str)]
            if len(texts) < 2:
                return None
            moved = {**args, **{k: args[texts[i - 1]] for i, k in enumerate(texts)}}
        return ToolCall(id=f"w{self.turn}_{call.id}", name=call.name, arguments=json.dumps(moved))

    async def act(self, observation: Observation) -> Action:
        self.turn += 1
        writes = {c.name for c in _writes_of(self.task, self.tools)}
        while self.turn <= len(self._steps):
            calls = tuple(c for c in (self._wrong(c, writes) for c in self._steps[self.turn - 1].tool_calls) if c)
            if calls:
                return Action(tool_calls=calls)
            self.turn += 1
        return Action(text=CLAIM)


class OtherWriteTool(TamperAgent):
    name = "other-write-tool"
    description = "the reference's calls, each write sent through another write tool that takes its arguments"

    async def reset(self, observation: Observation, info: dict[str, Any]) -> None:
        await super().reset(observation, info)
        self._params = {t["function"]["name"]: set(t["function"]["parameters"].get("properties", {}))
                        for t in self.tools if t["function"].get("description", "").startswith("[write]")}
        writes = _writes_of(self.task, self.tools)  # without writes there is no side door to try
        self._steps = [a for a in self.task.solution or () if a.tool_calls] if writes else []

    def _side_door(self, call: ToolCall) -> ToolCall | None:
        if call.name not in self._params:
            return call
        given = set(json.loads(call.arguments or "{}"))
        other = next((n for n in sorted(self._params) if n != call.name and given <= self._params[n]), None)
        return None if other is None else ToolCall(id=f"o{self.turn}_{call.id}", name=other, arguments=call.arguments)

    async def act(self, observation: Observation) -> Action:
        self.turn += 1
        while self.turn <= len(self._steps):
            calls = tuple(c for c in map(self._side_door, self._steps[self.turn - 1].tool_calls) if c)
            if calls:
                return Action(tool_calls=calls)
            self.turn += 1
        return Action(text=CLAIM)


class ClaimDone(TamperAgent):
    name = "claim-done"
    description = "calls nothing; the final answer says every write of the reference was made"

    async def act(self, observation: Observation) -> Action:
        writes = _writes_of(self.task, self.tools)
        if not writes:
            return Action(text=CLAIM)
        done = "; ".join(f"{c.name}({c.arguments})" for c in writes)
        return Action(text=f"{CLAIM} Done: {done}. Every change is saved and confirmed.")


class ListCandidates(TamperAgent):
    name = "list-candidates"
    description = "calls nothing; the final answer lists every value of the initial store"

    async def act(self, observation: Observation) -> Action:
        seen: dict[str, None] = {}
        for rows in self.task.initial_state.values():
            for row in rows if isinstance(rows, list) else ():
                for value in (row.values() if isinstance(row, dict) else ()):
                    if isinstance(value, str | int | float) and not isinstance(value, bool):
                        seen.setdefault(str(value), None)
        return Action(text="It is one of these: " + ", ".join(seen))


class QuoteBack(TamperAgent):
    name = "quote-back"
    description = "calls nothing; the final answer is the instruction alone (no store to make it long)"

    async def act(self, observation: Observation) -> Action:
        return Action(text=self.task.instruction)


TAMPER_AGENTS: tuple[type[TamperAgent], ...] = (
    WrongRecord, OtherWriteTool, ForwardInstruction, ClaimDone, ListCandidates, QuoteBack)
