"""text-scienceworld-gen on the real simulator: ScienceWorld's own split and variations, the gold path wins,
the null agent does not, the same tasks in another process."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

import envgym
from envgym.agents.baseline import NullAgent, OracleAgent
from envgym.generate import generate
from envgym.rollout import run_episode

pytest.importorskip("scienceworld", reason="the scienceworld extra is not installed")
from envgym_textgames.scienceworld_gen import TASK_TYPES, _order

pytestmark = pytest.mark.slow
NAME = "text-scienceworld-gen"
# level 1, seeds 7 and 9: the lifespan task types (gold paths of 4-5 commands)
SAMPLE = [(split, 1, seed) for split in ("train", "test") for seed in (7, 9)]
# level 1 train, seeds 0 then 12: paint mixing, then test-conductivity, whose gold path once took paint mixing's
# cached route when a JVM made both (made in reverse order elsewhere, it did not)
ROUTES = [("train", 1, 0), ("train", 1, 12)]

_ELSEWHERE = """\
import json, sys
from envgym.generate import generate
print(json.dumps({f"{s}.{l}.{n}": generate("text-scienceworld-gen", n, level=l, split=s).hash
                  for s, l, n in reversed(json.loads(sys.argv[1]))}))
"""


def test_the_order_is_scienceworlds_split_each_variation_once() -> None:
    for level in (1, 2, 3):
        orders = {split: _order(split, level) for split in ("train", "dev", "test")}
        for order in orders.values():
            assert len(set(order)) == len(order) and {TASK_TYPES[name] for name, _ in order} == {level}
        assert not set(orders["train"]) & set(orders["test"]) and not set(orders["dev"]) & set(orders["test"])


def test_variations_once_per_family_and_the_same_tasks_in_another_process() -> None:
    tasks = [generate(NAME, seed, level=level, split=split) for split, level, seed in SAMPLE + ROUTES]
    for task in tasks:
        (family,) = task.metadata["templates"]
        assert family == f"{task.initial_state['task_name']}:{task.split}"
    assert len({(t.initial_state["task_name"], t.initial_state["variation"]) for t in tasks}) == len(tasks)
    done = subprocess.run([sys.executable, "-c", _ELSEWHERE, json.dumps(SAMPLE + ROUTES)], capture_output=True,
                          text=True, env={**os.environ, "PYTHONHASHSEED": "4242"}, timeout=600, check=True)
    theirs = json.loads(done.stdout.strip().splitlines()[-1])
    assert theirs == {f"{s}.{lv}.{n}": t.hash for (s, lv, n), t in zip(SAMPLE + ROUTES, tasks, strict=True)}


async def test_the_gold_path_wins_and_the_null_agent_loses() -> None:
    tasks = [await asyncio.to_thread(generate, NAME, seed, level=level, split=split) for split, level, seed in SAMPLE]
    async with envgym.make("text/scienceworld-v1") as env:
        for task in tasks[::2]:
            oracle = await run_episode(env, OracleAgent(task), task, seed=0)
            assert oracle.reward == 1.0 and oracle.verdict.evidence["scienceworld"]["score"] == 100, task.id
            null = await run_episode(env, NullAgent(), task, seed=0)
            assert null.reward == 0.0, task.id
