"""Task specifications and task files.

A :class:`TaskSpec` is one task as data: the env id, the instruction, the initial state, limits, the
verifier specs and the reference solution. Its identity is its content hash. Task files are JSON Lines
(``tasks/<suite>/*.jsonl``), one task a line, UTF-8, split on ``\n`` only (:mod:`envgym._jsonl`); a bad
line (not UTF-8, not JSON, nested deeper than :data:`MAX_DEPTH`, not a valid task, an invalid regex in a
verifier) raises :class:`SpecError` naming the file, the line and the field. A task id appears once in a
suite, across all its files. A suite is a registered name (:func:`envgym.register_suite`; the bundled
folders of the ``envgym_tasks`` data package register themselves through the same entry-point hook a
plug-in uses, :func:`register_bundled_suites`), a folder of ``*.jsonl`` files, or one such file; or a task
generator's seed range, ``NAME@START:STOP`` (:mod:`envgym.generate`), whose tasks are made as they are read.
"""

from __future__ import annotations

import difflib
import functools
import json
import random
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from envgym import generate, registry
from envgym._jsonl import LineError, decode_line, depth, split_lines
from envgym.errors import EnvError, SpecError, TaskMismatch
from envgym.types import TASK_SCHEMA_VERSION, Action, FrozenModel, Limits, content_hash
from envgym.verify.spec import VerifierSpec

Split = Literal["train", "test", "dev"]


class TaskSpec(FrozenModel):
    """One task. Grading fields (``verifiers``, ``solution``) are never shown to the agent."""

    schema_version: Literal[1] = TASK_SCHEMA_VERSION
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.\-]*$")
    env_id: str
    split: Split = "test"
    instruction: str
    initial_state: dict[str, Any] = Field(default_factory=dict)
    limits: Limits = Limits()
    verifiers: tuple[VerifierSpec, ...] = Field(min_length=1)
    solution: tuple[Action, ...] | None = None
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] = Field(default_factory=dict)

    @functools.cached_property
    def hash(self) -> str:
        """Content hash: the task's identity in records and resume."""
        return content_hash(self.model_dump(mode="json"))

    @functools.cached_property
    def initial_state_hash(self) -> str:
        """Content hash of :attr:`initial_state` alone: tasks that start from the same state (a suite's tasks
        often share one world) share it, so an env can build that state once for all of them. Worked out when
        first asked for (~0.2 ms for a tool suite's 20 KB state)."""
        return content_hash(self.initial_state)


def _describe(error: ValidationError) -> tuple[str, str]:
    first = error.errors()[0]
    field = ".".join(str(part) for part in first["loc"])
    return first["msg"].removeprefix("Value error, "), field


MAX_DEPTH = 64
"""How deeply a task line may nest lists and objects (the bundled suites need 9; the hash needs < 255)."""


_PARSED_MAX = 64
_parsed: dict[Path, tuple[bytes, int, list[tuple[int, TaskSpec]]]] = {}
"""Task files parsed in this process, with the bytes they were parsed from and the verifier kinds' generation
(a plug-in kind's spec is an instance of the model registered then): a file read again with the same bytes under
the same kinds (``envgym eval`` plans a run twice) hands back the same frozen tasks, hashes already worked out."""


def _read_numbered(path: Path) -> list[tuple[int, TaskSpec]]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SpecError(f"cannot read task file: {exc.strerror}", path=str(path)) from exc
    key = path.absolute()
    cached = _parsed.get(key)
    if cached is not None and cached[0] == data and cached[1] == registry.verifiers_generation():
        return list(cached[2])
    tasks = _parse_tasks(path, data)
    if len(_parsed) >= _PARSED_MAX:
        _parsed.pop(next(iter(_parsed)))
    _parsed[key] = (data, registry.verifiers_generation(), tasks)  # after the parse: it may have loaded plug-in kinds
    return list(tasks)


