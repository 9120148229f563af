"""The openai agent against a real OpenAI-compatible HTTP server on 127.0.0.1, serving canned replies."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import envgym
from envgym.agents.openai import OpenAIAgentFactory, parse_completion
from envgym.errors import PolicyError, PolicyTimeout, SpecError
from envgym.rollout import run_episode
from envgym.types import Action, Observation, Outcome, ToolResult

from fakes import NOTES_SUITE

TOOLS = [{"type": "function", "function": {
    "name": "get_order", "description": "[read] Look up an order.",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}}]
INFO = {"tools": TOOLS, "policy": "Verify the customer's identity before any write."}
FIRST = Observation(text="Where is my order o1?")
RAW_ARGS = '{"order_id":  "o1"}'  # odd spacing: the agent must pass the model's text through untouched


def completion(*, content: str | None = None, tool_calls: list[dict[str, Any]] | None = None,
               prompt_tokens: int = 10, completion_tokens: int = 5) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": "canned",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


TOOL_CALL = completion(tool_calls=[{"id": "call_abc", "type": "function",
                                    "function": {"name": "get_order", "arguments": RAW_ARGS}}])
FINAL = completion(content="Your order o1 has shipped.", prompt_tokens=30, completion_tokens=7)


class ChatServer:
    """Answers POSTs with scripted ``(status, body, delay_s, headers)`` replies and records each request."""

    def __init__(self, script: list[tuple[int, Any, float, dict[str, str]]], port: int = 0) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                server.requests.append({"path": self.path, "headers": dict(self.headers),
                                        "json": json.loads(body)})
                status, reply, delay, headers = server.script.pop(0)
                time.sleep(delay)
                data = json.dumps(reply).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.01,), daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_port}/v1/"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[ChatServer] = []

    def start(*replies: Any) -> ChatServer:
        script = [r if isinstance(r, tuple) else (200, r, 0.0, {}) for r in replies]
        servers.append(ChatServer(script))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def factory_for(url: str, **kwargs: Any) -> OpenAIAgentFactory:
    return OpenAIAgentFactory(url, "canned", **{"backoff_s": 0.01, "max_backoff_s": 0.05, **kwargs})


async def test_tool_call_then_final_message(serve: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve(TOOL_CALL, FINAL)
    monkeypatch.setenv("CANNED_KEY", "sk-test")
    factory = factory_for(server.base_url, api_key_env="CANNED_KEY", temperature=0.3, max_tokens=64)
    agent = factory.create(None)  # type: ignore[arg-type] - the openai agent ignores the task
    try:
        await agent.reset(FIRST, INFO)
        first = await agent.act(FIRST)
        assert first.tool_calls[0].id == "call_abc"
        assert first.tool_calls[0].name == "get_order"
        assert first.tool_calls[0].arguments == RAW_ARGS
        assert not first.is_final
        result = ToolResult(call_id="call_abc", name="get_order", content='{"status": "shipped"}')
        final = await agent.act(Observation(tool_results=(result,)))
    finally:
        await factory.aclose()
    assert final == Action(text="Your order o1 has shipped.")
    assert (agent.usage.prompt_tokens, agent.usage.completion_tokens, agent.usage.calls) == (40, 12, 2)

    sent = [r["json"] for r in server.requests]
    assert [r["path"] for r in server.requests] == ["/v1/chat/completions"] * 2
    assert server.requests[0]["headers"]["Authorization"] == "Bearer sk-test"
    assert sent[0]["model"] == "canned" and sent[0]["tools"] == TOOLS
    assert (sent[0]["temperature"], sent[0]["max_tokens"]) == (0.3, 64)
    system, user = sent[0]["messages"]
    assert system["role"] == "system" and INFO["policy"] in system["content"]
    assert user == {"role": "user", "content": FIRST.text}
    assistant, tool = sent[1]["messages"][2:]
    assert assistant["tool_calls"] == [{"id": "call_abc", "type": "function",
                                        "function": {"name": "get_order", "arguments": RAW_ARGS}}]
    assert tool == {"role": "tool", "tool_call_id": "call_abc", "content": '{"status": "shipped"}'}


async def test_episode_through_the_rollout(serve: Any, notes: list[envgym.TaskSpec]) -> None:
    delete = completion(tool_calls=[{"id": "call_del", "type": "function",
                                     "function": {"name": "delete_note", "arguments": '{"note_id": 1}'}}])
    server = serve(delete, completion(content="Deleted the groceries note."))
    factory = factory_for(server.base_url)
    task = notes[0]
    async with envgym.make("test/notes-v1") as env:
        trajectory = await run_episode(env, factory.create(task), task)
    await factory.aclose()
    assert trajectory.outcome == Outcome.SUCCESS, trajectory.error
    assert trajectory.steps[0].observation.tool_results[0].call_id == "call_del"
    assert trajectory.usage.calls == 2
    fed_back = server.requests[1]["json"]["messages"][-1]
    assert fed_back == {"role": "tool", "tool_call_id": "call_del", "content": '{"deleted": 1}'}
    assert {t["function"]["name"] for t in server.requests[0]["json"]["tools"]} >= {"delete_note", "list_notes"}


async def test_errors_are_fed_back_to_the_model(serve: Any) -> None:
    server = serve(TOOL_CALL, FINAL, FINAL)
    factory = factory_for(server.base_url)
    agent = factory.create(None)  # type: ignore[arg-type]
    try:
        await agent.reset(FIRST, INFO)
        await agent.act(FIRST)
        rejected = ToolResult(call_id="call_abc", name="get_order", content="no order o1", error="no order o1")
        await agent.act(Observation(tool_results=(rejected,), last_action_error="get_order: no order o1"))
        await agent.act(Observation(last_action_error="empty action: send tool calls or a final message"))
    finally:
        await factory.aclose()
    second, third = server.requests[1]["json"]["messages"], server.requests[2]["json"]["messages"]
    assert second[-1] == {"role": "tool", "tool_call_id": "call_abc", "content": "Error: no order o1"}
    assert third[-1]["role"] == "user" and "empty action" in third[-1]["content"]
    assert "Authorization" not in server.requests[0]["headers"]


@pytest.mark.parametrize("failures", [(500, 500), (429, 503)])
async def test_retries_then_succeeds(serve: Any, failures: tuple[int, int]) -> None:
    flaky = [(status, {"error": {"message": "busy"}}, 0.0, {"Retry-After": "0"}) for status in failures]
    server = serve(*flaky, FINAL)
    factory = factory_for(server.base_url, retries=3)
    agent = factory.create(None)  # type: ignore[arg-type]
    try:
        action = await agent.act(FIRST)
    finally:
        await factory.aclose()
    assert action.text == "Your order o1 has shipped."
    assert len(server.requests) == 3
    assert agent.usage.calls == 1


async def test_gives_up_after_the_retries(serve: Any) -> None:
    server = serve(*[(502, {"error": "bad gateway"}, 0.0, {})] * 3)
    factory = factory_for(server.base_url, retries=2)
    try:
        with pytest.raises(PolicyError, match=r"after 3 attempt\(s\): HTTP 502: bad gateway"):
            await factory.create(None).act(FIRST)  # type: ignore[arg-type]
    finally:
        await factory.aclose()
    assert len(server.requests) == 3


@pytest.fixture
def dead_url() -> str:
    """A loopback URL nobody listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/v1"


