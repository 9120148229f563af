"""Tasks as Hugging Face ``datasets`` that come back with the same content hashes.

Reading a task file with ``datasets.load_dataset("json", ...)`` does not give the tasks back. Arrow infers
one type per field across all rows: date-like strings become timestamps (``"2024-06-13"`` returns as a
``datetime`` that dumps as ``"2024-06-13T00:00:00"``), an integer in a field another row holds a float in
becomes a float (``1`` returns as ``1.0``), and objects whose keys differ between rows fall back to
``datasets.Json()`` (``pyarrow.json`` itself fills the keys a row lacked with ``None``). So
``TaskSpec.model_validate(row)`` builds another task with another hash: every task of ``tool-retail``,
``tool-assistant`` and ``web-shop`` (datasets 5.2). Declaring the nested fields ``Json()`` is no fix: it
re-encodes through pandas' ujson, which reads ``5e-324`` as ``0.0``, the largest double as ``inf`` and
refuses integers beyond 64 bits.

The helpers here store each task as its exact JSON text (what a task file holds on its line) in one
string column, ``task``, beside plain string columns for browsing and filtering: ``id``, ``env_id``,
``split``, ``instruction``, ``tags`` (a list) and ``hash``. Reading parses only ``task``, through the same
checks as a task file; a browsing column that disagrees with its task (edited with ``map``, say) is a
:class:`SpecError` rather than silently ignored. Errors name the row (its index, ``ds[i]``).

- :func:`to_dataset` / :func:`from_dataset`: tasks to a ``datasets.Dataset`` and back.
- :func:`load_suite_dataset`: a suite (as :func:`envgym.load_suite` resolves it) as a dataset.
- :func:`save_to_disk` / :func:`load_from_disk`: through Arrow files in a folder; nothing touches the Hub.

A plain JSONL suite file reads faithfully as text, one row a line, parsed by envgym::

    ds = datasets.load_dataset("text", data_files="tasks/tool-retail/tasks.jsonl", split="train")
    tasks = envgym.datasets.from_dataset(ds, column="text")   # blank and // lines skipped, as in a file

``datasets`` is the ``train`` extra; it is imported inside the functions, so importing this module costs
nothing without it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from envgym._jsonl import LineError, decode_line, depth
from envgym.errors import SpecError
from envgym.task import MAX_DEPTH, TaskSpec, _describe, load_suite

if TYPE_CHECKING:
    import datasets

TASK_COLUMN = "task"
"""The column holding each task's JSON text; the only one :func:`from_dataset` reads tasks from."""

_BROWSING = ("id", "env_id", "split", "instruction", "tags", "hash")


def _features() -> datasets.Features:
    import datasets

    text = datasets.Value("string")
    return datasets.Features({
        "id": text, "env_id": text, "split": text, "instruction": text,
        "tags": datasets.List(text), "hash": text, TASK_COLUMN: text,
    })


def _browsing(task: TaskSpec) -> dict[str, Any]:
    return {"id": task.id, "env_id": task.env_id, "split": task.split, "instruction": task.instruction,
            "tags": list(task.tags), "hash": task.hash}


def to_dataset(tasks: Iterable[TaskSpec]) -> datasets.Dataset:
    """A dataset with one row a task: the browsing columns and ``task``, the task's exact JSON text."""
    import datasets

    columns: dict[str, list[Any]] = {name: [] for name in (*_BROWSING, TASK_COLUMN)}
    for task in tasks:
        for name, value in _browsing(task).items():
            columns[name].append(value)
        columns[TASK_COLUMN].append(json.dumps(task.model_dump(mode="json"), ensure_ascii=False))
    return datasets.Dataset.from_dict(columns, features=_features())


def _parse(row: int, text: str) -> TaskSpec:
    try:
        raw = decode_line(text.encode("utf-8", "surrogatepass"))
    except LineError as exc:
        raise SpecError(f"row {row}: {exc}", field=TASK_COLUMN) from None
    if depth(raw) > MAX_DEPTH:
        raise SpecError(f"row {row}: nested deeper than {MAX_DEPTH} levels", field=TASK_COLUMN)
    try:
        return TaskSpec.model_validate(raw)
    except ValidationError as exc:
        message, field = _describe(exc)
        raise SpecError(f"row {row}: {message}", field=field) from exc


def from_dataset(ds: datasets.Dataset | datasets.IterableDataset, *, column: str = TASK_COLUMN) -> list[TaskSpec]:
    """The tasks of a dataset :func:`to_dataset` wrote (or of any dataset whose ``column`` holds task JSON).

    Rows are read in order; a task id may appear once. With a column other than ``task`` (the ``text``
    of ``load_dataset("text", ...)``), blank rows and rows starting with ``//`` are skipped as in a task file.
    :class:`SpecError` names the row for a missing column, a value that is not a task's JSON text, an
    invalid task, a duplicate id or a browsing column that disagrees with its task.
    """
    import datasets

    if isinstance(ds, datasets.DatasetDict | datasets.IterableDatasetDict):
        splits = sorted(ds)
        raise SpecError(f"a DatasetDict with splits {splits}; pass one of them, e.g. ds[{(splits or ['train'])[0]!r}]")
    names = ds.column_names
    if names is not None and column not in names:
        _missing(0, column, names)
    tasks: list[TaskSpec] = []
    first: dict[str, int] = {}
    for index, row in enumerate(ds):
        if column not in row:
            _missing(index, column, list(row))
        text = row[column]
        if not isinstance(text, str):
            raise SpecError(f"row {index}: the {column!r} column holds {text!r:.60}, not a task's JSON text",
                            field=column)
        if column != TASK_COLUMN and (not text.strip() or text.lstrip().startswith("//")):
            continue
        task = _parse(index, text)
        if column == TASK_COLUMN:
            for name, value in _browsing(task).items():
                if name in row and row[name] != value:
                    raise SpecError(f"row {index}: the {name!r} column says {row[name]!r} but the task says {value!r}; "
                                    f"the other columns are copies of the {TASK_COLUMN!r} column: change the task "
                                    "and write the dataset again with to_dataset", field=name)
        if task.id in first:
            raise SpecError(f"row {index}: duplicate task id {task.id!r} (first on row {first[task.id]})", field="id")
        first[task.id] = index
        tasks.append(task)
    return tasks


def _missing(row: int, column: str, names: list[str]) -> None:
    raise SpecError(f"row {row}: no {column!r} column (columns: {', '.join(names) or 'none'}); this dataset was not "
                    "written by envgym.datasets.to_dataset. A plain task file's rows are other tasks (Arrow's "
                    "inference changes them): read it with load_dataset('text', ...) and pass column='text'",
                    field=column)


def load_suite_dataset(name: str | Path, split: str | None = None) -> datasets.Dataset:
    """A suite (a name, a folder or one JSONL file, as :func:`envgym.load_suite` takes it) as a dataset."""
    return to_dataset(load_suite(name, split=split))


def save_to_disk(tasks: Iterable[TaskSpec], path: str | Path) -> None:
    """Write the tasks as a dataset folder (``Dataset.save_to_disk``); read it with :func:`load_from_disk`."""
    ds = to_dataset(tasks)
    # datasets writes no shard for an empty dataset, and load_from_disk then fails with an IndexError
    ds.save_to_disk(str(path), num_shards=1 if ds.num_rows == 0 else None)


def load_from_disk(path: str | Path) -> list[TaskSpec]:
    """The tasks of a folder :func:`save_to_disk` (or ``to_dataset(...).save_to_disk``) wrote."""
    import datasets

    return from_dataset(datasets.load_from_disk(str(path)))
