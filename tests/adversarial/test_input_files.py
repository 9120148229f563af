"""Bad input files: every reader names the file, the line and the field, never a traceback of its own.

Task files, result records, SWE instances and predictions, run metadata: bytes that are not UTF-8,
JSON nested 100,000 deep (``json`` raises RecursionError), lone surrogates, lines that are no objects.
And the other way round: valid JSON holding U+2028 / U+2029 / U+0085 (which ``str.splitlines`` splits
on) written by every writer is read back intact by every reader.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from envgym.errors import RecordError, SpecError
from envgym.leaderboard import load_run
from envgym.record import JsonlWriter, ResultRecord, read_jsonl, read_records
from envgym.rl.samples import TrainingSample, read_samples, write_samples
from envgym.task import TaskSpec, load_suite, load_tasks, write_tasks
from envgym.types import Outcome
from envgym_swe.instances import load_instances
from envgym_swe.instances import read_jsonl as read_swe_jsonl
from envgym_swe.predictions import Prediction

from fakes import NOTES_SUITE

DEEP = b"[" * 100_000 + b"]" * 100_000
BAD_LINES = {
    "not utf-8": (b'{"id": "caf\xe9"}', "UTF-8"),
    "100,000 deep": (DEEP, "nested too deeply"),
    "lone surrogate": (b'{"id": "a\\ud800"}', "surrogate"),
}
SEPARATORS = "a\u2028b\u2029c\u0085d\x1ce\x0bf\x0cg\rh"
"""Characters ``str.splitlines`` breaks on that may sit raw inside a JSON string."""


def _record(i: int, **changes) -> ResultRecord:
    fields = dict(run_id="r", task_id=f"t{i}", task_hash=f"sha256:{i}", suite="s", split="test",
                  env_id="test/notes-v1", env_version=1, agent_id="oracle", config_hash="c",
                  outcome=Outcome.FAILURE, score=0.0, passed=False, steps=1)
    return ResultRecord(**{**fields, **changes})


def _notes_line(n: int = 0) -> bytes:
    return NOTES_SUITE.read_bytes().split(b"\n")[n]


@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_task_file_bad_line_names_file_and_line(tmp_path: Path, case: str) -> None:
    bad, why = BAD_LINES[case]
    path = tmp_path / "t.jsonl"
    path.write_bytes(_notes_line() + b"\n" + bad + b"\n")
    with pytest.raises(SpecError, match=why) as info:
        load_tasks(path)
    assert str(info.value).startswith(f"{path}:2: ")


def test_task_nested_too_deep_for_the_hash_is_refused_at_load(tmp_path: Path) -> None:
    row = json.loads(_notes_line())
    nested: dict = {}
    for _ in range(300):  # valid JSON, but the task's content hash (pydantic's dump) would fail in eval
        nested = {"x": nested}
    row["initial_state"] = {"deep": nested}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(SpecError, match=r"t\.jsonl:1: nested deeper than"):
        load_tasks(path)


@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_records_bad_middle_line_names_file_and_line(tmp_path: Path, case: str) -> None:
    bad, why = BAD_LINES[case]
    path = tmp_path / "records.jsonl"
    path.write_bytes(_record(0).model_dump_json().encode() + b"\n" + bad + b"\n"
                     + _record(1).model_dump_json().encode() + b"\n")
    with pytest.raises(RecordError, match=why) as info:
        read_records(path, repair=True)
    assert f"{path}:2: " in str(info.value)
    assert path.read_bytes().count(b"\n") == 3  # nothing cut: a corrupt middle line is no torn tail


def test_records_schema_error_names_the_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    bad = _record(1).model_dump(mode="json") | {"outcome": "won"}
    path.write_text(_record(0).model_dump_json() + "\n\n" + json.dumps(bad) + "\n")
    with pytest.raises(RecordError, match=r"records\.jsonl:3: .*field 'outcome'"):
        read_records(path)
    path.write_text(_record(0).model_dump_json() + "\n[1, 2]\n" + _record(1).model_dump_json() + "\n")
    with pytest.raises(RecordError, match=r"records\.jsonl:2: .*not an object"):
        read_jsonl(path)


def test_second_torn_line_does_not_overwrite_the_first_backup(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    whole = _record(0).model_dump_json().encode() + b"\n"
    for torn in (b'{"run_id": "first', b'{"run_id": "second'):
        path.write_bytes(whole + torn)
        assert read_records(path, repair=True)[1]
    backup = (tmp_path / "records.jsonl.torn").read_bytes()
    assert b"first" in backup and b"second" in backup


@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_swe_instances_and_predictions_bad_line(tmp_path: Path, case: str) -> None:
    bad, why = BAD_LINES[case]
    path = tmp_path / "preds.jsonl"
    path.write_bytes(b'{"instance_id": "a", "model_patch": ""}\n' + bad + b"\n")
    with pytest.raises(SpecError, match=why) as info:
        read_swe_jsonl(path)
    assert str(info.value).startswith(f"{path}:2: ")
    with pytest.raises(SpecError, match=why):
        load_instances(path)


def test_swe_predictions_must_be_objects_with_string_fields(tmp_path: Path) -> None:
    from envgym_swe.instances import check_predictions

    path = tmp_path / "preds.jsonl"
    path.write_text('{"instance_id": "a", "model_patch": ""}\n\n7\n')
    with pytest.raises(SpecError, match=r"preds\.jsonl:3: .*not an object"):
        read_swe_jsonl(path)
    with pytest.raises(SpecError, match="model_patch"):
        check_predictions([{"instance_id": "a", "model_patch": 5}])
    with pytest.raises(SpecError, match="instance_id"):
        check_predictions([{"model_patch": "diff"}])


def test_run_metadata_nested_too_deep(tmp_path: Path) -> None:
    (tmp_path / "records.jsonl").write_text("")
    (tmp_path / "run.json").write_bytes(DEEP)
    with pytest.raises(SpecError, match=r"run\.json"):
        load_run(tmp_path)


def test_every_writer_output_is_read_back_by_every_reader(tmp_path: Path) -> None:
    """U+2028 and friends, raw in JSON strings, never split a line (split on "\\n" only)."""
    task = TaskSpec.model_validate(json.loads(_notes_line()) | {"instruction": SEPARATORS})
    tasks_file = tmp_path / "suite" / "tasks.jsonl"
    tasks_file.parent.mkdir()
    write_tasks(tasks_file, [task, task.model_copy(update={"id": "other"})])
    assert "\u2028" in tasks_file.read_text(encoding="utf-8")  # written raw: the case that breaks splitlines
    assert [t.instruction for t in load_tasks(tasks_file)] == [SEPARATORS, SEPARATORS]
    assert load_tasks(tasks_file)[0].hash == task.hash
    assert len(load_suite(str(tasks_file.parent))) == 2

    records_file, predictions_file = tmp_path / "records.jsonl", tmp_path / "predictions.jsonl"
    for path, model in ((records_file, _record(0, error=SEPARATORS)),
                        (predictions_file, Prediction(instance_id="a", model_name_or_path="m",
                                                      model_patch=SEPARATORS))):
        writer = JsonlWriter(path)
        writer.write_sync(model)
        writer.write_sync(model)
        writer.close()
    assert [r.error for r in read_records(records_file)[0]] == [SEPARATORS, SEPARATORS]
    assert [p["model_patch"] for p in read_swe_jsonl(predictions_file)] == [SEPARATORS, SEPARATORS]

    sample = TrainingSample(sample_id="s", group_id="g", episode_id="e", task_id="t", task_hash="h",
                            env_id="test/notes-v1", segment=0, prompt_ids=[1], completion_ids=[2], loss_mask=[1],
                            logprobs=[-0.5], policy_versions=[0], reward=1.0, status="success",
                            finish_reason=SEPARATORS)
    samples_file = tmp_path / "samples.jsonl"
    write_samples(samples_file, [sample, sample])
    assert [s.finish_reason for s in read_samples(samples_file)] == [SEPARATORS, SEPARATORS]

    for path in (tasks_file, records_file, predictions_file, samples_file):  # the generic readers agree
        assert len(read_jsonl(path)[0]) == 2 and len(read_swe_jsonl(path)) == 2, path


def test_same_task_in_two_files_of_a_suite_names_both(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    shutil.copy(NOTES_SUITE, suite / "a.jsonl")
    (suite / "b.jsonl").write_bytes(b"// a copy\n" + _notes_line(1) + b"\n")
    with pytest.raises(SpecError, match=r"b\.jsonl:2: task 'notes-count' is also in .*a\.jsonl:2"):
        load_suite(str(suite))


def test_same_id_other_content_in_two_files_is_refused(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    shutil.copy(NOTES_SUITE, suite / "a.jsonl")
    row = json.loads(_notes_line(0)) | {"instruction": "something else"}
    (suite / "b.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(SpecError, match="also in"):
        load_suite(str(suite))


@pytest.mark.parametrize(("verifier", "field"), [
    ({"type": "answer", "kind": "regex", "expected": "total: (\\d+"}, "verifiers.0.answer.expected"),
    ({"type": "rubric", "criteria": [{"name": "c", "check": {"type": "answer", "kind": "regex", "expected": "[a"}}]},
     "verifiers.0.rubric.criteria.0.check.answer.expected"),
    ({"type": "rubric", "criteria": [{"name": "c", "check": {"type": "called", "tool": "get_note",
                                                              "args": {"note_id": {"$regex": "(?P<"}}}}]},
     "verifiers.0.rubric.criteria.0.check.called.args"),
    ({"type": "write_action", "expected": [{"tool": "add_note", "args": {"title": {"$in": [{"$regex": "*"}]}}}]},
     "verifiers.0.write_action.expected.0.args"),
    ({"type": "write_action", "expected": [{"tool": "add_note", "args": {"title": {"$regexp": "gym"}}}]},
     "verifiers.0.write_action.expected.0.args"),
    ({"type": "timed_write", "expected": [{"tool": "x", "args": {"a": {"$regex": "("}}}]},
     "verifiers.0.timed_write.expected.0.args"),
])
def test_bad_regex_or_matcher_is_refused_at_load(tmp_path: Path, verifier: dict, field: str) -> None:
    row = json.loads(_notes_line()) | {"verifiers": [verifier]}
    path = tmp_path / "t.jsonl"
    path.write_text(_notes_line(1).decode() + "\n" + json.dumps(row) + "\n")
    with pytest.raises(SpecError) as info:
        load_tasks(path)
    message = str(info.value)
    assert message.startswith(f"{path}:2: ") and f"(field {field!r})" in message
    assert "regex" in message or "matcher" in message


def test_depth_counts_the_deepest_nesting_of_lists_and_objects():
    from envgym._jsonl import depth

    cases = {1: 0, "x": 0, None: 0}
    for value, expected in cases.items():
        assert depth(value) == expected
    assert depth([]) == 1 and depth({}) == 1 and depth([[]]) == 2
    assert depth([1, [2, [3]], {"a": 1}]) == 3
    assert depth({"a": {"b": [{"c": []}]}, "d": [1, 2]}) == 5
    deep: list = []
    for _ in range(5000):  # no recursion: a line far deeper than Python's stack is measured, not a crash
        deep = [deep]
    assert depth(deep) == 5001
