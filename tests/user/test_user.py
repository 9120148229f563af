"""Simulated users: the scripted user's rules, the LLM user against a real HTTP endpoint on 127.0.0.1,
the conversational tool env (tool/telecom-v1) end to end, and ``envgym eval --user``."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import envgym
from envgym.agents.baseline import NullAgent, OracleAgent
from envgym.errors import SpecError
from envgym.eval import EvalConfig, evaluate
from envgym.record import read_records
from envgym.rollout import run_episode
from envgym.task import load_suite
from envgym.types import Action, Outcome
from envgym.user import (
    STOP,
    HFUserConfig,
    OpenAIUserConfig,
    ScriptedUser,
    ScriptedUserConfig,
    UserProfile,
    parse_user,
    profile_of,
    user_prompt,
)

PROFILE = UserProfile.model_validate({
    "goal": "Pay the bill.", "patience": 2, "max_turns": 5,
    "facts": [{"name": "phone number", "says": "It's 415-555-0101.", "keys": ["phone"]},
              {"name": "PIN", "says": "PIN 4821.", "keys": ["pin"]}]})


async def test_scripted_user_tells_facts_asked_for_and_ends_on_a_statement() -> None:
    user = ScriptedUser(PROFILE, "I want to pay my bill.")
    reply = await user.respond("What is your phone number and PIN?")
    assert reply == ("It's 415-555-0101. PIN 4821.", False)
    reply = await user.respond("Paid: your balance is $0.00.")
    assert reply.done and reply.text == PROFILE.closing


async def test_scripted_user_gives_up_after_its_patience_and_after_max_turns() -> None:
    user = ScriptedUser(PROFILE, "I want to pay my bill.")
    first = await user.respond("")
    assert not first.done and "I want to pay my bill." in first.text
    assert (await user.respond("Anything else?")).done  # patience 2: the second miss in a row ends it
    user = ScriptedUser(PROFILE, "hi")
    for _ in range(5):
        assert not (await user.respond("Your phone?")).done
    assert (await user.respond("Your phone?")).done  # the sixth message is past max_turns


def test_profile_of_names_the_missing_or_bad_field() -> None:
    with pytest.raises(SpecError, match=r"metadata\.user is missing"):
        profile_of({}, task_id="t")
    with pytest.raises(SpecError, match=r"metadata\.user\.facts\.0\.keys"):
        profile_of({"user": {"goal": "g", "facts": [{"name": "n", "says": "s", "keys": ["Phone"]}]}}, task_id="t")


def test_parse_user_kinds_and_errors() -> None:
    assert parse_user("scripted") == ScriptedUserConfig()
    assert parse_user("openai:m", base_url="http://127.0.0.1:1/v1") == OpenAIUserConfig(
        model="m", base_url="http://127.0.0.1:1/v1")
    assert parse_user("hf").model_path is None
    with pytest.raises(SpecError, match="needs a model"):
        parse_user("openai")
    with pytest.raises(SpecError, match="unknown user 'robot'"):
        parse_user("robot")


def test_user_prompt_holds_goal_and_facts_and_the_stop_rule() -> None:
    prompt = user_prompt(PROFILE)
    assert "Pay the bill." in prompt and "PIN: PIN 4821." in prompt and STOP in prompt


def _telecom(kind: str) -> Any:
    return next(t for t in load_suite("tool-telecom") if t.metadata["kind"] == kind)


async def test_oracle_passes_and_null_fails_with_the_user_named_in_the_verdict() -> None:
    task = _telecom("resume")
    async with envgym.make("tool/telecom-v1") as env:
        good = await run_episode(env, OracleAgent(task), task, seed=0)
        bad = await run_episode(env, NullAgent(), task, seed=0)
    assert good.outcome is Outcome.SUCCESS and good.reward == 1.0
    assert good.verdict.evidence["user"]["type"] == "scripted" and good.verdict.evidence["user"]["turns"] == 3
    assert bad.outcome is Outcome.FAILURE and bad.reward == 0.0
    assert bad.verdict.evidence["user"]["turns"] == 3  # patience: three silent messages, then the user leaves


async def test_doing_the_work_without_telling_the_user_fails_the_conveyed_criterion() -> None:
    task = _telecom("pay")
    quiet = tuple(a if a.tool_calls or a is not task.solution[-1] else Action.say("All done.") for a in task.solution)
    async with envgym.make("tool/telecom-v1") as env:
        trajectory = await run_episode(env, OracleAgent(task.model_copy(update={"solution": quiet})), task, seed=0)
    assert trajectory.reward == 0.0
    assert [c.name for c in trajectory.verdict.criteria if not c.passed]  # the answer regex, not the writes


async def test_a_task_without_a_user_profile_is_refused_at_reset() -> None:
    task = _telecom("plan")
    bare = task.model_copy(update={"metadata": {"kind": "plan"}})
    async with envgym.make("tool/telecom-v1") as env:
        with pytest.raises(SpecError, match="needs a simulated user"):
            await env.reset(task=bare)


class UserServer:
    """An OpenAI-compatible endpoint on 127.0.0.1 playing the user with canned replies, in order."""

    def __init__(self, replies: list[str]) -> None:
        self.replies, self.requests = list(replies), []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                outer.requests.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                text = outer.replies.pop(0) if outer.replies else f"Bye {STOP}"
                body = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
                                   "usage": {"prompt_tokens": 11, "completion_tokens": 3}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def llm_user() -> Iterator[UserServer]:
    server = UserServer(["Sure: 415-555-0101, PIN 4821.", "About 12 GB a month.", f"Great, thanks! {STOP}"])
    yield server
    server.close()


async def test_an_llm_user_through_an_openai_compatible_endpoint(llm_user: UserServer) -> None:
    task = next(t for t in load_suite("tool-telecom") if t.id == "telecom-000-plan")
    config = OpenAIUserConfig(model="user-model", base_url=llm_user.url)
    async with envgym.make("tool/telecom-v1", user=config) as env:
        trajectory = await run_episode(env, OracleAgent(task), task, seed=0)
    assert trajectory.reward == 1.0
    user = trajectory.verdict.evidence["user"]
    assert user["type"] == "openai" and user["model"] == "user-model" and user["turns"] == 3
    assert user["usage"]["prompt_tokens"] == 33
    first = llm_user.requests[0]
    assert first["model"] == "user-model" and "tools" not in first
    assert task.metadata["user"]["goal"] in first["messages"][0]["content"]  # from the hidden profile
    assert first["messages"][1] == {"role": "assistant", "content": task.instruction}
    assert first["messages"][2]["role"] == "user" and "PIN" in first["messages"][2]["content"]
    assert STOP not in trajectory.steps[-1].observation.text  # the marker ends; the agent never reads it


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_a_user_endpoint_that_does_not_answer_is_an_infra_error() -> None:
    task = _telecom("plan")
    config = OpenAIUserConfig(model="m", base_url=f"http://127.0.0.1:{_closed_port()}/v1", retries=0, timeout_s=2)
    async with envgym.make("tool/telecom-v1", user=config) as env:
        trajectory = await run_episode(env, OracleAgent(task), task, seed=0)
    assert trajectory.outcome is Outcome.INFRA_ERROR and "simulated user" in (trajectory.error or "")


async def test_eval_runs_the_configured_user_and_records_it(tmp_path: Any, llm_user: UserServer) -> None:
    from envgym.agents import OracleConfig

    base = EvalConfig(suites=("tool-telecom",), agent=OracleConfig(), limit=1)
    config = base.model_copy(update={"user": OpenAIUserConfig(model="user-model", base_url=llm_user.url)})
    assert config.hash != base.hash
    assert base.hash == envgym.types.content_hash(  # runs without a user keep their hash
        {k: v for k, v in base.model_dump(mode="json").items() if k != "user"})
    summary = await evaluate(config, tmp_path / "run", concurrency=1)
    assert summary.outcomes == {"success": 1}
    records, _ = read_records(tmp_path / "run" / "records.jsonl")
    assert records[0].verdict.evidence["user"]["model"] == "user-model"
    assert json.loads((tmp_path / "run" / "run.json").read_text())["config"]["user"]["type"] == "openai"


@pytest.mark.model
@pytest.mark.slow
async def test_the_embedded_smollm2_plays_the_user() -> None:
    task = _telecom("plan")
    async with envgym.make("tool/telecom-v1", user=HFUserConfig(max_new_tokens=24)) as env:
        await env.reset(task=task)
        obs, *_ = await env.step(Action.say("Hello! Could you tell me your phone number and PIN?"))
        verdict = await env.verify()
    assert obs.text.strip() and STOP not in obs.text  # the model's words reach the agent, without the marker
    user = verdict.evidence["user"]
    assert user["type"] == "hf" and user["model_path"] is None and user["turns"] == 1
    assert user["usage"]["calls"] == 1 and user["usage"]["completion_tokens"] > 0


def test_eval_refuses_an_unknown_user_on_the_command_line(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    from envgym.cli import main

    code = main(["eval", "--suite", "tool-telecom", "--agent", "oracle", "--user", "robot", "--out",
                 str(tmp_path / "run")])
    assert code != 0 and "unknown user 'robot'" in capsys.readouterr().err
