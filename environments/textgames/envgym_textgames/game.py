"""The text-game contract shared by ScienceWorld and TextWorld: one ``act(command)`` tool, graded by the game.

A :class:`TextGameEnv` runs an external interactive-fiction engine. The agent sees the game's text; each
``act`` tool call sends one command and returns the game's answer as the tool result (several calls in one
step run in order). A message without tool calls ends the episode (the agent gives up or claims it is
done); the episode also ends when the game itself ends (won or lost). The game's answer to a command it
does not understand is an observation like any other; only a malformed call (unknown tool, arguments that
are not an object with a non-empty ``command`` string) is an error.

Grading is the game's own: the family reports the engine's score, maximum, won and lost flags as a
one-row table ``game`` (:class:`GameState`), read after the episode from the engine, which the agent
reaches only through game commands. The verifier kind ``game_score`` (:func:`check_game_score`) passes when
the game says the task is won; the verdict's score is 1.0 then and 0.0 otherwise, unless the task's spec
asks for ``partial_credit`` (score = the game's score over its maximum, clamped to [0, 1]). Either way the
criterion and the evidence carry the game's raw score, so a mean of game scores (how ScienceWorld papers
report) can be computed from the records.

A subclass implements the engine: ``_start(task)`` (load the task's game, return its opening text),
``_command(text)`` (one command; returns the answer and whether the game ended) and ``_state()``.
Every engine call runs off the event loop (``asyncio.to_thread``).
"""

from __future__ import annotations

import abc
import asyncio
import copy
import json
from typing import Any, ClassVar, Literal

from envgym.plugin import (
    Action,
    CallRecord,
    CriterionResult,
    Env,
    EnvError,
    FrozenModel,
    Observation,
    StepResult,
    TaskSpec,
    ToolResult,
    Verdict,
    VerifyContext,
)
from envgym_textgames.tamper import DebugVerbs, HalfWalkthrough

ACT_TOOL = {"type": "function", "function": {
    "name": "act", "description": "Send one command to the game (e.g. 'look around', 'open door to kitchen', "
                                  "'take coin'); returns the game's answer.",
    "parameters": {"type": "object", "additionalProperties": False,
                   "properties": {"command": {"type": "string", "description": "the command, as typed"}},
                   "required": ["command"]}}}
TOOLS = [ACT_TOOL]
MAX_COMMAND = 500


class GameState:
    """The engine's verdict on the episode as a one-row table ``game``: score, max_score, won, lost, moves,
    and what else the engine names (ScienceWorld: ``step_limit``, ``out_of_moves``)."""

    def __init__(self, *, score: float, max_score: float, won: bool, lost: bool, moves: int, **more: Any) -> None:
        self.row = {"score": score, "max_score": max_score, "won": bool(won), "lost": bool(lost), "moves": moves,
                    **more}

    def snapshot(self) -> dict[str, list[dict[str, Any]]]:
        return {"game": [dict(self.row)]}


class GameScoreSpec(FrozenModel):
    """Verifier ``game_score``: the game's own verdict (won), optionally with its score as partial credit."""

    type: Literal["game_score"] = "game_score"
    game: str
    """Which engine graded (``scienceworld``, ``textworld``): named in the criterion and the evidence."""
    partial_credit: bool = False
    """Score = the game's score / its maximum (clamped to [0, 1]) when not won; 0.0 if False."""


async def check_game_score(spec: GameScoreSpec, ctx: VerifyContext) -> Verdict:
    rows = ctx.state.snapshot().get("game", []) if ctx.state is not None else []
    if len(rows) != 1:
        return Verdict(score=0.0, passed=False, evidence={spec.game: "no game state (the episode never started)"})
    row = rows[0]
    won = bool(row["won"]) and not row["lost"]
    fraction = min(1.0, max(0.0, row["score"] / row["max_score"])) if row["max_score"] else float(won)
    score = 1.0 if won else (fraction if spec.partial_credit else 0.0)
    detail = f"{spec.game} score {row['score']:g}/{row['max_score']:g}, " + \
             ("won" if won else "lost" if row["lost"] else "not won") + f" after {row['moves']} moves"
    if "step_limit" in row:  # an engine that can cut the game at a number of moves says under which
        limit = row["step_limit"]
        detail += " with no step limit" if limit is None else f" under a step limit of {limit}" + \
            (" (reached)" if row.get("out_of_moves") else "")
    return Verdict(score=score, passed=won, criteria=(CriterionResult(
        name=f"{spec.game} score", score=1.0 if won else fraction, passed=won, detail=detail),),
        evidence={spec.game: dict(row)})


