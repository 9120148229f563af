"""envgym.datasets: tasks through Hugging Face ``datasets`` keep their content hashes.

The first tests show why the helpers exist: reading a task file with ``load_dataset("json", ...)`` gives
other tasks (Arrow turns date strings into timestamps), and declaring the nested fields ``Json()`` is not a
fix (floats re-encoded through pandas' ujson). Everything runs offline: local files only, the Hub off.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envgym import datasets as edatasets
from envgym.errors import SpecError
from envgym.task import TaskSpec, load_suite, load_tasks, write_tasks

datasets = pytest.importorskip("datasets")

SAMPLE = 12  # tasks per suite: first, last and an even spread between (the full set is ~450 tasks)


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No Hub: the flags datasets read at import are set again in case it was imported before this test."""
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.setenv(name, "1")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")
    datasets.disable_progress_bars()


def _sample(tasks: list[TaskSpec]) -> list[TaskSpec]:
    if len(tasks) <= SAMPLE:
        return tasks
    step = (len(tasks) - 1) / (SAMPLE - 1)
    return [tasks[round(i * step)] for i in range(SAMPLE)]


TASKS = Path(__file__).resolve().parents[1] / "tasks"
SUITES = sorted(p.name for p in TASKS.iterdir() if p.is_dir() and any(p.glob("*.jsonl")))
RETAIL = TASKS / "tool-retail" / "tasks.jsonl"


def test_naive_load_dataset_changes_task_hashes(tmp_path: Path) -> None:
    """The bug: every task of tool-retail comes back from ``load_dataset("json")`` as another task."""
    path = RETAIL
    tasks = load_tasks(path)
    ds = datasets.load_dataset("json", data_files=str(path), split="train", cache_dir=str(tmp_path))
    placed_at = ds[0]["initial_state"]["orders"][0]["placed_at"]
    assert tasks[0].initial_state["orders"][0]["placed_at"] == "2024-06-13"
    assert repr(placed_at) == "datetime.datetime(2024, 6, 13, 0, 0)"  # a date string became a timestamp
    naive = [TaskSpec.model_validate(row) for row in ds]
    assert [t.id for t in naive] == [t.id for t in tasks]
    assert all(n.hash != t.hash for n, t in zip(naive, tasks, strict=True))


def test_naive_load_dataset_turns_an_int_into_a_float(tmp_path: Path) -> None:
    """A field one row holds an int in and another a float: both come back as floats (tool-codes has no dates)."""
    base = load_suite(TASKS / "tool-codes")[:2]
    tasks = [TaskSpec.model_validate({**t.model_dump(mode="json"), "metadata": {"weight": w}})
             for t, w in zip(base, (1, 1.5), strict=True)]
    write_tasks(tmp_path / "t.jsonl", tasks)
    ds = datasets.load_dataset("json", data_files=str(tmp_path / "t.jsonl"), split="train",
                               cache_dir=str(tmp_path / "cache"))
    assert repr(ds[0]["metadata"]["weight"]) == "1.0"
    assert TaskSpec.model_validate(ds[0]).hash != tasks[0].hash
    assert [t.hash for t in edatasets.from_dataset(edatasets.to_dataset(tasks))] == [t.hash for t in tasks]


def test_json_features_are_no_fix_floats_lose_precision(tmp_path: Path) -> None:
    """Declaring the nested fields ``Json()`` keeps dates, but its ujson turns 5e-324 into 0.0."""
    base = load_suite(RETAIL.parent)[0]
    task = TaskSpec.model_validate({**base.model_dump(mode="json"), "metadata": {"tiny": 5e-324}})
    write_tasks(tmp_path / "t.jsonl", [task])
    strings = {"id", "env_id", "split", "instruction"}
    features = datasets.Features({
        name: datasets.Value("string") if name in strings else datasets.Value("int64") if name == "schema_version"
        else datasets.List(datasets.Value("string")) if name == "tags" else datasets.Json()
        for name in TaskSpec.model_fields
    })
    ds = datasets.load_dataset("json", data_files=str(tmp_path / "t.jsonl"), split="train", features=features,
                               cache_dir=str(tmp_path / "cache"))
    row = {k: v for k, v in ds[0].items() if v is not None}
    assert row["metadata"] == {"tiny": 0.0}
    assert TaskSpec.model_validate(row).hash != task.hash
    assert edatasets.from_dataset(edatasets.to_dataset([task]))[0].hash == task.hash


@pytest.mark.parametrize("suite", SUITES)
def test_every_bundled_suite_round_trips(suite: str, tmp_path: Path) -> None:
    tasks = load_suite(str(TASKS / suite))
    ds = edatasets.to_dataset(tasks)
    assert ds.num_rows == len(tasks)
    assert ds["id"] == [t.id for t in tasks]
    assert ds["hash"] == [t.hash for t in tasks]
    back = edatasets.from_dataset(ds)
    assert [t.hash for t in back] == [t.hash for t in tasks]
    assert back == tasks

    sample = _sample(tasks)
    edatasets.save_to_disk(sample, tmp_path / suite)
    assert [t.hash for t in edatasets.load_from_disk(tmp_path / suite)] == [t.hash for t in sample]