async def test_unreachable_endpoint_is_a_policy_error(dead_url: str) -> None:
    factory = factory_for(dead_url, retries=2)
    started = time.perf_counter()
    try:
        with pytest.raises(PolicyError, match=r"after 3 attempt\(s\): ConnectError") as caught:
            await factory.create(None).act(FIRST)  # type: ignore[arg-type]
    finally:
        await factory.aclose()
    assert not isinstance(caught.value, PolicyTimeout)
    assert time.perf_counter() - started < 5


async def test_unreachable_endpoint_makes_an_infra_error(dead_url: str, notes: list[envgym.TaskSpec]) -> None:
    factory = factory_for(dead_url, retries=1)
    async with envgym.make("test/notes-v1") as env:
        trajectory = await run_episode(env, factory.create(notes[0]), notes[0])
    await factory.aclose()
    assert trajectory.outcome == Outcome.INFRA_ERROR
    assert trajectory.error_type == "PolicyError" and "ConnectError" in (trajectory.error or "")


async def test_timeout_is_retried_then_a_policy_timeout(serve: Any) -> None:
    server = serve(*[(200, FINAL, 0.5, {})] * 2)
    factory = factory_for(server.base_url, timeout_s=0.1, retries=1)
    try:
        with pytest.raises(PolicyTimeout, match="ReadTimeout"):
            await factory.create(None).act(FIRST)  # type: ignore[arg-type]
    finally:
        await factory.aclose()
    assert len(server.requests) == 2


async def test_client_error_fails_at_once_with_the_servers_message(serve: Any) -> None:
    server = serve((400, {"error": {"message": "model 'canned' does not support tools"}}, 0.0, {}))
    factory = factory_for(server.base_url, retries=3)
    try:
        with pytest.raises(PolicyError, match="HTTP 400: model 'canned' does not support tools"):
            await factory.create(None).act(FIRST)  # type: ignore[arg-type]
    finally:
        await factory.aclose()
    assert len(server.requests) == 1


async def test_closed_factory_refuses(dead_url: str) -> None:
    factory = factory_for(dead_url)
    await factory.aclose()
    with pytest.raises(PolicyError, match="closed"):
        await factory.create(None).act(FIRST)  # type: ignore[arg-type]


def test_describe_never_shows_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    factory = OpenAIAgentFactory("http://127.0.0.1:8000/v1/", "m", api_key="sk-secret")
    described = factory.describe()
    assert described["agent"] == "openai"
    assert described["base_url"] == "http://127.0.0.1:8000/v1"
    assert "sk-secret" not in json.dumps(described)
    monkeypatch.delenv("MISSING_KEY", raising=False)
    with pytest.raises(SpecError, match="MISSING_KEY"):
        OpenAIAgentFactory("http://127.0.0.1:8000/v1", "m", api_key_env="MISSING_KEY")


