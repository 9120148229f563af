"""Task generators: ``(seed, level, split) -> TaskSpec``, deterministic, served as suites with no file on disk.

A generator is a function ``fn(request: GenerationRequest) -> TaskSpec`` registered by a plug-in
(:func:`envgym.plugin.register_generator`: name, env id, levels, template families and their splits). The
contract, which :func:`generate` enforces on every task it hands out:

- **Deterministic.** The same request gives the same task, byte for byte (the same :attr:`TaskSpec.hash`) in
  any process on any machine: draw every choice from :meth:`GenerationRequest.rng` (seeded from the
  request through SHA-256, never from ``hash()``, the clock or the environment), never iterate a ``set``,
  round money before it reaches the task. ``envgym check NAME`` compares hashes across two processes with
  different ``PYTHONHASHSEED``.
- **Its own reference solution.** The task carries ``solution`` (what the oracle plays), derived by the
  generator (replayed against the world it generated), never written by hand.
- **Identity.** The task's id is :attr:`GenerationRequest.task_id`, ``NAME.SPLIT.lLEVEL.sSEED``, its
  ``env_id`` the registration's and its ``split`` the request's; so an id alone names the task again
  (``env.reset(task="tool-retail-gen.test.l2.s42")`` builds it without any suite being read).
- **Held-out templates.** ``metadata["templates"]`` lists the template families the task was made from, each
  a family of the request's split (:attr:`GenerationRequest.templates`): train and test share none.

Suites. Wherever a suite name is accepted (``load_suite``, ``envgym eval --suite``, ``envgym check``,
``envgym tasks generate``), a generator is one::

    NAME                          seeds 0 .. size-1 (the registration's size, 10,000 by default)
    NAME@START:STOP               seeds START .. STOP-1
    NAME@START:STOP:level=2       one level (default: mixed, seed s at levels[s % len(levels)])
    NAME@START:STOP:split=test    one split (default: every split the generator has, or load_suite's split=)

The suite is a :class:`GeneratedTasks`, a lazy sequence: task ``i`` is made when asked for, so sampling a
few of 10,000 makes a few. With more than one split, each seed gives one task per split, interleaved
(``train s0, test s0, train s1, ...``).

:func:`distinct` counts distinct tasks honestly, by normalised content and by reference solution.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

from envgym import registry
from envgym.errors import RegistryError, SpecError
from envgym.types import FrozenModel, content_hash

if TYPE_CHECKING:
    from envgym.task import TaskSpec

__all__ = ["Distinct", "GeneratedTasks", "GenerationRequest", "SuiteRef", "content_key", "distinct", "find", "generate",
           "parse_ref", "parse_task_id", "solution_key", "task_id"]

SPLITS = ("train", "test", "dev")
_ID_RE = re.compile(r"^(?P<name>[a-z0-9][a-z0-9_.\-]*)\.(?P<split>train|test|dev)\.l(?P<level>\d+)\.s(?P<seed>\d+)$")
MAX_SEED = 2**63 - 1


def task_id(name: str, split: str, level: int, seed: int) -> str:
    """The id of generator ``name``'s task: ``NAME.SPLIT.lLEVEL.sSEED``."""
    return f"{name}.{split}.l{level}.s{seed}"


def parse_task_id(text: str) -> tuple[str, str, int, int] | None:
    """``(name, split, level, seed)`` of a generated task's id, or None if ``text`` is not one."""
    match = _ID_RE.match(text)
    if match is None:
        return None
    return match["name"], match["split"], int(match["level"]), int(match["seed"])


@dataclass(frozen=True)
class GenerationRequest:
    """What a generator is asked for: task ``seed`` of ``level`` and ``split``."""

    generator: str
    seed: int
    level: int
    split: str
    env_id: str
    templates: tuple[str, ...]
    """The template families this split may use (the registration's, in its order)."""

    @property
    def task_id(self) -> str:
        """The id the task must carry."""
        return task_id(self.generator, self.split, self.level, self.seed)

    def rng(self, *salt: str | int) -> random.Random:
        """A ``random.Random`` seeded from the request (and ``salt``, for independent streams) through SHA-256:
        the same on every machine and under every ``PYTHONHASHSEED``."""
        key = "\x1f".join(str(part) for part in (self.generator, self.split, self.level, self.seed, *salt))
        return random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:16], "big"))


