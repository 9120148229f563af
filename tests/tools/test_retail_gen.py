"""``tool-retail-gen`` (envgym_tool.authoring.retail_gen): deterministic across processes, its levels lengthen
the reference solution, its splits share no template family, its tasks are distinct, and it passes admission
(``envgym check`` on a sample: oracle 1, null 0, every tampering agent 0) and runs through ``envgym eval``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from statistics import mean

import envgym
from envgym import cli
from envgym.check_generator import check_generator
from envgym.generate import distinct, generate, parse_ref
from envgym.registry import generator_spec
from envgym.task import load_suite

NAME = "tool-retail-gen"


def calls(task) -> int:
    return sum(len(a.tool_calls or ()) for a in task.solution)


def test_same_hashes_in_processes_with_other_hash_seeds():
    tasks = load_suite(f"{NAME}@0:15")
    ids, here = [t.id for t in tasks], [t.hash for t in tasks]
    code = ("import sys; from envgym.generate import generate, parse_task_id\n"
            "for i in sys.argv[1:]:\n    n, s, lv, seed = parse_task_id(i)\n"
            "    print(generate(n, seed, level=lv, split=s).hash)")
    for hash_seed in ("1", "987654"):
        out = subprocess.run([sys.executable, "-c", code, *ids], capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": hash_seed}).stdout.split()
        assert out == here


def test_levels_lengthen_the_reference():
    lengths = {level: mean(calls(t) for t in load_suite(f"{NAME}@0:40:level={level}")) for level in (1, 2, 3)}
    assert lengths[1] < lengths[2] < lengths[3], lengths
    assert len(load_suite(f"{NAME}@0:5:level=3")[0].initial_state["customers"]) > \
        len(load_suite(f"{NAME}@0:5:level=1")[0].initial_state["customers"])


def test_train_and_test_share_no_template_family():
    spec = generator_spec(NAME)
    assert spec is not None and set(spec.templates_of("train")).isdisjoint(spec.templates_of("test"))
    for split in ("train", "test"):
        used = {f for t in load_suite(f"{NAME}@0:60", split=split) for f in t.metadata["templates"]}
        assert used == set(spec.templates_of(split))  # every family of the split shows up, and only those


def test_tasks_are_distinct():
    counted = distinct(load_suite(f"{NAME}@0:150"))
    assert counted.total == 300 and counted.distinct == 300


def test_reference_amounts_come_from_the_replay():
    # a level-2 task refunding something asks for the total; the oracle's answer states what the tools refunded
    task = next(t for t in load_suite(f"{NAME}@0:60:level=2") if "refunded in total" in t.instruction)
    criteria = [c for v in task.verifiers for c in getattr(v, "criteria", ())]
    criteria += [c for v in task.verifiers for w in getattr(v, "verifiers", ()) for c in getattr(w, "criteria", ())]
    assert any(c.name == "total_refund" for c in criteria)
    assert "In total $" in task.solution[-1].text


async def test_admission_on_a_sample():
    report = await check_generator(NAME, sample=20, seed=3, tamper=4, gymnasium_check=False)
    assert report.ok, (report.failed, report.gate_failures, report.tamper_failures)
    assert report.checked == 20 and report.tasks == 20000 and sum(report.tamper_runs.values()) >= 4 * 5


async def test_reset_with_a_generated_id():
    task = generate(NAME, 77, level=3, split="test")
    async with envgym.make("tool/retail-v1") as env:
        observation, _ = await env.reset(task=task.id)
        assert env.unwrapped.task.hash == task.hash and task.instruction in json.dumps(observation.model_dump())


def test_eval_runs_a_few_of_ten_thousand(screen, tmp_path):
    argv = ["eval", "--suite", f"{NAME}@0:10000", "--agent", "oracle", "--limit", "3", "--out", str(tmp_path / "r")]
    assert cli.main(argv) == 0
    assert "ran 3, skipped 0 of 3; " in screen()[0] and "success 3" in screen()[0]
    assert parse_ref(f"{NAME}@0:10000") is not None


def test_check_seeds_a_generators_sample_with_seed_alone(screen):
    """``envgym check NAME --generator-sample N --seed S`` seeds the generator's sample (it was refused: '--seed
    seeds --sample'); an env's tasks still need --sample for a seed."""
    from envgym import cli

    assert cli.main(["check", NAME, "--generator-sample", "3", "--seed", "5", "--no-gates"]) == 0
    assert "3 of 20000 tasks" in " ".join(screen()[0].split())
    assert cli.main(["check", "tool/retail-v1", "--seed", "5", "--no-gates"]) == 2
