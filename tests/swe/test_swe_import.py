"""``envgym swe import``: instance validation, gold patches checked on the host, one image per repo+version."""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest

from envgym.task import load_suite
from envgym_swe import importer
from envgym_swe.demo import REPO, make_demo
from envgym_swe.instances import InstanceError, parse_instances
from envgym_verifiers.tests import TestsSpec


def test_bad_fields_name_the_instance_and_the_field():
    good = {"instance_id": "ok-1", "repo": "a/b", "base_commit": "abcdef1", "patch": "diff", "problem_statement": "x",
            "FAIL_TO_PASS": '["t.py::a"]', "PASS_TO_PASS": "[]", "created_at": "ignored"}
    assert parse_instances([good])[0].FAIL_TO_PASS == ("t.py::a",)  # JSON-encoded strings, as SWE-bench ships
    rows = [good,
            {**good, "instance_id": "no-patch", "patch": None},
            {**good, "instance_id": "bad-f2p", "FAIL_TO_PASS": "not json"},
            {**good, "instance_id": "bad-repo", "repo": "no-slash"},
            {k: v for k, v in good.items() if k != "problem_statement"} | {"instance_id": "no-problem"},
            {**good}]
    with pytest.raises(InstanceError) as err:
        parse_instances(rows, source="x.jsonl")
    message = str(err.value)
    for expected in ("'no-patch': field 'patch'", "'bad-f2p': field 'FAIL_TO_PASS'", "'bad-repo': field 'repo'",
                     "'no-problem': field 'problem_statement'", "'ok-1': field 'instance_id': duplicate"):
        assert expected in message


def test_env_and_task_ids_follow_the_suite():
    assert importer.env_id_for("swe-attrs") == "swe/attrs-v1"
    assert importer.env_id_for("My Suite") == "swe/my-suite-v1"
    assert importer.task_id_for("Django__Django-11099") == "django__django-11099"


@pytest.mark.docker
def test_import_builds_one_image_skips_a_stale_gold_patch_and_hides_the_tests(tmp_path, monkeypatch):
    monkeypatch.setattr(importer, "SUITES_INDEX", tmp_path / "state" / "suites.json")
    monkeypatch.setattr(importer, "REPOS_INDEX", tmp_path / "state" / "repos.json")
    repo, instances = make_demo(tmp_path)
    path = tmp_path / "instances.jsonl"
    path.write_text("".join(json.dumps(i) + "\n" for i in instances))
    from envgym.cli import main

    out_dir = tmp_path / "suite"
    assert main(["swe", "import", str(path), "--repo", f"{REPO}={repo}", "--suite", "swe-demo",
                 "--out", str(out_dir)]) == 0
    tasks = load_suite(str(out_dir))
    assert [t.metadata["instance_id"] for t in tasks] == ["demo__calc-1", "demo__calc-2", "demo__calc-4-hang"]
    assert "demo__calc-3-stale" in (out_dir / "README.md").read_text()  # skipped, with its reason
    assert json.loads((tmp_path / "state" / "suites.json").read_text()) == {"swe-demo": str(out_dir.resolve())}
    images = {json.dumps(t.initial_state["image"], sort_keys=True) for t in tasks}
    assert len(images) == 1  # one image per repository and version, never one per task
    task = tasks[0]
    tests = task.verifiers[0]
    assert isinstance(tests, TestsSpec) and tests.fail_to_pass == ("tests/test_mean.py::test_mean",
                                                                   "tests/test_mean.py::test_mean_single")
    visible = task.instruction + json.dumps(task.initial_state)
    assert "test_mean" not in visible and "test_patch" not in visible  # hidden tests live in the verifier only
    assert [a.tool_calls[0].name for a in task.solution] == ["create", "bash", "submit"]

    again = importer.import_instances(instances, {REPO: repo}, "swe-demo", None, remember=False)
    assert [built for _, built in again.images] == [False]  # content-hash tag: a cache hit
    assert again.skipped == [("demo__calc-3-stale", again.skipped[0][1])]
    assert "gold patch does not apply" in again.skipped[0][1]
    from envgym_swe.cli import build_suites

    assert build_suites([str(out_dir)], {}) == again.images  # `envgym swe build`: present, nothing to do
    missing = importer.import_instances(instances[:1], {}, "swe-demo", None, build=False, remember=False)
    assert not missing.tasks and "--repo demo/calc=PATH" in missing.skipped[0][1]


