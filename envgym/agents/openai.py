"""The ``openai`` agent: any OpenAI-compatible chat-completions endpoint, through function calling.

    factory = OpenAIAgentFactory("http://127.0.0.1:8000/v1", "my-model", api_key_env="MY_KEY")
    agent = factory.create(task)           # one per episode; all share one httpx.AsyncClient
    ...
    await factory.aclose()

Each step posts the episode's transcript and the env's tools to ``{base_url}/chat/completions``; the
reply's ``tool_calls`` become :class:`ToolCall`\\ s with the model's raw ``arguments`` string (malformed
JSON reaches the env and comes back as an error observation); a reply without tool calls is the final
message. Connect errors, timeouts, 429 and 5xx are retried with exponential backoff and jitter (``retries``
times, each wait at most ``max_backoff_s``, a numeric ``Retry-After`` honoured within that bound); then
the step raises :class:`PolicyError` (:class:`PolicyTimeout` when the last try timed out) and the episode
is an infra error. Any other 4xx raises at once with the server's message. The API key is resolved when
the factory is built, never sent anywhere but the endpoint, and never described.

Vision models (``images=True``): every image an observation carries (:func:`envgym._images.observation_images`:
a web or GUI screenshot, whatever the family) is sent as an ``image_url`` content part of the observation's
user message, as a data URL. The size budget: each image is downscaled to at most ``image_max_pixels`` and
re-encoded to at most ``image_max_bytes`` (:func:`envgym._images.fit_image`); with ``max_images``, only the
last N images of the conversation stay in it and older ones become a text note (that rewrites history, so
a recording proxy starts a new token segment each turn; leave it unset to train). A keyless endpoint (a local
vLLM or llama.cpp server) needs nothing: with ``key_required=False`` (what ``envgym eval`` passes unless
``--api-key-env`` is given) an unset variable means no ``Authorization`` header at all; a variable named
on purpose must be set.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
from typing import TYPE_CHECKING, Any

import httpx

from envgym._images import ObservedImage, fit_image, observation_images
from envgym.agent import Agent
from envgym.agents.chat import Transcript, system_prompt
from envgym.errors import ContextOverflow, PolicyError, PolicyTimeout, SpecError
from envgym.types import Action, Observation, ToolCall, Usage

if TYPE_CHECKING:
    from envgym.task import TaskSpec

_CONTEXT = re.compile(r"context|too long|too many tokens|maximum.*tokens|max_tokens|prompt.*length", re.I)
"""How OpenAI-compatible servers (OpenAI, vLLM, llama.cpp, TGI) word a request that outgrew the context."""


class OpenAIAgentFactory:
    """Builds :class:`OpenAIAgent`\\ s that share one HTTP client; see the module docstring."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, api_key_env: str | None = None,
                 temperature: float = 0.0, max_tokens: int | None = None, timeout_s: float = 60,
                 retries: int = 3, *, backoff_s: float = 0.5, max_backoff_s: float = 8.0,
                 key_required: bool = True, images: bool = False, image_max_pixels: int | None = 1280 * 720,
                 image_max_bytes: int | None = 1_000_000, max_images: int | None = None) -> None:
        if api_key is None and api_key_env:
            api_key = os.environ.get(api_key_env)
            if not api_key and key_required:
                raise SpecError(f"the API key variable {api_key_env} is not set", field="api_key_env")
        if retries < 0 or timeout_s <= 0:
            raise SpecError("retries must be >= 0 and timeout_s > 0")
        if any(v is not None and v < 1 for v in (image_max_pixels, image_max_bytes, max_images)):
            raise SpecError("image_max_pixels, image_max_bytes and max_images must be positive", field="images")
        self.images = images
        self.image_max_pixels = image_max_pixels
        self.image_max_bytes = image_max_bytes
        self.max_images = max_images
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client: httpx.AsyncClient | None = None
        self._closed = False
        self._jitter = random.Random()

    def create(self, task: TaskSpec) -> OpenAIAgent:
        return OpenAIAgent(self)

    def describe(self) -> dict[str, Any]:
        return {"agent": "openai", "model": self.model, "base_url": self.base_url,
                "temperature": self.temperature, "max_tokens": self.max_tokens,
                "timeout_s": self.timeout_s, "retries": self.retries,
                **({"images": True, "image_max_pixels": self.image_max_pixels, "image_max_bytes": self.image_max_bytes,
                    "max_images": self.max_images} if self.images else {})}

    async def aclose(self) -> None:
        self._closed = True
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        """One chat completion, retried as the module docstring says. Returns the decoded JSON body."""
        if self._closed:
            raise PolicyError("the openai agent factory is closed")
        if self._client is None:
            self._client = httpx.AsyncClient(headers=self._headers, timeout=httpx.Timeout(self.timeout_s))
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": self.temperature}
        if tools:
            body["tools"] = tools
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        url = f"{self.base_url}/chat/completions"
        problem, timed_out, wait = "", False, 0.0
        for attempt in range(self.retries + 1):
            if attempt:
                await asyncio.sleep(wait)
            wait = min(self.max_backoff_s, self.backoff_s * 2**attempt) * self._jitter.uniform(0.5, 1.0)
            try:
                response = await self._client.post(url, json=body)
            except httpx.TransportError as exc:  # connect errors, timeouts, dropped connections
                timed_out = isinstance(exc, httpx.TimeoutException)
                problem = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                continue
            timed_out = False
            if response.status_code == 429 or response.status_code >= 500:
                problem = f"HTTP {response.status_code}: {_server_message(response)}"
                retry_after = response.headers.get("retry-after", "")
                if retry_after.replace(".", "", 1).isdigit():
                    wait = min(self.max_backoff_s, max(wait, float(retry_after)))
                continue
            if response.status_code == 413 or (response.status_code in (400, 422) and _CONTEXT.search(
                    _server_message(response))):  # the agent's conversation outgrew the model
                raise ContextOverflow(f"{url} refused the agent's request with HTTP {response.status_code}: "
                                      f"{_server_message(response)}")
            if response.is_error:
                raise PolicyError(f"{url} rejected the request with HTTP {response.status_code}: "
                                  f"{_server_message(response)}")
            try:
                return response.json()
            except ValueError as exc:
                raise PolicyError(f"{url} answered with a body that is not JSON: {response.text[:200]!r}") from exc
        error = (PolicyTimeout if timed_out else PolicyError)(f"{url} failed after {self.retries + 1} attempt(s): "
                                                               f"{problem}")
        error.blame = "infra"  # the endpoint did not answer: not the agent's doing, unlike a step over its deadline
        raise error


