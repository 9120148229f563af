"""Fakes for the other side of envgym.rl's boundaries: a scripted inference backend and a loopback fake vLLM."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from envgym.rl.backends import BackendError, Completion
from envgym.rl.http import JsonServer, Request, error_body


class ScriptedBackend:
    """Answers each call with the next scripted text (tokenised, plus end of turn), logprob -0.5 per token."""

    def __init__(self, tokenizer: Any, replies: Sequence[str], *, fail: bool = False) -> None:
        self.tokenizer = tokenizer
        self.policy_version = 0
        self.replies = list(replies)
        self.prompts: list[list[int]] = []
        self.requests: list[dict[str, Any]] = []
        self.seeds: list[int | None] = []
        self.fail = fail

    async def generate(self, prompt_ids: list[int], *, max_new_tokens: int, temperature: float = 1.0,
                       top_p: float = 1.0, seed: int | None = None,
                       stop: Sequence[str] | None = None) -> Completion:
        if self.fail:
            raise BackendError("the model crashed")
        self.prompts.append(list(prompt_ids))
        self.requests.append({"max_new_tokens": max_new_tokens, "temperature": temperature, "top_p": top_p})
        self.seeds.append(seed)
        text = self.replies[(len(self.prompts) - 1) % len(self.replies)]
        ids = [*self.tokenizer.encode(text, add_special_tokens=False), self.tokenizer.eos_token_id]
        return Completion(ids, [-0.5] * len(ids), "stop", self.policy_version)

    async def update_weights(self, state_dict_or_path: Mapping[str, Any] | str | Path, version: int) -> None:
        self.policy_version = version

    async def aclose(self) -> None:
        pass


class FakeVLLM:
    """A loopback server with vLLM's ``/v1/completions`` (token-id prompts) and weight-update endpoints."""

    def __init__(self, *, delay_s: float = 0.0) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.delay_s = delay_s
        self.status = 200
        self.server = JsonServer(self.handle)

    async def handle(self, request: Request) -> tuple[int, dict[str, Any]]:
        body = request.json()
        self.calls.append((request.path, body))
        if self.status != 200:
            return self.status, error_body("engine dead", "server_error")
        if request.path == "/v1/completions":
            await asyncio.sleep(self.delay_s)
            prompt = body["prompt"]
            ids = [(prompt[-1] + i + 1) % 100 for i in range(body["max_tokens"])]
            return 200, {"id": "cmpl-1", "object": "text_completion", "model": body["model"],
                         "choices": [{"index": 0, "text": "x" * len(ids), "token_ids": ids,
                                      "logprobs": {"tokens": [f"token_id:{i}" for i in ids],
                                                   "token_logprobs": [-0.25] * len(ids), "top_logprobs": None},
                                      "finish_reason": "length"}],
                         "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(ids)}}
        if request.path in ("/update_weights", "/reset_prefix_cache"):
            return 200, {}
        return 404, error_body("no route")