def _parse_tasks(path: Path, data: bytes) -> list[tuple[int, TaskSpec]]:
    tasks: list[tuple[int, TaskSpec]] = []
    seen: dict[str, int] = {}
    for number, line in split_lines(data):
        if not line.strip() or line.lstrip().startswith(b"//"):
            continue
        try:
            raw = decode_line(line)
        except LineError as exc:
            raise SpecError(str(exc), path=str(path), line=number) from None
        if depth(raw) > MAX_DEPTH:
            raise SpecError(f"nested deeper than {MAX_DEPTH} levels", path=str(path), line=number)
        try:
            task = TaskSpec.model_validate(raw)
        except ValidationError as exc:
            message, field = _describe(exc)
            raise SpecError(message, path=str(path), line=number, field=field) from exc
        if task.id in seen:
            raise SpecError(f"duplicate task id {task.id!r} (first on line {seen[task.id]})",
                            path=str(path), line=number, field="id")
        seen[task.id] = number
        tasks.append((number, task))
    return tasks


def load_tasks(path: str | Path) -> list[TaskSpec]:
    """Read one JSONL task file (see :mod:`envgym._jsonl`). Blank lines and lines starting with ``//`` are skipped."""
    return [task for _, task in _read_numbered(Path(path))]


def write_tasks(path: str | Path, tasks: Iterable[TaskSpec]) -> None:
    """Write tasks as JSONL, one per line, in the given order."""
    lines = [json.dumps(t.model_dump(mode="json"), ensure_ascii=False) for t in tasks]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def suites_root(name: str | None = None) -> Path:
    """The folder the bundled suites live in (``tasks/`` in a checkout); given a suite ``name``, that suite's
    folder as the registry knows it: a registered suite's own folder (the one holding its file, for a suite
    registered as one ``.jsonl``), else where a new bundled suite of that name goes, ``suites_root() / name``.
    Authoring scripts find their suites here, never by a path relative to their own file."""
    # envgym_tasks is a namespace package (tasks/ holds data only; an __init__.py there would make a bare
    # `tasks` importable from the checkout root), and importlib.resources cannot read an editable install's
    # namespace package, so its folder is taken from __path__ (the first entry; an editable install appends
    # a placeholder).
    import envgym_tasks

    root = Path(next(iter(envgym_tasks.__path__)))
    if name is None:
        return root
    if not registry.SUITE_NAME_RE.match(name):
        raise SpecError(f"malformed suite name {name!r}: lowercase letters, digits, '_', '.', '-'")
    registered = registry.suite_spec(name)
    if registered is None:
        return root / name
    path = Path(registered.path)
    return path.parent if path.suffix == ".jsonl" else path


def write_suite(name: str, tasks: Iterable[TaskSpec], *, file: str | None = None, readme: str | None = None,
                folder: str | Path | None = None, log: Callable[[str], None] | None = print) -> Path:
    """Write suite ``name``'s task file (every authoring script and importer writes its suites through this one
    function) and return its path.

    The file goes into ``folder`` if given (an import into a folder the user named), else into the suite's
    folder as the registry knows it (:func:`suites_root`: a new suite is a bundled one, ``suites_root()/name``;
    a malformed name is a :class:`SpecError`).
    ``file`` is its name inside that folder, may hold a subfolder (``without-reference/tasks.jsonl``, which no
    suite loads), and defaults to ``tasks.jsonl`` (the registered file, for a suite registered as one file).
    ``readme`` is written to the folder's ``README.md`` (its first line is the suite's description in the
    registry). The tasks are written by :func:`write_tasks`, byte for byte the same for the same tasks, so a
    regenerated suite keeps every task hash. ``log`` (default ``print``; None: silent) is told what was written.
    """
    tasks = list(tasks)
    if folder is not None:
        where = Path(folder)
    else:
        where = suites_root(name)
        registered = registry.suite_spec(name)
        if file is None and registered is not None and registered.path.endswith(".jsonl"):
            file = Path(registered.path).name
    path = where / (file or "tasks.jsonl")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_tasks(path, tasks)
    if readme is not None:
        (where / "README.md").write_text(readme, encoding="utf-8")
    if log is not None:
        log(f"wrote {len(tasks)} tasks to {path}")
    return path


def list_suites() -> list[str]:
    """Names of every registered suite: the bundled ones and those any installed plug-in registers."""
    return registry.list_suites()


SPLITS: tuple[str, ...] = ("train", "test", "dev")


