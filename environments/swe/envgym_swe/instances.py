"""SWE-bench instances as data: the input of ``envgym swe import`` and the grading of ``envgym swe grade``.

An :class:`Instance` has SWE-bench's fields (``instance_id``, ``repo`` "owner/name", ``base_commit``,
``patch``, ``test_patch``, ``problem_statement``, ``FAIL_TO_PASS``, ``PASS_TO_PASS``; the last two as JSON
lists or JSON-encoded strings, as SWE-bench ships them) plus envgym's optional ``version``, ``install``
(shell command run at image build), ``test_cmd`` and ``requirements`` (pip requirement strings the host
downloads as wheels). Unknown fields (``created_at``, ``hints_text`` ...) are ignored. A bad instance raises
:class:`InstanceError` naming the instance id and the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from envgym.plugin import SpecError
from envgym.plugin.records import LineError, decode_line, split_lines

DEFAULT_INSTALL = "pip install --no-index --find-links /wheels -e ."


class InstanceError(SpecError):
    """One or more instances have missing or malformed fields; the message names each instance and field."""


class Instance(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    instance_id: str = Field(min_length=1)
    repo: str = Field(pattern=r"^[A-Za-z0-9_.\-]+/[A-Za-z0-9_.\-]+$")
    base_commit: str = Field(pattern=r"^[0-9a-f]{7,40}$")
    patch: str = Field(min_length=1)
    test_patch: str = ""
    problem_statement: str = Field(min_length=1)
    FAIL_TO_PASS: tuple[str, ...] = ()
    """Empty in a candidate not yet labelled (``envgym swe label``); the importer skips such an instance."""
    PASS_TO_PASS: tuple[str, ...] = ()
    version: str = "0"
    install: str = DEFAULT_INSTALL
    test_cmd: str | None = None
    requirements: tuple[str, ...] = ()

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", "requirements", mode="before")
    @classmethod
    def _json_list(cls, value: Any) -> Any:
        if isinstance(value, str):  # SWE-bench ships these as JSON-encoded strings
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise ValueError(f"not a JSON list: {exc.msg}") from None
        if isinstance(value, list) and not all(isinstance(v, str) and v for v in value):
            raise ValueError("every entry must be a non-empty string")
        return value

    @field_validator("version", mode="before")
    @classmethod
    def _version(cls, value: Any) -> Any:
        return "0" if value is None else str(value) if isinstance(value, int | float) else value

    @field_validator("install", mode="before")
    @classmethod
    def _install(cls, value: Any) -> Any:
        return DEFAULT_INSTALL if value in (None, "") else value


def parse_instances(rows: Iterable[dict[str, Any]], *, source: str = "instances") -> list[Instance]:
    """Validate every row; raise :class:`InstanceError` listing each bad instance and field."""
    instances, problems, seen = [], [], set()
    for number, row in enumerate(rows, start=1):
        name = row.get("instance_id") if isinstance(row, dict) else None
        label = f"instance {name!r}" if isinstance(name, str) and name else f"instance #{number}"
        if not isinstance(row, dict):
            problems.append(f"{label}: not a JSON object")
            continue
        try:
            instance = Instance.model_validate(row)
        except ValidationError as exc:
            for err in exc.errors():
                field = ".".join(str(p) for p in err["loc"][:1]) or "?"
                problems.append(f"{label}: field {field!r}: {err['msg'].removeprefix('Value error, ')}")
            continue
        if instance.instance_id in seen:
            problems.append(f"{label}: field 'instance_id': duplicate")
            continue
        seen.add(instance.instance_id)
        instances.append(instance)
    if problems:
        raise InstanceError(f"{source}: {len(problems)} problem(s):\n  " + "\n  ".join(problems))
    return instances


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Objects of a JSONL file (or of a JSON list), split on ``\\n`` only (see :mod:`envgym._jsonl`).

    A bad line (not UTF-8, not JSON, nested too deep, not an object) raises SpecError naming file and line.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SpecError(f"cannot read: {exc.strerror}", path=str(path)) from None
    if data.lstrip().startswith(b"["):
        try:
            rows = decode_line(data)
        except LineError as exc:
            raise SpecError(str(exc), path=str(path)) from None
        if not isinstance(rows, list):
            raise SpecError("expected a JSON list of objects", path=str(path))
        for number, row in enumerate(rows, start=1):
            if not isinstance(row, dict):
                raise SpecError(f"entry {number} of the list is not a JSON object", path=str(path))
        return rows
    rows = []
    for number, line in split_lines(data):
        if line.strip():
            try:
                row = decode_line(line)
            except LineError as exc:
                raise SpecError(str(exc), path=str(path), line=number) from None
            if not isinstance(row, dict):
                raise SpecError(f"a JSON {type(row).__name__}, not an object", path=str(path), line=number)
            rows.append(row)
    return rows


def check_predictions(preds: list[Any]) -> list[Any]:
    """SWE-bench predictions, if each is an object with a string ``instance_id`` and a string or null
    ``model_patch``; else SpecError naming the prediction and the field (``envgym swe grade``'s input)."""
    for number, pred in enumerate(preds, start=1):
        if not isinstance(pred, Mapping):
            raise SpecError(f"prediction {number}: not a JSON object")
        if not isinstance(pred.get("instance_id"), str) or not pred["instance_id"]:
            raise SpecError(f"prediction {number}: instance_id must be a non-empty string", field="instance_id")
        if not isinstance(pred.get("model_patch"), str | None):
            raise SpecError(f"prediction {number} ({pred['instance_id']}): model_patch must be a string or null",
                            field="model_patch")
    return preds


def load_instances(path: str | Path) -> list[Instance]:
    return parse_instances(read_jsonl(path), source=str(path))
