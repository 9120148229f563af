"""Result records: one JSON line per finished episode, appended and made durable before it counts.

A :class:`ResultRecord` is everything the leaderboard needs about an episode, schema-versioned: the task
(id, content hash, suite, split), the env id and version, the agent (id, model, settings), the run's
config hash, the seed and run index, the attempt number, the outcome and verdict, usage and timing,
the error of an infra failure and, when asked for, the token data of the model's calls (for trainers).

Files are append-only and written two ways. :class:`JsonlWriter` makes each line one ``write`` and one
``fdatasync``. :class:`GroupWriter` (what ``envgym eval`` uses) appends entries of one line per file to
parallel files (trajectories, then records) with *group commit*: every entry queued while the previous
batch was being written (or, for a batch of a few, within a short window after) goes down in the next
batch, one ``write`` and one ``fdatasync`` per file, the
files in order (so a record is never durable before its trajectory), and only then is the batch handed
to ``on_durable``: nothing is reported done before its sync. A crash therefore leaves whole lines plus at
most a torn last line per file, which :func:`read_records` detects and (with ``repair``) cuts off,
appending it to ``FILE.torn`` (:func:`repair_tail` does the same without parsing the file). A corrupt line
anywhere else (not UTF-8, not JSON, nested too deep, not an object, not a record) is a
:class:`RecordError` naming the file, the line and the field. Lines are split on ``\\n`` only; a lone
surrogate in a string (no text, so no UTF-8) is written as U+FFFD, so every line written reads back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from pydantic import Field, ValidationError
from pydantic_core import PydanticSerializationError

from envgym._jsonl import LineError, decode_line
from envgym.errors import RecordError
from envgym.trajectory import Trajectory
from envgym.types import RECORD_SCHEMA_VERSION, Blame, FrozenModel, Outcome, Timing, Usage, Verdict


class ResultRecord(FrozenModel):
    schema_version: Literal[1] = RECORD_SCHEMA_VERSION
    run_id: str
    task_id: str
    task_hash: str
    suite: str
    split: str
    env_id: str
    env_version: int
    agent_id: str
    agent: dict[str, Any] = Field(default_factory=dict)
    config_hash: str
    seed: int | None = None
    run_index: int = 0
    attempt: int = 1
    outcome: Outcome
    score: float
    passed: bool
    verdict: Verdict | None = None
    steps: int
    usage: Usage = Usage()
    timing: Timing = Timing()
    error: str | None = None
    error_type: str | None = None
    blame: Blame | None = None
    """Whose failure ``error`` was: agent, env, verifier or infra (only infra is ``infra_error``)."""
    image_digest: str | None = None
    envgym_version: str = ""
    created_at: float = 0.0
    token_data: list[dict[str, Any]] = Field(default_factory=list)
    """The episode's model calls at token level (``from_trajectory(..., tokens=True)``; see envgym.rl.samples)."""
    host: str | None = None
    """The host the episode ran on, for diagnosis (``envgym eval --ray``; None for a local run)."""

    @property
    def key(self) -> tuple[str, int]:
        """Identity of the episode slot within a run: a rerun's record for the same key supersedes."""
        return self.task_hash, self.run_index

    @classmethod
    def from_trajectory(cls, trajectory: Trajectory, *, tokens: bool = False, **fields: Any) -> ResultRecord:
        """The record of a trajectory; ``tokens`` copies its token data too (for trainers; it is large)."""
        verdict = trajectory.verdict
        if tokens:
            fields["token_data"] = list(trajectory.token_data)
        return cls(task_id=trajectory.task_id, task_hash=trajectory.task_hash, env_id=trajectory.env_id,
                   seed=trajectory.seed, outcome=trajectory.outcome, score=trajectory.reward,
                   passed=bool(verdict and verdict.passed and trajectory.outcome is not Outcome.INFRA_ERROR),
                   verdict=verdict, steps=len(trajectory.steps), usage=trajectory.usage, timing=trajectory.timing,
                   error=trajectory.error, error_type=trajectory.error_type, blame=trajectory.blame,
                   host=trajectory.host, **fields)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def json_line(model: FrozenModel) -> bytes:
    """The model's JSON line. A lone surrogate (an agent can emit one: no text, so no UTF-8 for it) is
    written as U+FFFD rather than failing the write, which would end the run and fail again on resume."""
    try:
        return (model.model_dump_json() + "\n").encode()
    except PydanticSerializationError as exc:
        if "surrogates not allowed" not in str(exc):
            raise
    text = json.dumps(model.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":"))
    return (_LONE_SURROGATE.sub("\ufffd", text) + "\n").encode()


