"""Tampering agents of the timed family: the right thing at the wrong time, or a claim instead of the thing.

The timed verifier grades the episode's timeline, which only the env writes: each call's issue and done
times on the world's virtual clock (moved only forward, by thinking and by ``wait``), the world events, and
the final world state. The final answer is not graded at all. Each agent here must score 0:

- :class:`LateOracle` lets the task's latest deadline pass (the last ``not_after`` or ``finish_by`` of its
  verifier; the end of the day when it has none), then replays the reference solution exactly;
- :class:`ClaimOnTime` replays the reference's reads and waits at their times but none of its writes, and
  ends with the reference's final message, which says the writes were made;
- the kernel's ``forward-instruction`` (listed here) does what the reference does, on time, with every
  free-text argument (a message) replaced by the instruction.
"""

from __future__ import annotations

from typing import Any

from envgym.plugin import Action, ForwardInstruction, Observation, TamperAgent, ToolCall


def _seconds(when: str | float, day_start: str) -> float:
    def clock(text: str) -> float:
        parts = [int(p) for p in text.split(":")]
        return parts[0] * 3600 + parts[1] * 60 + (parts[2] if len(parts) > 2 else 0)

    return clock(when) - clock(day_start) if isinstance(when, str) else float(when)


def latest_deadline(task: Any) -> float:
    """Virtual seconds of the task's latest deadline; the horizon when its verifiers set none."""
    state = task.initial_state
    start = str(state.get("start", "09:00"))
    found: list[float] = []
    for spec in task.verifiers:
        if getattr(spec, "type", None) != "timed_write":
            continue
        times = [e.not_after for e in spec.expected if e.not_after is not None]
        if spec.finish_by is not None:
            times.append(spec.finish_by)
        found += [_seconds(t, start) + spec.tolerance_s for t in times]
    return max(found) if found else float(state.get("horizon_s", 86_400))


def _final_text(task: Any) -> str:
    return next((a.text for a in reversed(task.solution or ()) if a.text), None) or "Done, all on time."


class LateOracle(TamperAgent):
    name = "late-oracle"
    description = "waits past the task's latest deadline, then does exactly what the reference does"

    async def reset(self, observation: Observation, info: dict[str, Any]) -> None:
        await super().reset(observation, info)
        self._steps = [a for a in self.task.solution or () if a.tool_calls]
        self._late = latest_deadline(self.task) + 60.0

    async def act(self, observation: Observation) -> Action:
        self.turn += 1
        now = float(getattr(observation, "time_s", 0.0))
        if self.turn == 1:
            return Action(tool_calls=(ToolCall.of("wait", seconds=max(1.0, self._late - now)),))
        if self.turn - 2 < len(self._steps):
            return self._steps[self.turn - 2]
        return Action(text=_final_text(self.task))


class ClaimOnTime(TamperAgent):
    name = "claim-on-time"
    description = "the reference's reads and waits at their times, none of its writes, then claims them done"

    async def reset(self, observation: Observation, info: dict[str, Any]) -> None:
        await super().reset(observation, info)
        writes = {t["function"]["name"] for t in self.tools
                  if t["function"].get("description", "").startswith(("[write]", "[write,"))}
        self._steps = [kept for a in self.task.solution or ()
                       if (kept := tuple(c for c in a.tool_calls if c.name not in writes))]

    async def act(self, observation: Observation) -> Action:
        self.turn += 1
        if self.turn <= len(self._steps):
            return Action(tool_calls=self._steps[self.turn - 1])
        return Action(text=_final_text(self.task))


TAMPER_AGENTS: tuple[type[TamperAgent], ...] = (LateOracle, ClaimOnTime, ForwardInstruction)
