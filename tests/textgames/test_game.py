"""The text-game contract on a fake engine: act(command) calls, the game's end, the game_score verdict."""

from __future__ import annotations

import pytest

from envgym import Action, TaskSpec, ToolCall
from envgym.types import Limits
from envgym.verify import VerifyContext
from envgym_textgames.game import GameScoreSpec, GameState, TextGameEnv, check_game_score
from envgym_textgames.tamper import DebugVerbs, HalfWalkthrough


class Corridor(TextGameEnv):
    """Walk east three times to win (score 1 a step); 'jump' loses."""

    def _start(self, task: TaskSpec) -> str:
        self.pos, self.lost, self.moves = 0, False, 0
        return "You are in a corridor."

    def _command(self, command: str) -> tuple[str, bool]:
        self.moves += 1
        if command == "go east":
            self.pos += 1
        elif command == "jump":
            self.lost = True
        else:
            return "That's not a verb I recognise.", False
        return f"Room {self.pos}.", self.pos >= 3 or self.lost

    def _state(self) -> GameState:
        return GameState(score=self.pos, max_score=3, won=self.pos >= 3, lost=self.lost, moves=self.moves)


TASK = TaskSpec(id="corridor", env_id="test/corridor-v1", instruction="Reach room 3.",
                limits=Limits(max_steps=10), verifiers=(GameScoreSpec(game="corridor"),),
                solution=(Action.call("act", command="go east"),) * 3)


async def play(*commands: str) -> tuple[TextGameEnv, list]:
    env = Corridor()
    obs, info = await env.reset(task=TASK)
    assert "Reach room 3." in obs.text and "corridor" in obs.text
    assert [t["function"]["name"] for t in info["tools"]] == ["act"]
    return env, [await env.step(Action.call("act", command=c)) for c in commands]


async def test_walkthrough_wins_and_ends_the_episode() -> None:
    env, results = await play("go east", "go east", "go east")
    assert [r.terminated for r in results] == [False, False, True]
    assert results[0].observation.tool_results[0].content == "Room 1."
    verdict = await env.verify()
    assert verdict.passed and verdict.score == 1.0
    assert verdict.evidence["corridor"] == {"score": 3, "max_score": 3, "won": True, "lost": False, "moves": 3}


async def test_progress_is_not_a_win_unless_partial_credit() -> None:
    env, results = await play("go east", "dance")
    assert results[1].observation.tool_results[0].error is None  # the game's own answer, not an error
    done = await env.step(Action.say("I won"))
    assert done.terminated
    verdict = await env.verify()
    assert not verdict.passed and verdict.score == 0.0
    assert verdict.criteria[0].score == pytest.approx(1 / 3)
    ctx = await env.verify_context()
    partial = await check_game_score(GameScoreSpec(game="corridor", partial_credit=True), ctx)
    assert partial.score == pytest.approx(1 / 3) and not partial.passed


async def test_a_lost_game_ends_the_episode_and_scores_zero() -> None:
    env, results = await play("go east", "jump")
    assert results[-1].terminated
    after = await env.step(Action.call("act", command="go east"))
    assert after.observation.tool_results[0].error == "the game is over"
    verdict = await env.verify()
    assert not verdict.passed and verdict.score == 0.0 and "lost" in verdict.criteria[0].detail


@pytest.mark.parametrize("call", [
    ToolCall(name="look", arguments='{"command": "x"}'),
    ToolCall(name="act", arguments="{oops"),
    ToolCall(name="act", arguments='{"command": "   "}'),
    ToolCall(name="act", arguments='{"command": "go east", "extra": 1}'),
    ToolCall(name="act", arguments='["go east"]'),
    ToolCall(name="act", arguments='{"command": "' + "x" * 501 + '"}'),
])
async def test_malformed_calls_are_error_observations(call: ToolCall) -> None:
    env, _ = await play()
    result = await env.step(Action(tool_calls=(call,)))
    assert result.observation.last_action_error and not result.terminated
    assert env.pos == 0 and env.moves == 0  # nothing reached the game


async def test_empty_action_is_an_error_and_no_state_scores_zero() -> None:
    env, _ = await play()
    assert (await env.step(Action())).observation.last_action_error
    verdict = await check_game_score(GameScoreSpec(game="corridor"), VerifyContext(calls=[], final_answer=None))
    assert verdict.score == 0.0 and not verdict.passed


async def test_tamper_agents_score_zero_on_the_fake() -> None:
    for kind in (DebugVerbs, HalfWalkthrough):
        env = Corridor()
        obs, info = await env.reset(task=TASK)
        agent = kind(TASK)
        await agent.reset(obs, info)
        for _ in range(40):
            result = await env.step(await agent.act(obs))
            obs = result.observation
            if result.terminated:
                break
        assert result.terminated
        assert (await env.verify()).score == 0.0, kind.name


def test_game_state_is_a_snapshot_not_a_sql_view() -> None:
    from envgym.verify.state import SqlView, StateView

    state = GameState(score=40, max_score=100, won=False, lost=False, moves=7)
    assert state.snapshot() == {"game": [{"score": 40, "max_score": 100, "won": False, "lost": False, "moves": 7}]}
    assert isinstance(state, StateView) and not isinstance(state, SqlView)