class TextGameEnv(Env):
    """Base of the text-game envs (see the module docstring)."""

    has_write_actions: ClassVar[bool] = False
    tamper_agents: ClassVar[tuple[type, ...]] = (DebugVerbs, HalfWalkthrough)

    def __init__(self) -> None:
        super().__init__()
        self._calls: list[CallRecord] = []
        self._answer: str | None = None
        self._started = False
        self._over = False

    @abc.abstractmethod
    def _start(self, task: TaskSpec) -> str:
        """Load the task's game (blocking; runs in a worker thread); return the opening text."""

    @abc.abstractmethod
    def _command(self, command: str) -> tuple[str, bool]:
        """Run one command (blocking); return the game's answer and whether the game has ended."""

    @abc.abstractmethod
    def _state(self) -> GameState:
        """The engine's score and flags now (blocking)."""

    async def reset(self, *, task: TaskSpec | str | None = None, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        self.task = self.choose_task(task, seed, options)
        await self.prepare(self.task)
        self._started = False
        opening = await asyncio.to_thread(self._start, self.task)
        self._started, self._over = True, False
        self._calls, self._answer = [], None
        text = f"{self.task.instruction}\n\n{opening}".strip()
        return Observation(text=text), {"tools": copy.deepcopy(TOOLS), "task_id": self.task.id,
                                        "split": self.task.split}

    async def step(self, action: Action) -> StepResult:
        if not action.tool_calls:
            if action.text is None:
                return StepResult(Observation(last_action_error="send act(command) calls, or a message to end"),
                                  0.0, False, False, {})
            self._answer = action.text
            return StepResult(Observation(text="The episode is over."), 0.0, True, False, {})
        results = []
        for call in action.tool_calls:
            if self._over:
                results.append(ToolResult(call_id=call.id, name=call.name, content="The game is over.",
                                          error="the game is over"))
                continue
            results.append(await self._call(call.id, call.name, call.arguments))
        errors = "; ".join(f"{r.name}: {r.error}" for r in results if r.error) or None
        return StepResult(Observation(tool_results=tuple(results), last_action_error=errors), 0.0, self._over,
                          False, {})

    async def _call(self, call_id: str, name: str, arguments: str | None) -> ToolResult:
        try:
            if name != "act":
                raise ValueError(f"unknown tool {name!r}; the only tool is act(command)")
            args = json.loads(arguments or "{}")
            if not isinstance(args, dict) or set(args) != {"command"} or not isinstance(args["command"], str):
                raise ValueError("arguments must be an object {\"command\": \"...\"}")
            command = " ".join(args["command"].split())
            if not command or len(command) > MAX_COMMAND:
                raise ValueError(f"the command must be 1 to {MAX_COMMAND} characters")
        except (ValueError, RecursionError) as exc:  # a malformed call is the agent's error observation
            error = "arguments nest too deeply" if isinstance(exc, RecursionError) else str(exc)
            self._calls.append(CallRecord(index=len(self._calls), name=name, kind="read", arguments=None, ok=False,
                                          error=error))
            return ToolResult(call_id=call_id, name=name, content=error, error=error)
        answer, self._over = await asyncio.to_thread(self._command, command)
        self._calls.append(CallRecord(index=len(self._calls), name=name, kind="read", arguments={"command": command},
                                      ok=True))
        return ToolResult(call_id=call_id, name=name, content=answer)

    async def verify_context(self) -> VerifyContext:
        if self.task is None:
            raise EnvError(f"{self.env_id}: verify() without an episode")
        state = await asyncio.to_thread(self._state) if self._started else None
        return VerifyContext(calls=list(self._calls), final_answer=self._answer, task=self.task, state=state)