class JsonlWriter:
    """Append-only JSONL with one fsync'd write per line; writes are serialised and off the event loop."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = asyncio.Lock()

    def write_sync(self, model: FrozenModel) -> None:
        """Append one line and fsync it, blocking: call it from a worker thread."""
        _write_all(self._fd, json_line(model))
        _sync(self._fd)

    async def append(self, model: FrozenModel) -> None:
        async with self._lock:
            await asyncio.to_thread(self.write_sync, model)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


_sync = getattr(os, "fdatasync", os.fsync)
"""Appends need the data and the new size on disk, not the timestamps: ``fdatasync`` where there is one."""


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


T = TypeVar("T")


class GroupWriter(Generic[T]):
    """Parallel append-only JSONL files with group commit; see the module docstring.

    ``await submit(lines, item)`` queues one line per file (bytes ending in ``\\n``) and returns at once
    unless ``max_pending`` entries already wait (then it waits for room). A batch of fewer than ``window_min``
    entries waits up to ``window_s`` for more (or for ``aclose``), so the episodes finishing meanwhile share its
    sync: a run of fast episodes at concurrency 1 made a batch, a thread hop and two syncs of nearly every
    episode. A commit task writes each batch
    in a thread of its own; after the syncs it calls ``in_thread(items)`` there (blocking work such as
    exporters), then ``on_durable(items)`` on the loop, in submission order. The first error of a write,
    a sync or a callback stops the writer: entries not yet written are dropped (never reported done), and
    the error is raised by the next ``submit`` and by ``aclose``. ``aclose`` (or leaving ``async with``)
    writes what is queued, even when the caller is being cancelled, then closes the files.
    """

    def __init__(self, paths: Sequence[str | Path], on_durable: Callable[[list[T]], None], *,
                 in_thread: Callable[[list[T]], None] | None = None, max_pending: int = 4096,
                 window_s: float = 0.004, window_min: int = 16) -> None:
        self.paths = [Path(p) for p in paths]
        self._on_durable, self._in_thread, self._max_pending = on_durable, in_thread, max_pending
        self._window_s, self._window_min = window_s, window_min
        self._pending: list[tuple[Sequence[bytes], T]] = []
        self._fds: list[int] = []
        for path in self.paths:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fds.append(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644))
        self._wake = asyncio.Event()
        self._enough = asyncio.Event()  # window_min entries wait (or the writer closes): the window ends
        self._room = asyncio.Event()
        self._closing = False
        self._task: asyncio.Task[None] | None = None
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="envgym-commit")
        self.batches = 0
        """Batches written so far (each one sync per file)."""

    async def submit(self, lines: Sequence[bytes], item: T) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._commit(), name="envgym-group-commit")
        while True:
            if self._task.done() or self._closing:
                self._raise_failure()
                raise RuntimeError("the writer is closed")
            if len(self._pending) < self._max_pending:
                break
            self._room.clear()
            await self._room.wait()
        self._pending.append((lines, item))
        self._wake.set()
        if len(self._pending) >= self._window_min:
            self._enough.set()

    def _raise_failure(self) -> None:
        if self._task is not None and self._task.done() and not self._task.cancelled():
            error = self._task.exception()
            if error is not None:
                raise error

    async def _commit(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            while not self._pending:
                if self._closing:
                    return
                self._wake.clear()
                await self._wake.wait()
            if len(self._pending) < self._window_min and not self._closing and self._window_s > 0:
                self._enough.clear()  # a few entries only: let the episodes finishing meanwhile share the sync
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._window_s):
                        await self._enough.wait()
            batch, self._pending = self._pending, []
            self._room.set()
            items = [item for _, item in batch]
            try:
                await loop.run_in_executor(self._thread, self._write, batch, items)
            finally:
                self._room.set()  # wake a waiting submit, also to see that the writer failed
            self.batches += 1
            self._on_durable(items)

    def _write(self, batch: list[tuple[Sequence[bytes], T]], items: list[T]) -> None:
        for index, fd in enumerate(self._fds):  # a later file's lines (records) only after the earlier synced
            _write_all(fd, b"".join(lines[index] for lines, _ in batch))
            _sync(fd)
        if self._in_thread is not None:
            self._in_thread(items)

    async def aclose(self) -> None:
        """Write what is queued, stop the commit task, close the files; raise the writer's error if any."""
        self._closing = True
        self._wake.set()
        self._enough.set()
        interrupted = False
        try:
            while self._task is not None and not self._task.done():
                try:
                    await asyncio.shield(self._task)
                except asyncio.CancelledError:
                    if self._task.cancelled():
                        raise
                    interrupted = True  # Ctrl-C meanwhile: the queued lines still go down, then it propagates
                except Exception:
                    break
        finally:
            self._thread.shutdown(wait=True)
            for fd in self._fds:
                os.close(fd)
            self._fds = []
        if interrupted:
            raise asyncio.CancelledError
        self._raise_failure()

    async def __aenter__(self) -> GroupWriter[T]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def repair_tail(path: str | Path) -> bool:
    """Cut a torn last line (no ``\\n`` at the end) off ``path`` into ``PATH.torn``, without parsing the file
    (for files too large to read back whole, like trajectories); whether there was one."""
    path = Path(path)
    if not path.exists():
        return False
    with open(path, "r+b") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return False
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return False
        start, block = size, 1 << 16
        while start > 0:  # find the last newline, reading backwards a block at a time
            start = max(0, start - block)
            handle.seek(start)
            chunk = handle.read(min(block, size - start))
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                start += cut + 1
                break
        handle.seek(start)
        tail = handle.read()
        with open(path.with_suffix(path.suffix + ".torn"), "ab") as backup:
            backup.write(tail + b"\n")
        handle.truncate(start)
        os.fsync(handle.fileno())
    return True


