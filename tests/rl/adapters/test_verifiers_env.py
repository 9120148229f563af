"""PrimeIntellect verifiers: vf.load_environment("envgym") and verifiers' own evaluate path, through the proxy."""

from __future__ import annotations

import pytest

pytest.importorskip("openai", reason="the verifiers adapter test needs openai (installed with verifiers)")

try:  # the envgym checkout's grading-asset folder is also named verifiers/: the adapter finds the real one
    from envgym.rl.adapters.verifiers_env import EnvgymEnv, vf
except ImportError as exc:  # pragma: no cover - depends on the optional install
    pytest.skip(f"the verifiers adapter needs verifiers (pip install 'verifiers==0.3.1'): {exc}",
                allow_module_level=True)

from envgym.rl.backends import TransformersBackend
from envgym.rl.models import tiny_policy


@pytest.mark.slow
async def test_verifiers_evaluate_scores_rollouts_with_envgym_verdicts(monkeypatch):
    from envgym.rl.proxy import RecordingProxy

    monkeypatch.setenv("ENVGYM_PROXY_KEY", "unused")  # the proxy takes the session from the header below
    env = vf.load_environment("envgym", suite="tool-retail", split="train", limit=2, max_turns=2)
    assert isinstance(env, EnvgymEnv) and len(env.get_eval_dataset()) == 2
    model, tokenizer = tiny_policy(seed=0)
    backend = TransformersBackend(model, tokenizer)
    try:
        async with RecordingProxy(backend) as proxy:
            config = vf.ClientConfig(api_base_url=proxy.base_url, api_key_var="ENVGYM_PROXY_KEY", max_retries=0,
                                     extra_headers_from_state={"Authorization": "envgym_proxy_auth"})
            results = await env.evaluate(config, "policy", sampling_args={"max_tokens": 24, "temperature": 1.0},
                                         num_examples=2, rollouts_per_example=1, max_concurrent=2,
                                         state_columns=["envgym_verdict", "envgym_outcome", "envgym_task_id",
                                                        "envgym_session"],
                                         on_progress=lambda *a, **k: None)
            sessions = {o["envgym_session"]: proxy.session(o["envgym_session"]).calls for o in results["outputs"]}
    finally:
        await backend.aclose()

    outputs = results["outputs"]
    assert sorted(o["envgym_task_id"] for o in outputs) == sorted(env.envgym_tasks)
    assert len(sessions) == 2 and all(sessions.values())  # one proxy session per rollout, every turn recorded
    for output in outputs:
        verdict = output["envgym_verdict"]
        assert verdict is not None and verdict["criteria"], output.get("error")  # really graded by envgym
        assert output["reward"] == verdict["score"]
        assert output["envgym_outcome"] in {"success", "failure", "truncated"}


async def test_env_response_steps_the_envgym_env_with_the_models_tool_calls():
    """One rollout driven by hand: a tool call reaches the env, its result comes back as a tool message."""
    import envgym

    task = envgym.load_suite("tool-retail", split="train")[0]
    env = EnvgymEnv([task])
    state = vf.State(input={"prompt": [], "example_id": 0, "info": {"task_id": task.id}})
    await env.setup_state(state)
    assert state["prompt"][0].role == "system" and state["tool_defs"]
    call = vf.AssistantMessage(content=None, tool_calls=[vf.ToolCall(id="c1", name="find_customer_by_email",
                                                                     arguments='{"email": "ava.chen@example.com"}')])
    reply = await env.env_response([*state["prompt"], call], state)
    assert [m.role for m in reply] == ["tool"] and reply[0].tool_call_id == "c1"
    final = vf.AssistantMessage(content="Done.")
    await env.env_response([*state["prompt"], call, *reply, final], state)
    assert state["final_env_response"] is not None
    await env.close_envgym(state)
    assert state["envgym_outcome"] in {"success", "failure"}
    assert state["envgym_verdict"]["score"] == await env.envgym_score(state)


@pytest.mark.slow
async def test_verifiers_records_the_proxys_token_ids_and_logprobs():
    """With vLLM's token fields requested, verifiers' own token capture (what prime-rl trains on) is the proxy's."""
    from openai import AsyncOpenAI

    import envgym
    from envgym.rl.proxy import RecordingProxy

    task = envgym.load_suite("timed-backoffice", split="train")[0]
    env = EnvgymEnv([task], max_turns=1)
    model, tokenizer = tiny_policy(seed=1)
    backend = TransformersBackend(model, tokenizer)
    try:
        async with RecordingProxy(backend) as proxy:
            openai = AsyncOpenAI(base_url=proxy.base_url_for("tokens"), api_key="tokens", max_retries=0)
            row = env.get_eval_dataset()[0]
            state = await env.rollout({"prompt": row["prompt"], "example_id": 0, "info": row["info"]},
                                      vf.OpenAIChatCompletionsClient(openai), "policy",
                                      {"max_tokens": 16, "temperature": 1.0, "logprobs": True,
                                       "extra_body": {"return_token_ids": True}})
            await openai.close()
            calls = proxy.session("tokens").calls
    finally:
        await backend.aclose()
    tokens = state["trajectory"][0]["tokens"]
    assert tokens is not None and len(calls) == 1
    assert tokens["prompt_ids"] == calls[0].prompt_ids
    assert tokens["completion_ids"] == calls[0].completion_ids
    assert tokens["completion_logprobs"] == pytest.approx(calls[0].logprobs, abs=1e-6)
    assert state["envgym_verdict"] is not None