class OpenAIAgent(Agent):
    """One episode's agent; built by :class:`OpenAIAgentFactory`."""

    name = "openai"

    def __init__(self, factory: OpenAIAgentFactory) -> None:
        super().__init__()
        self._factory = factory
        self.transcript = Transcript(system_prompt(""))

    async def reset(self, observation: Observation, info: dict[str, Any]) -> None:
        self.transcript = Transcript(system_prompt(info.get("policy", "")), tools=info.get("tools"))

    async def act(self, observation: Observation) -> Action:
        self.transcript.observe(observation)
        if self._factory.images:
            await self._attach_images(observation)
        data = await self._factory.complete(self.transcript.messages, self.transcript.tools)
        action, usage = parse_completion(data)
        self.usage = self.usage + usage
        self.transcript.record(action)
        return action


    async def _attach_images(self, observation: Observation) -> None:
        factory = self._factory
        found = observation_images(observation)
        if not found:
            return
        fitted = await asyncio.to_thread(lambda: [fit_image(image, max_pixels=factory.image_max_pixels,
                                                            max_bytes=factory.image_max_bytes) for image in found])
        self.transcript.attach([{"type": "image_url", "image_url": {"url": self.image_url(image)}}
                                for image in fitted])
        if factory.max_images is not None:
            _keep_last_images(self.transcript.messages, factory.max_images)

    def image_url(self, image: ObservedImage) -> str:
        """How an image travels to the endpoint: a data URL (a recording agent sends a store reference)."""
        return image.data_url()


def _keep_last_images(messages: list[dict[str, Any]], keep: int) -> None:
    seen = 0
    for message in reversed(messages):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for i in range(len(content) - 1, -1, -1):
            if content[i].get("type") == "image_url":
                seen += 1
                if seen > keep:
                    content[i] = {"type": "text", "text": "(an earlier screenshot, omitted)"}


def parse_completion(data: Any) -> tuple[Action, Usage]:
    """The action and usage of a chat-completions response body; a body of another shape is a PolicyError."""
    try:
        message = data["choices"][0]["message"]
        calls = []
        for raw in message.get("tool_calls") or ():
            function = raw["function"]
            arguments = function.get("arguments")
            if not isinstance(arguments, str):  # some servers send an object; the env wants JSON text
                arguments = json.dumps({} if arguments is None else arguments, ensure_ascii=False)
            ids = {"id": raw["id"]} if raw.get("id") else {}
            calls.append(ToolCall(name=function.get("name") or "", arguments=arguments, **ids))
        content = message.get("content")
        counts = data.get("usage") or {}
        usage = Usage(prompt_tokens=counts.get("prompt_tokens") or 0,
                      completion_tokens=counts.get("completion_tokens") or 0, calls=1)
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
        raise PolicyError(f"malformed chat completion ({type(exc).__name__}: {exc}): {str(data)[:300]}") from exc
    text = content if isinstance(content, str) else None
    if calls and not text:
        text = None
    return Action(text=text, tool_calls=tuple(calls)), usage


def _server_message(response: httpx.Response) -> str:
    try:
        error = response.json().get("error")
        message = error.get("message") if isinstance(error, dict) else error
    except (ValueError, AttributeError):
        message = None
    return str(message) if message else (response.text[:300] or response.reason_phrase)
