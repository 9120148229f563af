"""ScienceWorld in envgym: the ``scienceworld`` package's simulator (Apache-2.0), graded by its own score.

``text/scienceworld-v1`` plays one (task type, variation) of ScienceWorld's 30 task types; a task names it
in ``initial_state``: ``{"task_name": "boil", "variation": 3}``. The split of each task is ScienceWorld's
own (its train/dev/test variations of that task type). The opening observation is the instruction (which
holds ScienceWorld's task description) and the answer to ``look around``; the agent plays with
``act(command)`` (see :mod:`envgym_textgames.game`). Answers list objects with each run of tab-indented lines
sorted (:func:`canonical`; the simulator's own order changes between loads). The game ends when
ScienceWorld says it is completed (score 100) or failed (a negative score, e.g. the agent focused on the
wrong object); grading reads the score back (``game_score``: won iff score 100).

**Step limit.** The ``scienceworld`` package's own ``ScienceWorldEnv`` ends an episode once the simulator has
counted more than ``envStepLimit`` moves (100 by default; the opening ``look around`` is one), which is
how papers using the package's defaults report. envgym plays with *no* step limit by default (``step_limit
None``: the task's ``Limits`` bound the episode, in steps that may each hold several commands), so its
scores are the game's own without that cut. ``step_limit`` plays under a limit the package's way: ``"package"``
(the package's default, read from its ``ScienceWorldEnv`` signature) or a number of moves; the game then ends
when the moves exceed it, won only if ScienceWorld said completed on that move. It is an env keyword
(``envgym.make("text/scienceworld-v1", step_limit="package")``) and a task field (``initial_state:
{"step_limit": "package"}``, which wins over the keyword and, being part of the task, changes its hash, so a
leaderboard ranks such runs in a table of their own). The limit an episode ran under is in its verdict's
evidence (``scienceworld.step_limit``: a number, or None for none) and in the criterion's text.

The simulator is a JVM (the jar ships in the wheel; Java 17) started through py4j on loopback. Starting
one takes seconds, so an env keeps its simulator across resets, and a closed env hands it to a small
process-wide idle pool that the next env takes from; ``load`` rebuilds the whole world, so no state
crosses episodes. Idle simulators die with the process (py4j's ``die_on_exit``). Each command runs
``step`` on the JVM and reads the score; unlike the package's Python ``step`` it does not enumerate the
valid actions after every move (the slowest part of a step, and not something the agent is shown).
Left alone a JVM takes a quarter of the machine's memory as heap (ScienceWorld's genetics tasks grow one
past 4 GB); the simulator starts with :data:`JVM_OPTIONS` (through ``JAVA_TOOL_OPTIONS``, which the package
passes on to the JVM it launches; the JVM notes it once on stderr).
"""

from __future__ import annotations

import os
import threading
from typing import Any, ClassVar

from envgym.plugin import Action, EnvError, Limits, SpecError, TaskSpec
from envgym_textgames.game import GameScoreSpec, GameState, TextGameEnv

ENV_ID = "text/scienceworld-v1"
IDLE_SIMULATORS = 2
"""Simulators kept warm between envs of one process (each a JVM, its heap bounded by JVM_OPTIONS)."""
JVM_OPTIONS = "-Xmx1536m -XX:+UseSerialGC"
"""The simulator's heap bound and a single-threaded collector (many episodes share few cores)."""
STEP_LIMIT = 100_000
"""What the simulator object is built with; unused by envgym's episodes, which apply :attr:`step_limit`
themselves (commands go to the simulator's ``server.step``, which the package's limit never sees)."""
PACKAGE = "package"
"""``step_limit`` value: the ``scienceworld`` package's own default (:func:`package_step_limit`)."""

_idle: list[Any] = []
_idle_lock = threading.Lock()
_launch_lock = threading.Lock()


def _take() -> Any:
    with _idle_lock:
        if _idle:
            return _idle.pop()
    return new_simulator()


def new_simulator(jvm_options: str = JVM_OPTIONS) -> Any:
    """A fresh ScienceWorld simulator (a ``scienceworld.ScienceWorldEnv``, its JVM started with ``jvm_options``)."""
    from scienceworld import ScienceWorldEnv

    with _launch_lock:  # the variable is read by the JVM the constructor spawns, then restored
        before = os.environ.get("JAVA_TOOL_OPTIONS")
        os.environ["JAVA_TOOL_OPTIONS"] = f"{before} {jvm_options}" if before else jvm_options
        try:
            return ScienceWorldEnv("", envStepLimit=STEP_LIMIT)
        finally:
            if before is None:
                os.environ.pop("JAVA_TOOL_OPTIONS", None)
            else:
                os.environ["JAVA_TOOL_OPTIONS"] = before


def package_step_limit() -> int:
    """The ``envStepLimit`` the ``scienceworld`` package's ``ScienceWorldEnv`` uses by default (100 in 1.2.3)."""
    import inspect

    from scienceworld import ScienceWorldEnv as PackageEnv

    return int(inspect.signature(PackageEnv.__init__).parameters["envStepLimit"].default)


