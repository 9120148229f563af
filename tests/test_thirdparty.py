"""Done-when of the plug-in path: a third-party package registers an env, a named suite and a verifier kind
through the documented API only, and every front end works on it unchanged.

The package is ``tests/thirdparty/acme_counter`` (it has its own pyproject.toml). It is installed the way pip
installs it, as a distribution on ``sys.path`` whose ``entry_points.txt`` names its hook, inside an isolated
registry that loads every installed plug-in afresh.
"""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

import envgym
from envgym.cli import main
from envgym.errors import SpecError
from envgym.task import load_suite, load_tasks

from fakes import installed_plugin

PACKAGE = Path(__file__).parent / "thirdparty" / "acme_counter"


@pytest.fixture
def acme(tmp_path, monkeypatch):
    with installed_plugin(tmp_path, monkeypatch, PACKAGE, "acme = acme_counter:register_all"):
        yield


def test_list_shows_the_env_and_its_named_suite(acme, screen):
    assert main(["list"]) == 0
    stdout, _ = screen()
    assert "acme/counter-v1" in stdout and "acme-counter" in stdout
    assert "counter_delta" in envgym.list_verifier_kinds()
    assert envgym.spec("acme/counter-v1").capabilities["has_write_actions"] is True


def test_check_passes_the_contract_and_every_gate(acme, screen):
    assert main(["check", "acme/counter-v1", "--concurrency", "2"]) == 0, screen()


def test_eval_by_suite_name_then_leaderboard(acme, screen, tmp_path):
    runs = []
    for agent in ("oracle", "null"):
        out = tmp_path / agent
        assert main(["eval", "--suite", "acme-counter", "--split", "all", "--agent", agent, "--out", str(out),
                     "--quiet"]) == 0, screen()
        records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
        assert len(records) == 6 and {r["suite"] for r in records} == {"acme-counter"}
        assert {r["outcome"] for r in records} == {"success" if agent == "oracle" else "failure"}
        runs.append(str(out))
    board = tmp_path / "board"
    assert main(["leaderboard", "build", *runs, "--out", str(board)]) == 0, screen()
    data = json.loads((board / "leaderboard.json").read_text())
    assert "acme-counter" in json.dumps(data) and str(PACKAGE) not in json.dumps(data)


def test_a_path_to_a_named_suite_is_recorded_by_its_name(acme, screen, tmp_path):
    folder = PACKAGE / "acme_counter" / "tasks"
    out = tmp_path / "run"
    assert main(["eval", "--suite", str(folder), "--agent", "oracle", "--out", str(out), "--quiet"]) == 0, screen()
    suites = {json.loads(line)["suite"] for line in (out / "records.jsonl").read_text().splitlines()}
    assert suites == {"acme-counter"}


def test_gymnasium_check_env_on_the_sync_facade(acme):
    env = gymnasium.make("envgym/acme-counter-v1")
    try:
        check_env(env.unwrapped, skip_render_check=True)
    finally:
        env.close()


async def test_the_verifier_reads_the_state_before_and_after(acme):
    task = load_suite("acme-counter", split="test")[0]
    async with envgym.make("acme/counter-v1", start=10) as env:  # every counter starts 10 higher
        await env.reset(task=task.id, seed=0)
        for action in task.solution or ():
            _obs, reward, terminated, _truncated, info = await env.step(action)
        assert terminated and reward == 1.0 and info["verdict"].passed  # the delta counts, not the value


def test_an_unknown_verifier_type_is_refused_naming_the_known_ones(acme, tmp_path):
    line = json.loads((PACKAGE / "acme_counter" / "tasks" / "tasks.jsonl").read_text().splitlines()[0])
    line["verifiers"] = [{"type": "counter_detla", "name": "apples", "delta": 2}]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(line) + "\n")
    with pytest.raises(SpecError, match=r"unknown verifier type 'counter_detla'.*counter_delta") as caught:
        load_tasks(bad)
    assert caught.value.line == 1 and caught.value.field == "verifiers.0"
    line["verifiers"] = [{"type": "counter_delta", "name": "apples", "delta": "two"}]
    bad.write_text(json.dumps(line) + "\n")
    with pytest.raises(SpecError) as caught:
        load_tasks(bad)
    assert caught.value.field == "verifiers.0.counter_delta.delta"


def test_a_wrong_constructor_keyword_names_the_env_and_its_keywords(acme):
    with pytest.raises(envgym.errors.RegistryError, match=r"acme/counter-v1.*'strat'.*start"):
        envgym.make("acme/counter-v1", strat=1)
