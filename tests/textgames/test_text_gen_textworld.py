"""text-textworld-gen on real TextWorld games: determinism (tasks and game files, across processes), held-out
goal families, levels that grow the reference, the oracle wins and the null agent does not."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys

import pytest

import envgym
from envgym.agents.baseline import NullAgent, OracleAgent
from envgym.generate import generate
from envgym.rollout import run_episode

pytest.importorskip("textworld", reason="the textworld extra is not installed")
from envgym_textgames.textworld import game_file
from envgym_textgames.textworld_gen import GOALS, LEVELS

pytestmark = pytest.mark.slow
NAME = "text-textworld-gen"
SAMPLE = [(split, level, 7) for split in ("train", "test") for level in (1, 2, 3)]

_ELSEWHERE = """\
import hashlib, json, sys
from envgym.generate import generate
from envgym_textgames.textworld import game_file
out = {}
for split, level, seed in json.loads(sys.argv[1]):
    task = generate("text-textworld-gen", seed, level=level, split=split)
    out[task.id] = task.hash
for split, level, seed in json.loads(sys.argv[2]):
    task = generate("text-textworld-gen", seed, level=level, split=split)
    out[task.id + ".z8"] = hashlib.sha256(game_file(task.initial_state).read_bytes()).hexdigest()
print(json.dumps(out))
"""


def test_tasks_and_game_files_are_the_same_in_another_process(tmp_path, monkeypatch) -> None:
    compiled = [("test", 2, 7)]
    monkeypatch.setenv("ENVGYM_CACHE", str(tmp_path / "here"))
    mine = {}
    for split, level, seed in SAMPLE:
        task = generate(NAME, seed, level=level, split=split)
        mine[task.id] = task.hash
    for split, level, seed in compiled:
        task = generate(NAME, seed, level=level, split=split)
        path = game_file(task.initial_state)
        assert path.is_relative_to(tmp_path / "here")
        assert path.read_bytes()[0x12:0x18] == b"000000"  # not the compile date: the file is the seed's alone
        mine[task.id + ".z8"] = hashlib.sha256(path.read_bytes()).hexdigest()
    env = {**os.environ, "PYTHONHASHSEED": "4242", "ENVGYM_CACHE": str(tmp_path / "there")}
    done = subprocess.run([sys.executable, "-c", _ELSEWHERE, json.dumps(SAMPLE), json.dumps(compiled)], env=env,
                          capture_output=True, text=True, timeout=600, check=True)
    theirs = json.loads(done.stdout.strip().splitlines()[-1])
    assert theirs == mine and len(mine) == len(SAMPLE) + len(compiled)


def test_splits_hold_out_goal_families_and_levels_grow_the_quest() -> None:
    tasks = [generate(NAME, seed, level=level, split=split) for split, level, seed in SAMPLE]
    for task in tasks:
        (goal,) = task.metadata["templates"]
        assert GOALS[goal][0] == task.split
        assert task.initial_state["args"][task.initial_state["args"].index("--goal") + 1] == goal
        assert task.id == f"{NAME}.{task.split}.l{task.metadata['level']}.s{task.metadata['seed']}"
    mean = {level: sum(len(t.solution or ()) for t in tasks if t.metadata["level"] == level) / 2 for level in LEVELS}
    assert mean[1] < mean[2] < mean[3]
    assert len({t.hash for t in tasks}) == len(tasks)


async def test_the_oracle_wins_the_compiled_game_and_the_null_agent_does_not(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ENVGYM_CACHE", str(tmp_path))
    tasks = [await asyncio.to_thread(generate, NAME, 3, level=level, split=split)
             for level, split in ((1, "train"), (3, "test"))]
    async with envgym.make("text/textworld-v1") as env:
        for task in tasks:
            oracle = await run_episode(env, OracleAgent(task), task, seed=0)
            assert oracle.reward == 1.0 and oracle.verdict.evidence["textworld"]["won"], task.id
            null = await run_episode(env, NullAgent(), task, seed=0)
            assert null.reward == 0.0 and not null.verdict.passed, task.id