def find(name: str) -> registry.GeneratorSpec:
    """The registration of generator ``name``; unknown: a :class:`SpecError` with a did-you-mean."""
    found = registry.generator_spec(name)
    if found is None:
        import difflib

        known = registry.list_generators()
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else (f"; known generators: {', '.join(known)}" if known
                                                            else "; none is registered")
        raise SpecError(f"unknown generator {name!r}{hint} (a plug-in names one with register_generator)")
    return found


def generate(name: str, seed: int, *, level: int | None = None, split: str | None = None) -> TaskSpec:
    """Task ``seed`` of generator ``name`` (``level`` None: the seed's level of the mix; ``split`` None: the
    generator's first split), checked against the contract in the module docstring (:class:`SpecError` naming
    the generator and what it got wrong)."""
    spec_ = find(name)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise SpecError(f"generator {name!r}: seed must be an integer in [0, 2**63), got {seed!r}", field="seed")
    level = spec_.levels[seed % len(spec_.levels)] if level is None else level
    if level not in spec_.levels:
        raise SpecError(f"generator {name!r} has no level {level!r}; its levels: "
                        f"{', '.join(map(str, spec_.levels))}", field="level")
    split = split or spec_.splits[0]
    if split not in spec_.splits:
        raise SpecError(f"generator {name!r} makes no {split!r} tasks; its splits: {', '.join(spec_.splits)}",
                        field="split")
    request = GenerationRequest(generator=name, seed=seed, level=level, split=split, env_id=spec_.env_id,
                                templates=spec_.templates_of(split))
    try:
        fn = registry.generator_fn(name)
    except RegistryError as exc:
        raise SpecError(f"generator {name!r}: {exc}") from exc
    task = fn(request)
    _check(request, task)
    return task


def _check(request: GenerationRequest, task: Any) -> None:
    def wrong(what: str, field: str) -> SpecError:
        return SpecError(f"generator {request.generator!r}, seed {request.seed} (level {request.level}, "
                         f"{request.split}): {what}", field=field)

    if not isinstance(task, FrozenModel) or not hasattr(task, "verifiers"):
        raise wrong(f"returned {type(task).__name__}, not a TaskSpec", "task")
    for field in ("id", "env_id", "split"):
        expected = getattr(request, "task_id" if field == "id" else field)
        if getattr(task, field) != expected:
            raise wrong(f"the task's {field} is {getattr(task, field)!r}, not {expected!r}", field)
    if not task.solution:
        raise wrong("the task has no reference solution", "solution")
    templates = task.metadata.get("templates")
    if not isinstance(templates, list | tuple) or not templates:
        raise wrong("metadata.templates must list the template families the task was made from", "metadata.templates")
    leaked = [t for t in templates if t not in request.templates]
    if leaked:
        raise wrong(f"template families {leaked} are not {request.split} families ({', '.join(request.templates)})",
                    "metadata.templates")


@dataclass(frozen=True)
class SuiteRef:
    """A generator named as a suite: ``NAME[@START:STOP][:level=L][:split=S]`` (see the module docstring)."""

    name: str
    start: int
    stop: int
    level: int | None = None
    split: str | None = None

    def __str__(self) -> str:
        extra = "".join(f":{k}={v}" for k, v in (("level", self.level), ("split", self.split)) if v is not None)
        return f"{self.name}@{self.start}:{self.stop}{extra}"


def parse_ref(text: str) -> SuiteRef | None:
    """``text`` as a generator suite, or None when it names no generator (a registered suite of that name wins;
    a ``@`` always means a generator: a malformed or unknown one is a :class:`SpecError`)."""
    name, at, rest = text.partition("@")
    if not at:
        if "/" in text or text.endswith(".jsonl") or registry.suite_spec(text) is not None:
            return None
        found = registry.generator_spec(text)
        return None if found is None else SuiteRef(text, 0, found.size)
    spec_ = find(name)
    fields = rest.split(":") if rest else []
    start, stop = 0, spec_.size
    if len(fields) >= 2 and fields[0].isdigit() and fields[1].isdigit():
        start, stop, fields = int(fields[0]), int(fields[1]), fields[2:]
        if not start < stop <= MAX_SEED + 1:
            raise SpecError(f"suite {text!r}: the seed range START:STOP needs START < STOP", field="suite")
    options: dict[str, str] = {}
    for part in fields:
        key, eq, value = part.partition("=")
        if not eq or key not in ("level", "split") or key in options:
            raise SpecError(f"suite {text!r}: expected NAME@START:STOP[:level=L][:split=S], got {part!r}",
                            field="suite")
        options[key] = value
    level = options.get("level")
    if level is not None and (not level.isdigit() or int(level) not in spec_.levels):
        raise SpecError(f"suite {text!r}: generator {name!r} has no level {level!r}; its levels: "
                        f"{', '.join(map(str, spec_.levels))}", field="suite")
    split = options.get("split")
    if split is not None and split not in spec_.splits:
        raise SpecError(f"suite {text!r}: generator {name!r} makes no {split!r} tasks; its splits: "
                        f"{', '.join(spec_.splits)}", field="suite")
    return SuiteRef(name, start, stop, None if level is None else int(level), split)