def test_parse_completion_variants() -> None:
    obj_args = completion(content="", tool_calls=[{"id": "c1", "type": "function",
                                                   "function": {"name": "f", "arguments": {"x": 1}}}])
    action, usage = parse_completion(obj_args)
    assert action.text is None and action.tool_calls[0].arguments == '{"x": 1}'
    assert usage.calls == 1 and usage.prompt_tokens == 10
    bad_json = completion(tool_calls=[{"id": "c2", "function": {"name": "f", "arguments": '{"x": '}}])
    assert parse_completion(bad_json)[0].tool_calls[0].arguments == '{"x": '
    with pytest.raises(PolicyError, match="malformed chat completion"):
        parse_completion({"choices": []})


async def test_eval_with_a_dead_endpoint_continues_and_a_rerun_retries(dead_url: str, tmp_path: Any) -> None:
    """The issue's bad-input case: episodes become infra errors, the run finishes, a rerun retries them."""
    from collections import Counter

    from envgym.agents import OpenAIConfig
    from envgym.eval import EvalConfig, evaluate
    from envgym.record import latest, read_records


    config = EvalConfig(suites=(str(NOTES_SUITE),), split=None,
                        agent=OpenAIConfig(model="canned", base_url=dead_url, api_key_env=None, retries=1))
    first = await evaluate(config, tmp_path / "run", concurrency=3, factory=factory_for(dead_url, retries=1))
    assert first.outcomes == Counter(infra_error=3)
    records, _ = read_records(tmp_path / "run" / "records.jsonl")
    assert all(r.error_type == "PolicyError" and not r.passed for r in records)
    port = int(dead_url.split(":")[2].split("/")[0])
    server = ChatServer([(200, FINAL, 0.0, {})] * 3, port=port)  # the endpoint comes back
    try:
        second = await evaluate(config, tmp_path / "run", concurrency=3, factory=factory_for(dead_url, retries=1))
    finally:
        server.stop()
    assert second.ran == 3 and second.outcomes == Counter(failure=3)  # a real (wrong) answer, no longer infra
    final = latest(read_records(tmp_path / "run" / "records.jsonl")[0])
    assert {r.attempt for r in final} == {2} and {r.outcome.value for r in final} == {"failure"}


async def test_a_prompt_that_outgrew_the_context_is_the_agents_failure(serve: Any) -> None:
    from envgym.errors import ContextOverflow

    message = "This model's maximum context length is 2048 tokens. However, you requested 4100 tokens."
    server = serve((400, {"error": {"message": message}}, 0.0, {}))
    factory = factory_for(server.base_url)
    try:
        with pytest.raises(ContextOverflow, match="maximum context length") as caught:
            await factory.create(None).act(FIRST)  # type: ignore[arg-type]
    finally:
        await factory.aclose()
    assert caught.value.blame == "agent"


async def test_an_endpoint_that_never_answers_is_infrastructure(serve: Any) -> None:
    server = serve(*[(200, FINAL, 0.5, {})] * 2)
    factory = factory_for(server.base_url, timeout_s=0.1, retries=1)
    try:
        with pytest.raises(PolicyTimeout) as caught:
            await factory.create(None).act(FIRST)  # type: ignore[arg-type]
    finally:
        await factory.aclose()
    assert caught.value.blame == "infra"  # unlike the rollout's step deadline, which is the agent's


@pytest.mark.parametrize("key", [None, "sk-local"])
def test_eval_against_a_keyless_local_endpoint(serve: Any, screen: Any, tmp_path: Any,
                                               monkeypatch: pytest.MonkeyPatch, key: str | None) -> None:
    """``--agent openai:MODEL --base-url URL`` and no key anywhere: the run works and sends no Authorization
    header (it used to exit 2: "the API key variable OPENAI_API_KEY is not set"). A key that is set is sent."""
    from envgym import cli

    if key is None:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    else:
        monkeypatch.setenv("OPENAI_API_KEY", key)
    server = serve(*[FINAL] * 3)
    argv = ["eval", "--suite", str(NOTES_SUITE), "--split", "all", "--agent", "openai:canned",
            "--base-url", server.base_url, "--out", str(tmp_path / "run"), "--quiet"]
    assert cli.main(argv) == 0, screen()[1]
    assert "ran 3" in screen()[0] and "infra_error" not in screen()[0]
    assert len(server.requests) == 3 and {r["json"]["model"] for r in server.requests} == {"canned"}
    sent = {r["headers"].get("Authorization") for r in server.requests}
    assert sent == ({None} if key is None else {f"Bearer {key}"})


def test_a_key_variable_named_on_purpose_must_be_set(screen: Any, tmp_path: Any,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from envgym import cli

    monkeypatch.delenv("MY_MISSING_KEY", raising=False)
    argv = ["eval", "--suite", str(NOTES_SUITE), "--split", "all", "--agent", "openai:canned",
            "--api-key-env", "MY_MISSING_KEY", "--out", str(tmp_path / "run")]
    assert cli.main(argv) == 2
    assert "the API key variable MY_MISSING_KEY is not set" in screen()[1]
