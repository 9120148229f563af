"""Fresh tasks for training: an endless, seeded stream from a task generator, and the curriculum that dials it.

    stream = TaskStream("tool-retail-gen", seed=7, curriculum=SolveRateCurriculum((1, 2, 3)))
    task = stream.task(0)                     # index 0 of run seed 7: always the same task at the same level
    stream.observe(task, solved=True)         # one finished episode; the curriculum may move the level

A :class:`TaskStream` never runs out and never repeats a generator seed: index ``i`` maps to seed
``mix((a * i + b) mod 2**63)`` with ``a`` odd, ``a`` and ``b`` drawn from the run seed through SHA-256 and
``mix`` a fixed scrambling bijection: a bijection of the generator's whole seed space, so ``i != j`` gives
``seed_at(i) != seed_at(j)``, and two run seeds give unrelated sequences. The same run seed and the same
outcomes in the same order give the same tasks, in any process. A task's level is fixed (``level=``), the
curriculum's when the index is first asked for (then remembered, so the members of a GRPO group share it),
or, with neither, the generator's mix (seed ``s`` at ``levels[s % len(levels)]``).

A :class:`Curriculum` is anything with ``level() -> int`` (the level of the next new task) and
``observe(level, solved)`` (one finished episode of a task of ``level``). :class:`SolveRateCurriculum` keeps
the recent solve rate near ``target``: after ``window`` episodes at its level it moves one level up when the
rate is at least ``target + band``, one down when at most ``target - band``. Pass your own to
:class:`TaskStream` (or to ``envgym train`` as ``curriculum: {"type": "plugin", "factory": "pkg.mod:ATTR"}``).

Who feeds the curriculum decides what is reproducible: the bundled trainer feeds a step's outcomes at a fixed
point of the schedule (see ``envgym.rl.train.rollout``), adapters in the order their episodes finish.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict, deque
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from envgym.errors import SpecError
from envgym.generate import MAX_SEED, find, generate, parse_task_id

if TYPE_CHECKING:
    from envgym.task import TaskSpec

_SEEDS = MAX_SEED + 1  # 2**63: generator seeds are [0, 2**63)
_REMEMBERED = 4096  # indices whose level is kept: far more than the groups in flight at once


@runtime_checkable
class Curriculum(Protocol):
    """Sets the level of the next new task from the outcomes of finished episodes."""

    def level(self) -> int:
        """The level the next new task is drawn at (one of the generator's levels)."""
        ...

    def observe(self, level: int, solved: bool) -> None:
        """One finished episode of a task of ``level``: solved (outcome success) or not."""
        ...


class SolveRateCurriculum:
    """Moves among ``levels`` (easiest first) to keep the solve rate of the last ``window`` episodes at the
    current level near ``target``: up when it reaches ``target + band``, down when it falls to
    ``target - band``. The window starts empty at every move; episodes of other levels (started before a
    move) are not counted."""

    def __init__(self, levels: Sequence[int], *, target: float = 0.5, window: int = 16, band: float = 0.1,
                 start: int | None = None) -> None:
        if not levels:
            raise SpecError("a curriculum needs at least one level", field="levels")
        if not 0 < target < 1 or not 0 <= band < 0.5 or window < 1:
            raise SpecError(f"SolveRateCurriculum needs 0 < target < 1, 0 <= band < 0.5 and window >= 1; got "
                            f"target={target}, band={band}, window={window}", field="curriculum")
        self.levels = tuple(levels)
        if start is not None and start not in self.levels:
            raise SpecError(f"start level {start} is not one of {self.levels}", field="start")
        self.target, self.window, self.band = target, window, band
        self._index = self.levels.index(start) if start is not None else 0
        self._recent: deque[bool] = deque(maxlen=window)
        self.moves: list[tuple[int, int]] = []
        """``(episodes observed, new level)`` for every move, in order."""
        self._seen = 0

    def level(self) -> int:
        return self.levels[self._index]

    def observe(self, level: int, solved: bool) -> None:
        self._seen += 1
        if level != self.level():
            return
        self._recent.append(bool(solved))
        if len(self._recent) < self.window:
            return
        rate = sum(self._recent) / len(self._recent)
        step = 1 if rate >= self.target + self.band else -1 if rate <= self.target - self.band else 0
        if step and 0 <= self._index + step < len(self.levels):
            self._index += step
            self._recent.clear()
            self.moves.append((self._seen, self.level()))

    def solve_rate(self) -> float | None:
        """The solve rate over the current window (None before its first episode)."""
        return sum(self._recent) / len(self._recent) if self._recent else None

    def __repr__(self) -> str:
        return (f"SolveRateCurriculum(levels={self.levels}, level={self.level()}, target={self.target}, "
                f"window={self.window}, band={self.band})")


def _draw(*parts: object) -> int:
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") % _SEEDS


class TaskStream:
    """An endless stream of fresh tasks from generator ``generator``; see the module docstring."""

    def __init__(self, generator: str, *, seed: int = 0, split: str | None = "train", level: int | None = None,
                 curriculum: Curriculum | None = None) -> None:
        spec = find(generator)  # unknown: a SpecError with a did-you-mean
        if level is not None and curriculum is not None:
            raise SpecError("a task stream takes a fixed level or a curriculum, not both", field="level")
        if level is not None and level not in spec.levels:
            raise SpecError(f"generator {generator!r} has no level {level}; its levels: "
                            f"{', '.join(map(str, spec.levels))}", field="level")
        split = split or spec.splits[0]
        if split not in spec.splits:
            raise SpecError(f"generator {generator!r} makes no {split!r} tasks; its splits: {', '.join(spec.splits)}",
                            field="split")
        if curriculum is not None and not isinstance(curriculum, Curriculum):
            raise SpecError(f"{curriculum!r} is not a Curriculum (it needs level() and observe(level, solved))",
                            field="curriculum")
        self.generator, self.seed, self.split = generator, seed, split
        self.fixed_level, self.curriculum = level, curriculum
        self.levels: tuple[int, ...] = tuple(spec.levels)
        self.env_id = spec.env_id
        self._a = _draw("envgym-stream-a", seed) | 1  # odd: multiplication by it is a bijection mod 2**63
        self._b = _draw("envgym-stream-b", seed)
        self._levels: OrderedDict[int, int | None] = OrderedDict()

    def seed_at(self, index: int) -> int:
        """The generator seed of task ``index`` (distinct for every index below 2**63)."""
        if index < 0:
            raise IndexError(f"a stream has no task {index}")
        x = (self._a * index + self._b) % _SEEDS
        # scrambled by bijections of [0, 2**63) (xor with a right shift, multiplication by an odd number), so
        # consecutive indices do not give seeds in arithmetic progression
        x ^= x >> 31
        x = (x * 0x5851F42D4C957F2D) % _SEEDS
        return x ^ (x >> 29)

    def level_at(self, index: int) -> int | None:
        """The level task ``index`` is made at (decided, and remembered, on the first ask; None: the mix)."""
        if index in self._levels:
            return self._levels[index]
        if self.fixed_level is not None:
            level: int | None = self.fixed_level
        elif self.curriculum is not None:
            level = self.curriculum.level()
            if level not in self.levels:
                raise SpecError(f"the curriculum asked for level {level!r}; generator {self.generator!r} has "
                                f"{', '.join(map(str, self.levels))}", field="curriculum")
        else:
            level = None
        self._levels[index] = level
        while len(self._levels) > _REMEMBERED:
            self._levels.popitem(last=False)
        return level

    def task(self, index: int) -> TaskSpec:
        """Task ``index`` of the stream."""
        return generate(self.generator, self.seed_at(index), level=self.level_at(index), split=self.split)

    def __iter__(self) -> Iterator[TaskSpec]:
        index = 0
        while True:
            yield self.task(index)
            index += 1

    def observe(self, task: TaskSpec | str, solved: bool) -> None:
        """One finished episode of ``task`` (or its id): passed to the curriculum with the task's level."""
        parsed = parse_task_id(task if isinstance(task, str) else task.id)
        if parsed is None or parsed[0] != self.generator:
            raise SpecError(f"{task if isinstance(task, str) else task.id!r} is no task of generator "
                            f"{self.generator!r}", field="task")
        if self.curriculum is not None:
            self.curriculum.observe(parsed[2], solved)

    def __repr__(self) -> str:
        how = (f"level={self.fixed_level}" if self.fixed_level is not None
               else f"curriculum={self.curriculum!r}" if self.curriculum is not None else "levels mixed")
        return f"TaskStream({self.generator!r}, seed={self.seed}, split={self.split!r}, {how})"