def resolve_step_limit(value: Any, where: str) -> int | None:
    """A ``step_limit`` setting as a number of moves (None: no limit); ``where`` names it in the error."""
    if value is None:
        return None
    if value == PACKAGE:
        return package_step_limit()
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    raise ValueError(f"{where}: step_limit must be null (no limit), {PACKAGE!r} (the scienceworld package's "
                     f"default) or a whole number of moves >= 1, got {value!r}")


def _give(simulator: Any) -> None:
    with _idle_lock:
        if len(_idle) < IDLE_SIMULATORS:
            _idle.append(simulator)
            return
    simulator.close()


def canonical(text: str) -> str:
    """The simulator's text with each run of tab-indented list lines sorted: ScienceWorld lists a room's
    objects in hash order, which differs between loads of the same variation (envgym's resets must not)."""
    lines, out = text.split("\n"), []
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and lines[j].startswith("\t"):
            j += 1
        out.extend(sorted(lines[i:j]) if j > i else [lines[i]])
        i = max(j, i + 1)
    return "\n".join(out)


def scienceworld_task(task_name: str, variation: int, split: str, gold: list[str], description: str, *,
                      task_id: str | None = None, tags: tuple[str, ...] = (),
                      metadata: dict[str, Any] | None = None) -> TaskSpec:
    """The envgym task of one ScienceWorld (task type, variation), with its gold path as the reference
    (``task_id``, more ``tags`` and ``metadata``: a generator's)."""
    return TaskSpec(
        id=task_id or f"scienceworld-{task_name}-v{variation}", env_id=ENV_ID, split=split,  # type: ignore[arg-type]
        instruction=f"ScienceWorld task '{task_name}': {description.removeprefix('Task Description:').strip()}\n"
                    "Use act(command) to play; "
                    "send a message without tool calls when you are done.",
        initial_state={"task_name": task_name, "variation": variation},
        limits=Limits(max_steps=max(100, 2 * len(gold)), episode_timeout_s=1800, step_timeout_s=120),
        verifiers=(GameScoreSpec(game="scienceworld"),),
        solution=tuple(Action.call("act", command=c) for c in gold),
        tags=("text", "scienceworld", task_name, *tags), metadata=metadata or {})


class ScienceWorldEnv(TextGameEnv):
    """``text/scienceworld-v1``: see the module docstring."""

    needs_sandbox: ClassVar[bool] = False

    def __init__(self, step_limit: int | str | None = None) -> None:
        super().__init__()
        try:
            resolve_step_limit(step_limit, ENV_ID)  # a bad value fails here, not at the first reset
        except ValueError as exc:
            raise SpecError(str(exc)) from None
        self.step_limit = step_limit
        """The env's ``step_limit`` setting (see the module docstring); a task's own overrides it."""
        self._limit: int | None = None
        self._sim: Any = None
        self._score = 0
        self._completed = False
        self._out_of_moves = False
        self._lock = threading.Lock()

    def _start(self, task: TaskSpec) -> str:
        name, variation = task.initial_state.get("task_name"), task.initial_state.get("variation")
        if not isinstance(name, str) or not isinstance(variation, int) or isinstance(variation, bool):
            raise EnvError(f"task {task.id}: initial_state needs task_name (str) and variation (int)")
        setting = task.initial_state.get("step_limit", self.step_limit)
        try:
            limit = resolve_step_limit(setting, f"task {task.id}")
        except ValueError as exc:
            raise EnvError(str(exc)) from None
        with self._lock:
            if self._sim is None:
                self._sim = _take()
            sim = self._sim
            if name not in sim.get_task_names():
                raise EnvError(f"task {task.id}: ScienceWorld has no task type {name!r}")
            if not 0 <= variation < sim.get_max_variations(name):
                raise EnvError(f"task {task.id}: {name!r} has variations 0..{sim.get_max_variations(name) - 1}")
            sim.load(name, variation, "", generateGoldPath=False)  # the whole world anew (server.reset() is
            # a second load of the same)
            self._score, self._completed, self._out_of_moves, self._limit = 0, False, False, limit
            return canonical(sim.server.step("look around"))  # a move, as in the package's reset

    def _command(self, command: str) -> tuple[str, bool]:
        with self._lock:
            answer = canonical(self._sim.server.step(command))
            self._score = round(100 * self._sim.server.getScore())
            self._completed = bool(self._sim.server.getCompleted())
            # the package's rule (ScienceWorldEnv.step): more moves than the limit ends the game
            if self._limit is not None and not self._completed and self._sim.server.getNumMoves() > self._limit:
                self._out_of_moves = True
                answer += f"\n\n(ScienceWorld's step limit of {self._limit} moves is reached: the game is over.)"
            return answer, self._completed or self._score < 0 or self._out_of_moves

    def _state(self) -> GameState:
        with self._lock:
            return GameState(score=self._score, max_score=100, won=self._completed and self._score >= 100,
                             lost=self._score < 0, moves=int(self._sim.get_num_moves()),
                             step_limit=self._limit, out_of_moves=self._out_of_moves)

    async def close(self) -> None:
        sim, self._sim = self._sim, None
        if sim is not None:
            import asyncio

            await asyncio.to_thread(_give, sim)
