import json

import pytest

from envgym.errors import SpecError
from envgym.task import TaskSpec, load_suite, load_tasks, write_tasks

from fakes import notes_tasks


def test_round_trip_keeps_hash(tmp_path):
    tasks = notes_tasks()
    path = tmp_path / "t.jsonl"
    write_tasks(path, tasks)
    loaded = load_tasks(path)
    assert loaded == tasks
    assert [t.hash for t in loaded] == [t.hash for t in tasks]
    assert all(t.hash.startswith("sha256:") for t in tasks)
    assert len({t.hash for t in tasks}) == len(tasks)


def test_hash_changes_with_content():
    task = notes_tasks()[0]
    assert task.model_copy(update={"instruction": "other"}).hash != task.hash


def test_a_copy_never_carries_the_originals_cached_hash():
    task = notes_tasks()[0]
    original = task.hash  # cached in the instance's __dict__, which pydantic's model_copy copies
    copy = task.model_copy(update={"instruction": "other"})
    assert copy.hash != original
    assert copy.hash == TaskSpec.model_validate_json(copy.model_dump_json()).hash
    assert task.model_copy().hash == original


def _write_lines(path, lines):
    path.write_text("\n".join(lines) + "\n")


def test_bad_json_names_file_and_line(tmp_path):
    good = json.dumps(notes_tasks()[0].model_dump(mode="json"))
    path = tmp_path / "bad.jsonl"
    _write_lines(path, [good, "{not json"])
    with pytest.raises(SpecError, match=r"bad\.jsonl:2: invalid JSON"):
        load_tasks(path)


def test_bad_field_names_field(tmp_path):
    raw = notes_tasks()[0].model_dump(mode="json")
    raw["limits"]["max_steps"] = "many"
    path = tmp_path / "bad.jsonl"
    _write_lines(path, ["", json.dumps(raw)])
    with pytest.raises(SpecError) as info:
        load_tasks(path)
    assert "bad.jsonl:2" in str(info.value)
    assert info.value.field == "limits.max_steps"


def test_unknown_field_and_duplicate_id(tmp_path):
    raw = notes_tasks()[0].model_dump(mode="json")
    path = tmp_path / "bad.jsonl"
    _write_lines(path, [json.dumps({**raw, "surprise": 1})])
    with pytest.raises(SpecError, match="surprise"):
        load_tasks(path)
    _write_lines(path, [json.dumps(raw), json.dumps(raw)])
    with pytest.raises(SpecError, match="duplicate task id"):
        load_tasks(path)


def test_missing_file_and_unknown_suite(tmp_path):
    with pytest.raises(SpecError, match="cannot read"):
        load_tasks(tmp_path / "nope.jsonl")
    with pytest.raises(SpecError, match="unknown suite"):
        load_suite("no-such-suite")


def test_suite_split_filter(tmp_path):
    path = tmp_path / "s.jsonl"
    write_tasks(path, notes_tasks())
    assert {t.split for t in load_suite(str(path), split="train")} == {"train"}
    assert len(load_suite(str(path))) == 3


def test_task_requires_a_verifier():
    raw = notes_tasks()[0].model_dump(mode="json")
    raw["verifiers"] = []
    with pytest.raises(ValueError):
        TaskSpec.model_validate(raw)


def test_a_task_file_read_again_unchanged_is_not_parsed_again_and_a_changed_one_is(tmp_path):
    path = tmp_path / "t.jsonl"
    write_tasks(path, notes_tasks()[:2])
    first = load_tasks(path)
    again = load_tasks(path)
    assert again == first and all(a is b for a, b in zip(again, first, strict=True))  # hashes worked out once
    again.pop()  # the caller's list is its own
    assert len(load_tasks(path)) == 2
    changed = [t.model_copy(update={"instruction": t.instruction[:-1] + "?"}) for t in first]  # same size
    write_tasks(path, changed)
    assert [t.instruction for t in load_tasks(path)] == [t.instruction for t in changed]


def _sql_task(env_id: str = "test/snap-v1"):
    from envgym.verify.spec import AllOfSpec, AnswerSpec, Criterion, RubricSpec, SqlCheck

    rubric = RubricSpec(criteria=(Criterion(name="n", check=SqlCheck(query="SELECT 1", expected=1)),))
    return TaskSpec(id="sql-1", env_id=env_id, instruction="x",
                    verifiers=(AnswerSpec(kind="exact", expected="y"), AllOfSpec(verifiers=(rubric,))))


def test_a_sql_check_is_refused_when_the_suite_loads_for_an_env_whose_state_answers_no_sql(tmp_path):
    import random

    from envgym.task import SuiteTasks

    write_tasks(tmp_path / "t.jsonl", [_sql_task()])
    snapshots_only = SuiteTasks((str(tmp_path / "t.jsonl"),), "test/snap-v1", sql_state=False)
    refused = r"task .sql-1. has a sql check, but test/snap-v1.s state answers no SQL"
    with pytest.raises(SpecError, match=refused) as exc:
        snapshots_only.tasks  # noqa: B018 - loading is the check
    assert exc.value.field == "verifiers.1.verifiers.0.criteria.0.check"
    with pytest.raises(SpecError, match="answers no SQL"):  # a TaskSpec handed to reset too
        snapshots_only.choose(_sql_task(), random.Random(0))
    queryable = SuiteTasks((str(tmp_path / "t.jsonl"),), "test/snap-v1", sql_state=True)
    assert [t.id for t in queryable.tasks] == ["sql-1"]


def test_a_sql_check_the_env_answers_no_sql_for_is_refused_naming_its_file_and_line(tmp_path):
    from envgym.task import SuiteTasks

    path = tmp_path / "t.jsonl"
    write_tasks(path, [TaskSpec.model_validate({**_sql_task().model_dump(mode="json"), "id": "sql-0"}), _sql_task()])
    field = "verifiers.1.verifiers.0.criteria.0.check"
    per_task = SuiteTasks((str(path),), "test/snap-v1", sql_state=lambda task: task.id != "sql-1")  # answers_sql
    with pytest.raises(SpecError) as exc:
        per_task.tasks  # noqa: B018 - loading is the check
    assert (exc.value.path, exc.value.line, exc.value.field) == (str(path), 2, field)
    every = SuiteTasks((str(path),), "test/snap-v1", sql_state=lambda task: True)
    assert [t.id for t in every.tasks] == ["sql-0", "sql-1"]


async def test_a_sql_check_on_a_state_without_a_sql_view_is_the_verifier_s_error():
    from envgym.errors import VerifierError
    from envgym.verify import VerifyContext, grade

    class Snapshot:
        def snapshot(self):
            return {"t": []}

    task = _sql_task()
    with pytest.raises(VerifierError, match="a sql check needs a state that answers SQL; Snapshot does not"):
        await grade(task, VerifyContext(calls=[], final_answer="y", state=Snapshot()))
