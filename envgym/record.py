"""Result records: one JSON line per finished episode, appended and fsync'd.

A :class:`ResultRecord` is everything the leaderboard needs about an episode, schema-versioned: the task
(id, content hash, suite, split), the env id and version, the agent (id, model, settings), the run's
config hash, the seed and run index, the attempt number, the outcome and verdict, usage and timing,
the error of an infra failure and, when asked for, the token data of the model's calls (for trainers).
Files are append-only; each record is one ``write`` followed by ``fsync``, so a crash can leave at most a
torn last line, which :func:`read_records` detects and (with ``repair``) cuts off, appending it to
``FILE.torn``. A corrupt line anywhere else (not UTF-8, not JSON, nested too deep, not an object, not a
record) is a :class:`RecordError` naming the file, the line and the field. Lines are split on ``\\n`` only;
a lone surrogate in a string (no text, so no UTF-8) is written as U+FFFD, so every line written reads back.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError
from pydantic_core import PydanticSerializationError

from envgym.errors import RecordError
from envgym.jsonl import LineError, decode_line
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


def _line(model: FrozenModel) -> bytes:
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
        os.write(self._fd, _line(model))
        os.fsync(self._fd)

    async def append(self, model: FrozenModel) -> None:
        async with self._lock:
            await asyncio.to_thread(self.write_sync, model)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _read_numbered(path: Path, repair: bool) -> tuple[list[tuple[int, dict[str, Any]]], bool]:
    """``(line number, object)`` per line, split on ``\\n`` only (:mod:`envgym.jsonl`), and whether it was torn."""
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