@pytest.mark.parametrize("suite", SUITES)
def test_plain_jsonl_read_as_text_keeps_hashes(suite: str, tmp_path: Path) -> None:
    """The documented way to read a plain suite file with datasets: its lines as text, parsed by envgym."""
    for path in sorted((TASKS / suite).glob("*.jsonl")):
        ds = datasets.load_dataset("text", data_files=str(path), split="train", cache_dir=str(tmp_path))
        assert [t.hash for t in edatasets.from_dataset(ds, column="text")] == [t.hash for t in load_tasks(path)]


def test_text_rows_skip_blank_and_comment_lines_like_a_task_file(tmp_path: Path) -> None:
    task = load_suite(RETAIL.parent)[0]
    line = json.dumps(task.model_dump(mode="json"), ensure_ascii=False)
    (tmp_path / "t.jsonl").write_text(f"// a comment\n\n{line}\n", encoding="utf-8")
    ds = datasets.load_dataset("text", data_files=str(tmp_path / "t.jsonl"), split="train",
                               cache_dir=str(tmp_path / "cache"))
    assert ds.num_rows == 3
    assert edatasets.from_dataset(ds, column="text") == [task] == load_tasks(tmp_path / "t.jsonl")


def test_load_suite_dataset_filters_by_split() -> None:
    ds = edatasets.load_suite_dataset(RETAIL.parent, split="train")
    expected = load_suite(RETAIL.parent, split="train")
    assert 0 < ds.num_rows == len(expected) < len(load_suite(RETAIL.parent))
    assert set(ds["split"]) == {"train"}
    assert ds.features["task"] == datasets.Value("string")
    assert [t.hash for t in edatasets.from_dataset(ds)] == [t.hash for t in expected]


def test_browsing_columns_filter_and_the_tasks_still_round_trip() -> None:
    tasks = load_suite(TASKS / "tool-assistant")
    ds = edatasets.to_dataset(tasks).filter(lambda row: row["split"] == "test")
    assert [t.hash for t in edatasets.from_dataset(ds)] == [t.hash for t in tasks if t.split == "test"]


def test_dataset_without_task_column_names_row_and_column(tmp_path: Path) -> None:
    ds = datasets.load_dataset("json", data_files=str(RETAIL), split="train", cache_dir=str(tmp_path))
    with pytest.raises(SpecError, match=r"row 0: no 'task' column") as excinfo:
        edatasets.from_dataset(ds)
    assert "to_dataset" in str(excinfo.value)
    assert "column='text'" in str(excinfo.value)
    assert excinfo.value.field == "task"


def test_bad_rows_are_spec_errors_naming_the_row() -> None:
    good = edatasets.to_dataset(load_suite(RETAIL.parent)[:2])
    rows = good.to_list()

    broken = datasets.Dataset.from_list([rows[0], {**rows[1], "task": "{not json"}])
    with pytest.raises(SpecError, match=r"row 1: invalid JSON"):
        edatasets.from_dataset(broken)

    invalid = json.loads(rows[1]["task"]) | {"verifiers": []}
    with pytest.raises(SpecError, match=r"row 1: .*\(field 'verifiers'\)"):
        edatasets.from_dataset(datasets.Dataset.from_list([rows[0], {**rows[1], "task": json.dumps(invalid)}]))

    with pytest.raises(SpecError, match=r"row 1: duplicate task id 'retail-001-cancel-pending' \(first on row 0\)"):
        edatasets.from_dataset(datasets.Dataset.from_list([rows[0], rows[0]]))

    with pytest.raises(SpecError, match=r"row 0: the 'task' column holds None"):
        edatasets.from_dataset(datasets.Dataset.from_list([{"task": None}, rows[0]]))


def test_an_edited_browsing_column_is_refused_not_ignored() -> None:
    """Changing ``split`` (or the hash) beside the task would be silently lost; say so instead."""
    ds = edatasets.to_dataset(load_suite(RETAIL.parent)[:3]).map(lambda row: {"split": "dev"})
    with pytest.raises(SpecError, match=r"row 0: the 'split' column says 'dev' but the task says '(train|test)'"):
        edatasets.from_dataset(ds)


def test_dataset_dict_asks_for_a_split(tmp_path: Path) -> None:
    dd = datasets.DatasetDict({"train": edatasets.to_dataset(load_suite(RETAIL.parent)[:1])})
    with pytest.raises(SpecError, match=r"DatasetDict.*\['train'\]"):
        edatasets.from_dataset(dd)


def test_an_iterable_dataset_reads_the_same() -> None:
    tasks = load_suite(TASKS / "web-shop")[:8]
    streamed = edatasets.to_dataset(tasks).to_iterable_dataset()
    assert [t.hash for t in edatasets.from_dataset(streamed)] == [t.hash for t in tasks]


def test_empty_round_trip(tmp_path: Path) -> None:
    edatasets.save_to_disk([], tmp_path / "empty")
    assert edatasets.load_from_disk(tmp_path / "empty") == []