def _read_numbered(path: Path, repair: bool) -> tuple[list[tuple[int, dict[str, Any]]], bool]:
    """``(line number, object)`` per line, split on ``\\n`` only (:mod:`envgym._jsonl`), and whether it was torn."""
    if not path.exists():
        return [], False
    data = path.read_bytes()
    lines = data.split(b"\n")
    tail = lines.pop()  # empty when the file ends with a newline
    rows: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = decode_line(line)
        except LineError as exc:
            if number == len(lines) and not tail:
                tail = line  # a last line that is complete but garbled counts as torn too
                break
            raise RecordError(f"{path}:{number}: corrupt record ({exc}); not a torn last line") from None
        if not isinstance(row, dict):
            raise RecordError(f"{path}:{number}: corrupt record (a JSON {type(row).__name__}, not an object)")
        rows.append((number, row))
    torn = bool(tail.strip())
    if torn and repair:
        keep = data[: data.rfind(tail)]
        with open(path.with_suffix(path.suffix + ".torn"), "ab") as backup:  # appended: earlier crashes' stay
            backup.write(tail + b"\n")
        with open(path, "r+b") as handle:
            handle.truncate(len(keep))
            os.fsync(handle.fileno())
    return rows, torn


def read_jsonl(path: str | Path, *, repair: bool = False) -> tuple[list[dict[str, Any]], bool]:
    """Lines of a JSONL file as dicts, and whether a torn last line was found (and cut off if ``repair``).

    Any other line that is not a UTF-8 JSON object is a :class:`RecordError` naming the file and line.
    """
    rows, torn = _read_numbered(Path(path), repair)
    return [row for _, row in rows], torn


def read_records(path: str | Path, *, repair: bool = False) -> tuple[list[ResultRecord], bool]:
    rows, torn = _read_numbered(Path(path), repair)
    records = []
    for number, row in rows:
        try:
            records.append(ResultRecord.model_validate(row))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"])
            raise RecordError(f"{path}:{number}: the record does not match the schema: {first['msg']} "
                              f"(field {field!r})") from None
    return records, torn


def latest(records: list[ResultRecord]) -> list[ResultRecord]:
    """The last attempt per (task, run index): reruns of infra errors supersede the failed attempt."""
    by_key: dict[tuple[str, int], ResultRecord] = {}
    for record in records:
        by_key[record.key] = record
    return list(by_key.values())
