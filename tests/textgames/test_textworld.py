"""text/textworld-v1 on real generated games: offline generation, walkthrough wins, meta-commands refused."""

from __future__ import annotations

import pytest

import envgym
from envgym import Action
from envgym.agents.baseline import NullAgent, OracleAgent
from envgym.errors import EnvError
from envgym.rollout import run_episode

pytest.importorskip("textworld", reason="the textworld extra is not installed")
from envgym_textgames.textworld import game_file, start_game, textworld_task

pytestmark = pytest.mark.slow
COINS = {"challenge": "tw-coin_collector", "args": ["--level", "1"], "seed": 7}


def coin_task(walkthrough: list[str]):
    return textworld_task(COINS["challenge"], COINS["args"], COINS["seed"], "test", walkthrough, 0)


async def test_generated_offline_deterministic_and_graded_by_the_game(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ENVGYM_CACHE", str(tmp_path / "a"))
    first = game_file(COINS)
    assert first.is_file() and first.is_relative_to(tmp_path / "a")
    monkeypatch.setenv("ENVGYM_CACHE", str(tmp_path / "b"))
    second = game_file(COINS)  # generated again from the seed alone: the same game
    walkthroughs = []
    for path in (first, second):
        game = start_game(path)
        walkthroughs.append(game.reset()["extra.walkthrough"])
        game.close()
    assert walkthroughs[0] == walkthroughs[1] and walkthroughs[0]

    task = coin_task(walkthroughs[0])
    async with envgym.make("text/textworld-v1") as env:
        oracle = await run_episode(env, OracleAgent(task), task, seed=0)
        assert oracle.reward == 1.0 and oracle.verdict.evidence["textworld"]["won"]
        null = await run_episode(env, NullAgent(), task, seed=0)
        assert null.reward == 0.0
        await env.reset(task=task)
        for command in ("save", "restore", "quit", "undo"):
            result = await env.step(Action.call("act", command=command))
            assert "not available" in result.observation.tool_results[0].content
            assert not result.terminated


def test_bad_game_settings_are_env_errors(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ENVGYM_CACHE", str(tmp_path))
    with pytest.raises(EnvError, match="unknown TextWorld challenge"):
        game_file({"challenge": "tw-chess", "args": [], "seed": 1})
    with pytest.raises(EnvError, match="bad options"):
        game_file({"challenge": "tw-coin_collector", "args": ["--level", "many"], "seed": 1})
    with pytest.raises(EnvError, match="needs challenge"):
        game_file({"challenge": "tw-coin_collector", "seed": "one"})