class GeneratedTasks(Sequence["TaskSpec"]):
    """A generator's seed range as a sequence of tasks, each made when it is asked for (not kept)."""

    def __init__(self, ref: SuiteRef, *, split: str | None = None) -> None:
        spec_ = find(ref.name)
        if split is not None and ref.split is not None and split != ref.split:
            self.splits: tuple[str, ...] = ()  # the suite names one split, the caller asks for another
        elif split is not None or ref.split is not None:
            wanted = split or ref.split
            self.splits = (wanted,) if wanted in spec_.splits else ()
        else:
            self.splits = spec_.splits
        self.ref, self.spec = ref, spec_

    def __len__(self) -> int:
        return (self.ref.stop - self.ref.start) * len(self.splits)

    @overload
    def __getitem__(self, index: int) -> TaskSpec: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[TaskSpec]: ...

    def __getitem__(self, index: int | slice) -> TaskSpec | Sequence[TaskSpec]:
        if isinstance(index, slice):
            return _Slice(self, range(len(self))[index])
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"task {index} of {len(self)}")
        seed, split = self.ref.start + index // len(self.splits), self.splits[index % len(self.splits)]
        return generate(self.ref.name, seed, level=self.ref.level, split=split)

    def __iter__(self) -> Iterator[TaskSpec]:
        return (self[i] for i in range(len(self)))

    def __repr__(self) -> str:
        return f"GeneratedTasks({str(self.ref)!r}, splits={self.splits})"


class _Slice(Sequence["TaskSpec"]):
    def __init__(self, tasks: GeneratedTasks, indices: range) -> None:
        self.tasks, self.indices = tasks, indices

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return _Slice(self.tasks, self.indices[index])
        return self.tasks[self.indices[index]]


# --- distinct tasks ---------------------------------------------------------------------------------------

_SPACE = re.compile(r"\s+")


def content_key(task: TaskSpec) -> str:
    """What the agent and the grader see, normalised: the env id, the instruction (case and runs of
    whitespace folded), the initial state, the limits and the verifiers; not the id, split, tags, metadata or
    solution. Two tasks with the same key are the same task under two names."""
    return content_hash({"env_id": task.env_id, "instruction": _SPACE.sub(" ", task.instruction.strip().lower()),
                         "initial_state": task.initial_state, "limits": task.limits.model_dump(mode="json"),
                         "verifiers": [v.model_dump(mode="json") for v in task.verifiers]})


def solution_key(task: TaskSpec) -> str:
    """The reference solution's tool calls in order (name and decoded arguments; call ids and messages left
    out): two tasks with the same key are solved by the same actions."""
    import json

    calls = []
    for action in task.solution or ():
        for call in action.tool_calls or ():
            try:
                arguments: Any = json.loads(call.arguments)
            except ValueError:
                arguments = call.arguments
            calls.append([call.name, arguments])
    return content_hash(calls)


@dataclass(frozen=True)
class Distinct:
    """How many of ``total`` tasks are distinct (see :func:`distinct`)."""

    total: int
    by_content: int
    """Distinct :func:`content_key` values."""
    by_solution: int
    """Distinct :func:`solution_key` values."""
    distinct: int
    """Tasks whose content and whose solution no earlier task had: the honest count."""


def distinct(tasks: Iterable[TaskSpec]) -> Distinct:
    """Count distinct tasks by normalised content and by reference solution, streaming (a task is not kept)."""
    contents: set[str] = set()
    solutions: set[str] = set()
    total = both = 0
    for task in tasks:
        total += 1
        content, solution = content_key(task), solution_key(task)
        both += content not in contents and solution not in solutions
        contents.add(content)
        solutions.add(solution)
    return Distinct(total=total, by_content=len(contents), by_solution=len(solutions), distinct=both)