def test_cli_skips_bad_instances_with_each_field_named_and_exits_1_when_none_is_left(tmp_path, capsys):
    from envgym.cli import main

    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"instance_id": "x-1", "repo": "a/b", "base_commit": "zz", "patch": "p",
                                "problem_statement": "s", "FAIL_TO_PASS": 3}) + "\n")
    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)
    assert main(["swe", "import", str(path), "--repo", f"a/b={tmp_path / 'repo'}", "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr()
    text = " ".join((err.out + err.err).split())
    assert "skipped x-1: field 'base_commit'" in text and "field 'FAIL_TO_PASS'" in text
    assert not (tmp_path / "o").exists()


def _with_cmds(instances, cmds):
    return [{**instances[0], "instance_id": f"cmd-{n}", "test_cmd": cmd} for n, cmd in enumerate(cmds)]


def test_import_skips_a_test_cmd_grading_would_refuse_and_moves_a_shell_step_into_the_image(tmp_path):
    repo, instances = make_demo(tmp_path)
    rows = _with_cmds(instances, ["pip install -e . && python3 -m pytest -rA -p no:cacheprovider",  # a build step
                                  "cd tests && pytest -x", "export LANG=C; pytest", "FOO=1 pytest", "make test",
                                  "python3 -m pytest -q 'unclosed", "pytest -q"])
    report = importer.import_instances(rows, {REPO: repo}, "swe-cmds", None, build=False, remember=False)
    skipped = dict(report.skipped)
    assert sorted(skipped) == ["cmd-1", "cmd-2", "cmd-3", "cmd-4", "cmd-5"]
    assert all(why.startswith("field 'test_cmd': grading runs pytest alone") for why in skipped.values())
    assert "starts with `cd tests`" in skipped["cmd-1"] and "starts with `export LANG=C`" in skipped["cmd-2"]
    assert "no pytest command at its end" in skipped["cmd-4"]
    tasks = {t.metadata["instance_id"]: t for t in report.tasks}
    assert sorted(tasks) == ["cmd-0", "cmd-6"]
    moved = tasks["cmd-0"]
    assert moved.verifiers[0].test_cmd == "python3 -m pytest -rA -p no:cacheprovider"
    assert moved.initial_state["image"]["install"].endswith(" && pip install -e .")
    assert report.adjusted == [("cmd-0", "test_cmd's shell step `pip install -e .` runs at image build (after "
                                         "`install`); grading runs `python3 -m pytest -rA -p no:cacheprovider`")]
    assert tasks["cmd-6"].verifiers[0].test_cmd == "pytest -q"


@pytest.mark.docker
def test_an_instance_whose_test_cmd_had_a_shell_step_grades_gold_resolved(tmp_path, no_leftover_containers):
    from envgym_swe import containers, grade
    from envgym_swe.env import task_image
    from envgym_swe.label import gold_patch
    from envgym_verifiers.tests import grade_patch

    repo, instances = make_demo(tmp_path)
    rows = _with_cmds(instances, ["python3 -c 'import calc' && python3 -m pytest -rA"])
    report = importer.import_instances(rows, {REPO: repo}, "swe-cmds", None, remember=False)
    assert not report.skipped and len(report.tasks) == 1
    task = report.tasks[0]

    async def gold():  # import builds the image with asyncio.run of its own: the grading gets its own loop
        async with containers.leased(task_image(task)) as sandbox:
            return await grade_patch(grade.tests_spec(task), sandbox, gold_patch(task))

    verdict = asyncio.run(gold())
    assert verdict.passed, verdict.evidence.get("reason")