def suite_files(name: str | Path) -> list[Path]:
    """The task files of a registered suite name, a folder, or one JSONL file (SpecError if none: a generator's
    suite has no files)."""
    if isinstance(name, str) and generate.parse_ref(name) is not None:
        raise SpecError(f"suite {name!r} is a task generator's: it has no task files (envgym tasks generate "
                        f"{name.partition('@')[0]} --out FILE writes some)")
    registered = registry.suite_spec(str(name)) if isinstance(name, str) and "/" not in name else None
    candidate = Path(registered.path) if registered is not None else Path(name)
    if candidate.suffix == ".jsonl" or candidate.is_dir():
        files = [candidate] if candidate.suffix == ".jsonl" else sorted(candidate.glob("*.jsonl"))
    else:
        known = list_suites()
        close = difflib.get_close_matches(str(name), known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; known suites: {', '.join(known)}"
        raise SpecError(f"unknown suite {str(name)!r}{hint} (a plug-in names one with envgym.register_suite)")
    if not files:
        raise SpecError(f"no task files in {str(name)!r}")
    return files


def load_suite(name: str | Path, *, split: str | None = None) -> Sequence[TaskSpec]:
    """Tasks of a registered suite, a folder, or one JSONL file (a list); or of a generator's seed range,
    ``NAME@START:STOP[:level=L][:split=S]`` (a :class:`~envgym.generate.GeneratedTasks`, whose tasks are made
    as they are read); optionally one split only (train, test, dev)."""
    if split is not None and split not in SPLITS:
        raise SpecError(f"unknown split {split!r}; the splits are {', '.join(SPLITS)}")
    ref = generate.parse_ref(name) if isinstance(name, str) else None
    if ref is not None:
        return generate.GeneratedTasks(ref, split=split)
    tasks = [task for _, _, task in numbered_suite(name)]
    if split is not None:
        tasks = [t for t in tasks if t.split == split]
    return tasks


def numbered_suite(name: str | Path) -> list[tuple[Path, int, TaskSpec]]:
    """Every task of a suite's files (not a generator's) with the file and line it is on."""
    tasks: list[tuple[Path, int, TaskSpec]] = []
    first: dict[str, tuple[Path, int]] = {}  # task id -> where it was first seen
    for file in suite_files(name):
        for number, task in _read_numbered(file):
            if task.id in first:  # two copies would run twice and collide in records (same hash, same key)
                where, line = first[task.id]
                raise SpecError(f"task {task.id!r} is also in {where}:{line}", path=str(file), line=number, field="id")
            first[task.id] = (file, number)
            tasks.append((file, number, task))
    return tasks


def register_bundled_suites() -> None:
    """The ``envgym.environments`` hook of the bundled task data (``envgym_tasks``): every folder of it that
    holds task files becomes a named suite, registered exactly as a plug-in registers its own."""
    root = suites_root()
    for folder in sorted(root.iterdir()):
        if folder.is_dir() and any(folder.glob("*.jsonl")):
            registry.register_suite(folder.name, folder, description=_suite_description(folder))


def _suite_description(folder: Path) -> str:
    readme = folder / "README.md"
    if not readme.is_file():
        return ""
    for line in readme.read_text(encoding="utf-8").splitlines():
        text = line.strip().lstrip("#").strip()
        if text:
            return text[:200]
    return ""


class SuiteTasks:
    """The task source of one env: what ``reset(task=...)`` resolves against. ``envgym.make`` gives every env the
    one of its spec (:meth:`of`): the tasks of its registered suites that are for its id, read when first needed.
    An env never picks its own tasks; :meth:`envgym.env.Env.choose_task` asks its source."""

    def __init__(self, suites: Sequence[str] = (), env_id: str | None = None, *,
                 tasks: Sequence[TaskSpec] | None = None, sql_state: bool | Callable[[TaskSpec], bool] = True) -> None:
        self.suites, self.env_id = tuple(suites), env_id
        self.sql_state = sql_state
        """Whether a task's state answers SQL: a flag, or (an env's :meth:`~envgym.env.Env.answers_sql`) per task."""
        self._tasks: list[TaskSpec] | None = None
        if tasks is not None:
            self._tasks = [self.admit(t) for t in tasks]

    @classmethod
    def of(cls, spec: registry.EnvSpec | None) -> SuiteTasks:
        """The source of an env registered as ``spec`` (None: an env built by hand, which serves no suite); it
        refuses tasks whose checks the env's state cannot answer (its ``sql_state`` capability)."""
        if spec is None:
            return cls()
        factory = registry.load_entry_point(spec.entry_point)
        return cls(spec.suites, spec.id, sql_state=getattr(factory, "answers_sql", spec.capabilities["sql_state"]))

    @property
    def tasks(self) -> list[TaskSpec]:
        """Every task this source serves, all splits."""
        if self._tasks is None:
            self._tasks = [self.admit(t, path, line) for s in self.suites for path, line, t in _located(s)
                           if t.env_id == self.env_id]
        return self._tasks

    def admit(self, task: TaskSpec, path: Path | None = None, line: int | None = None) -> TaskSpec:
        """``task`` if its env can run it; else a :class:`SpecError` naming the field (and the file and line, when
        given): a rubric ``sql`` check on a state that answers no SQL."""
        if self.sql_state is True:
            return task
        where = _sql_check(task.verifiers, "verifiers")
        if where is not None and not (self.sql_state(task) if callable(self.sql_state) else self.sql_state):
            raise SpecError(f"task {task.id!r} has a sql check, but {self.env_id or 'its env'}'s state answers no "
                            "SQL for it (sql_state): check its files or the store",
                            path=str(path) if path is not None else None, line=line, field=where)
        return task

    def choose(self, task: TaskSpec | str | None, rng: random.Random, options: dict[str, Any] | None = None,
               *, label: str = "env") -> TaskSpec:
        """``task`` itself (a task for another env id is :class:`TaskMismatch`), the task of that id, or (None) one
        drawn with ``rng`` from every split, or from ``options["split"]``. ``label`` names the env in errors."""
        if isinstance(task, TaskSpec):
            if self.env_id is not None and task.env_id != self.env_id:
                raise TaskMismatch(f"task {task.id!r} is for {task.env_id!r}, not {self.env_id!r}; "
                                   f"make({task.env_id!r}) runs it")
            return self.admit(task)
        if task is not None and not isinstance(task, str):
            raise TypeError(f"{label}: reset(task=...) takes a TaskSpec or a task id, not {type(task).__name__}")
        if isinstance(task, str) and (made := self._generated(task)) is not None:
            return self.admit(made)
        pool = self.tasks
        if not pool:
            raise EnvError(f"{label}: reset() needs a task (no suite is registered for it)")
        if isinstance(task, str):
            found = next((t for t in pool if t.id == task), None)
            if found is None:
                close = difflib.get_close_matches(task, [t.id for t in pool], n=3)
                hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
                raise EnvError(f"{label}: no task {task!r} in its suites ({', '.join(self.suites)}){hint}")
            return found
        split = (options or {}).get("split")
        if split is not None:
            if split not in SPLITS:
                raise EnvError(f"{label}: unknown split {split!r}; the splits are {', '.join(SPLITS)}")
            pool = [t for t in pool if t.split == split]
            if not pool:
                raise EnvError(f"{label}: its suites have no {split} tasks")
        return rng.choice(pool)


    def _generated(self, task_id: str) -> TaskSpec | None:
        """The task a generator's id names (``NAME.SPLIT.lLEVEL.sSEED``), made now, if a generator of that name
        makes tasks for this env; else None."""
        parsed = generate.parse_task_id(task_id)
        if parsed is None:
            return None
        name, split, level, seed = parsed
        found = registry.generator_spec(name)
        if found is None or (self.env_id is not None and found.env_id != self.env_id):
            return None
        try:
            return generate.generate(name, seed, level=level, split=split)
        except SpecError as exc:
            raise EnvError(f"task {task_id!r}: {exc}") from exc


def _located(name: str) -> list[tuple[Path | None, int | None, TaskSpec]]:
    if generate.parse_ref(name) is not None:  # a generator's tasks are made, not on a line
        return [(None, None, t) for t in load_suite(name)]
    return list(numbered_suite(name))


def _sql_check(specs: Iterable[Any], where: str) -> str | None:
    """The field path of the first rubric ``sql`` check among ``specs`` (combinators searched), or None."""
    for i, spec in enumerate(specs):
        kind = getattr(spec, "type", None)
        if kind in ("all_of", "any_of"):
            found = _sql_check(spec.verifiers, f"{where}.{i}.verifiers")
            if found is not None:
                return found
        elif kind == "rubric":
            for j, criterion in enumerate(spec.criteria):
                if getattr(criterion.check, "type", None) == "sql":
                    return f"{where}.{i}.criteria.{j}.check"
    return None
