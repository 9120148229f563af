"""The timed task generators (``timed-backoffice-gen``, ``timed-kitchen-gen``): the same hashes in processes with
other hash seeds, levels that lengthen the reference, splits that share no template family, admission on a
sample (oracle 1, null 0, every tampering agent 0), references computed from the generated world, and
deadlines that the scheduled events and the jobs' timing make binding."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from statistics import mean

import pytest

from envgym.check_generator import check_generator
from envgym.generate import distinct
from envgym.registry import generator_spec
from envgym.task import load_suite
from envgym.types import Action
from envgym_timed.replay import replay

NAMES = ("timed-backoffice-gen", "timed-kitchen-gen")


def calls(task) -> int:
    return sum(len(a.tool_calls or ()) for a in task.solution)


def written(task, tool: str) -> list[dict]:
    return [json.loads(c.arguments) for a in task.solution for c in a.tool_calls or () if c.name == tool]


@pytest.mark.parametrize("name", NAMES)
def test_same_hashes_in_processes_with_other_hash_seeds(name):
    tasks = load_suite(f"{name}@0:6")
    ids, here = [t.id for t in tasks], [t.hash for t in tasks]
    code = ("import sys; from envgym.generate import generate, parse_task_id\n"
            "for i in sys.argv[1:]:\n    n, s, lv, seed = parse_task_id(i)\n"
            "    print(generate(n, seed, level=lv, split=s).hash)")
    out = subprocess.run([sys.executable, "-c", code, *ids], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "31337"}).stdout.split()
    assert out == here


@pytest.mark.parametrize("name", NAMES)
def test_levels_lengthen_the_reference(name):
    lengths = {level: mean(calls(t) for t in load_suite(f"{name}@0:20:level={level}")) for level in (1, 2, 3)}
    assert lengths[1] < lengths[2] < lengths[3], lengths


@pytest.mark.parametrize("name", NAMES)
def test_train_and_test_share_no_template_family(name):
    spec = generator_spec(name)
    assert spec is not None and set(spec.templates_of("train")).isdisjoint(spec.templates_of("test"))
    for split in ("train", "test"):
        used = {f for t in load_suite(f"{name}@0:40", split=split) for f in t.metadata["templates"]}
        assert used == set(spec.templates_of(split))


@pytest.mark.parametrize("name", NAMES)
def test_tasks_are_distinct(name):
    counted = distinct(load_suite(f"{name}@0:60"))
    assert counted.total == 120 and counted.distinct == 120


@pytest.mark.parametrize("name", NAMES)
async def test_admission_on_a_sample(name):
    report = await check_generator(name, sample=10, seed=5, tamper=2, gymnasium_check=False)
    assert report.ok, (report.failed, report.gate_failures, report.tamper_failures)
    assert report.checked == 10 and sum(report.tamper_runs.values()) >= 2 * 5


def test_backoffice_writes_come_from_the_generated_world():
    tasks = [t for t in load_suite("timed-backoffice-gen@0:40:level=2", split="train")
             if "cheapest-order" in t.metadata["templates"]]
    assert tasks
    for task in tasks:
        quotes = task.initial_state["world"]["quotes"]
        asked = [json.loads(c.arguments) for c in task.solution[0].tool_calls if c.name == "get_quote"]
        orders = written(task, "place_order")
        for item in {a["item"] for a in asked}:
            cheapest = min((quotes[f"{a['supplier']}:{item}"]["unit_price"], a["supplier"])
                           for a in asked if a["item"] == item)[1]
            assert [o["supplier"] for o in orders if o["item"] == item] == [cheapest], task.id


async def test_backoffice_write_before_the_scheduled_approval_fails():
    task = next(t for t in load_suite("timed-backoffice-gen@0:40:level=1", split="train")
                if t.metadata["templates"] == ["approval-order"])
    verdict, _ = await replay(task, list(task.solution))
    assert verdict.passed
    hasty = [a for a in task.solution if not a.tool_calls or a.tool_calls[0].name != "wait_for_notification"]
    verdict, _ = await replay(task, hasty)
    assert not verdict.passed and "manager_approval" in json.dumps(verdict.model_dump(mode="json")["criteria"])


def serial_s(task) -> float:
    """The menu's jobs one after another (the decoy left out)."""
    decoys = {f.args["job"] for f in task.verifiers[0].forbidden}
    return sum(j["seconds"] for j in task.initial_state["world"]["jobs"].values() if j["id"] not in decoys)


async def test_kitchen_deadline_needs_overlapping_jobs():
    tasks = list(load_suite("timed-kitchen-gen@0:10:level=3"))
    assert all(t.metadata["plan_s"] < serial_s(t) for t in tasks)
    task = tasks[0]
    # the reference's calls, each job started only once the previous one is collected: too slow
    one_by_one: list[Action] = []
    for action in task.solution:
        for call in action.tool_calls or ():
            one_by_one.append(Action(tool_calls=(call,)))
            if call.name == "start_job":
                job = json.loads(call.arguments)["job"]
                one_by_one += [Action.call("wait_for_notification", source=job, timeout=3600),
                               Action.call("collect", job=job)]
    # (the reference's own waits then return at once and its collects are refused: no write, no time)
    verdict, _ = await replay(task, [*one_by_one, task.solution[-1]])
    assert not verdict.passed
    verdict, _ = await replay(task, list(task.solution))
    assert verdict.passed
