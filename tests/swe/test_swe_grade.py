"""``envgym eval`` writes SWE-bench predictions; ``envgym swe grade`` grades them without an agent."""

from __future__ import annotations

import json

import pytest

import envgym
from envgym.agents import parse_agent
from envgym.cli import main
from envgym.eval import EvalConfig, evaluate
from envgym.task import load_tasks, write_tasks
from envgym.verify.spec import AnswerSpec
from envgym_swe.demo import REPO, make_demo
from envgym_swe.grade import grade_prediction
from envgym_swe.importer import import_instances

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("no_leftover_containers")]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("swe-grade")
    repo, instances = make_demo(root)
    report = import_instances(instances, {REPO: repo}, "swe-demograde", None, remember=False)
    suite = root / "suite"
    suite.mkdir()
    write_tasks(suite / "tasks.jsonl", [t for t in report.tasks if "hang" not in t.id])
    envgym.register("swe/demograde-v1", "envgym_swe.env:SweEnv", suites=(str(suite),), override=True)
    (root / "instances.jsonl").write_text("".join(json.dumps(i) + "\n" for i in instances))
    return root, repo, suite, {i["instance_id"]: i for i in instances}


async def test_eval_writes_predictions_that_grade_resolved(demo):
    root, _, suite, _ = demo
    config = EvalConfig(suites=(str(suite),), split=None, agent=parse_agent("oracle"))
    summary = await evaluate(config, root / "run", concurrency=2)
    assert summary.outcomes["success"] == 2
    predictions = [json.loads(line) for line in (root / "run" / "predictions.jsonl").read_text().splitlines()]
    assert sorted(p["instance_id"] for p in predictions) == ["demo__calc-1", "demo__calc-2"]
    assert all(p["model_name_or_path"] == "oracle" and p["model_patch"].startswith("diff --git") for p in predictions)


def test_grade_cli_good_bad_and_empty_predictions(demo, capsys):
    root, repo, suite, instances = demo
    preds = root / "preds.jsonl"
    rows = [{"instance_id": "demo__calc-1", "model_name_or_path": "m",
             "model_patch": instances["demo__calc-1"]["patch"]},
            {"instance_id": "demo__calc-2", "model_name_or_path": "m",
             "model_patch": instances["demo__calc-1"]["patch"]},  # a patch for another commit: does not apply
            {"instance_id": "demo__calc-4-hang", "model_name_or_path": "m", "model_patch": ""}]
    preds.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["swe", "grade", str(preds), "--suite", str(suite), "--out", str(root / "report.json")]) == 0
    report = json.loads((root / "report.json").read_text())
    assert report["resolved_ids"] == ["demo__calc-1"]
    assert report["unresolved_ids"] == report["patch_failed_ids"] == ["demo__calc-2"]
    assert report["error_ids"] == ["demo__calc-4-hang"]  # not in this suite (the hang task is left out)
    one = report["instances"]["demo__calc-1"]
    assert one["patch_successfully_applied"] and one["tests_status"]["FAIL_TO_PASS"]["failure"] == []
    assert one["tests"]["PASS_TO_PASS"] == {"tests/test_calc.py::test_add": "PASSED",
                                            "tests/test_calc.py::test_add_negative": "PASSED"}
    bad = report["instances"]["demo__calc-2"]
    assert not bad["resolved"] and "does not apply" in bad["reason"]
    assert "patch_failed demo__calc-2" in capsys.readouterr().out

    # The same predictions against SWE-bench instances and a local repository (imported on the fly).
    assert main(["swe", "grade", str(preds), "--instances", str(root / "instances.jsonl"), "--repo",
                 f"{REPO}={repo}", "--out", str(root / "report2.json")]) == 0
    report = json.loads((root / "report2.json").read_text())
    assert report["resolved_ids"] == ["demo__calc-1"] and report["empty_patch_ids"] == ["demo__calc-4-hang"]


async def test_a_prediction_is_graded_on_every_verifier_of_its_task_as_an_episode_is(demo):
    # envgym swe grade graded the tests verifier alone (grade_patch): the gold patch "resolved" a task whose
    # other verifier fails; now the kernel's grade() asks every verifier, as it does at an episode's end
    _, _, suite, instances = demo
    task = next(t for t in load_tasks(suite / "tasks.jsonl") if t.metadata["instance_id"] == "demo__calc-1")
    gold = instances["demo__calc-1"]["patch"]
    assert (await grade_prediction(task, gold))["resolved"]
    strict = task.model_copy(update={"verifiers": (*task.verifiers, AnswerSpec(expected="a word never said"))})
    entry = await grade_prediction(strict, gold)
    assert entry["patch_successfully_applied"] and entry["tests_status"]["FAIL_TO_PASS"]["failure"] == []
    assert (entry["resolved"], entry["status"]) == (False, "unresolved")
