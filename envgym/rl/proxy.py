"""The recording proxy: an OpenAI-compatible chat endpoint that records every token it serves, per episode.

    async with RecordingProxy(backend) as proxy:             # 127.0.0.1, an ephemeral port
        url = proxy.base_url_for("episode-7")                # http://127.0.0.1:PORT/s/episode-7/v1
        ...                                                  # any OpenAI client / agent harness uses url
        record = proxy.close_session("episode-7")            # SessionRecord: .calls, .segments(), .token_data

Routes: ``POST /s/<session>/v1/chat/completions`` and ``GET /s/<session>/v1/models``; the same without the
``/s/<session>`` prefix take the session from ``Authorization: Bearer <session>``. A session is created on
first use. Requests carry ``messages`` (with ``tool_calls`` and ``tool`` results), ``tools``, ``temperature``
(default 1), ``top_p``, ``max_tokens``/``max_completion_tokens``, ``seed``, ``stop``; ``stream: true`` and
``n > 1`` are rejected with a 400. ``sampling=`` pins temperature/top-p whatever clients ask, so importance
ratios are not biased by a harness's settings. Responses are chat completions with ``usage``; tool calls
are parsed from the model's ``<tool_call>{json}</tool_call>`` blocks with the ``hf`` agent's parser.
``"return_token_ids": true`` adds ``prompt_token_ids`` and ``choices[0].token_ids`` (vLLM's names);
``"logprobs": true`` adds OpenAI-style logprobs; every response has an ``envgym`` block (session, call,
segment, policy version). A backend failure answers 502, a prompt over the context 400, both with
OpenAI-style error bodies (envgym's ``openai`` agent then records an infra error).

Token faithfulness: messages are rendered with the tokenizer's chat template in the ``hf`` agent's format
(tools described in the system turn, tool results as ``<tool_response>`` user turns). An assistant message
that this session produced is rendered as the model's exact text, and when the rendered conversation
starts with the previous call's prompt + completion text, the new prompt ids are the previous prompt ids +
completion ids + the tokens of the new text only: generated tokens are never re-tokenised. Otherwise
(the harness edited history) the whole text is tokenised and a new segment begins (see
:mod:`envgym.rl.samples`). Rendering and tokenising run on the event loop: they take well under a
millisecond for one turn, less than a hop to a worker thread would cost.

Images: user (and tool) messages may carry OpenAI image content parts (``{"type": "image_url", "image_url":
{"url": ...}}``) when the backend has a vision processor (``backend.processor``; a text model answers 400
``images_unsupported``). The URL is a ``data:image/...;base64,`` URL or ``envgym-image:sha256:<hex>``, a
reference to an image already in ``proxy.images`` (an :class:`~envgym.rl.vision.ImageStore`); remote URLs are
refused. Each image is stored once by content hash; the chat template writes its placeholder token and the
proxy repeats it as many times as the processor says the image takes, so ``prompt_ids`` are exactly the ids
the model consumes. A call records the reference of every image of its prompt, in order (``images``), never
the pixels; the backend gets the images' bytes. A new call extends the previous one only when the earlier
images are the same images.

Sessions stay in memory until ``close_session`` (which hands the record over and forgets it); beyond
``max_sessions`` the oldest sessions are dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import re
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from envgym.agents.hf import parse_reply, render, tool_section
from envgym.rl.backends import BackendError, Completion, InferenceBackend, PromptTooLong
from envgym.rl.http import JsonServer, Request, error_body
from envgym.rl.samples import Segment, segments_of
from envgym.rl.vision import ImageError, ImageStore, VisionProcessor


@dataclass(frozen=True, slots=True)
class Sampling:
    """Sampling settings the proxy imposes on every call (``None``: take the client's)."""

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None


@dataclass(slots=True)
class CallRecord:
    """One model call of a session."""

    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    finish_reason: str
    policy_version: int
    segment: int
    seconds: float
    images: list[str] = field(default_factory=list)
    """References (``sha256:<hex>``) of the prompt's images, in order; their bytes are in ``proxy.images``."""

    def to_dict(self) -> dict[str, Any]:
        """The call as a ``token_data`` entry of a :class:`~envgym.trajectory.Trajectory`."""
        call = {"prompt_ids": self.prompt_ids, "completion_ids": self.completion_ids, "logprobs": self.logprobs,
                "finish_reason": self.finish_reason, "policy_version": self.policy_version}
        if self.images:
            call["images"] = self.images
        return call


@dataclass
class SessionRecord:
    """Everything one session (one episode) generated; ``token_data`` is a live list of ``calls`` as dicts."""

    key: str
    calls: list[CallRecord] = field(default_factory=list)
    token_data: list[dict[str, Any]] = field(default_factory=list)
    _texts: dict[tuple[Any, ...], str] = field(default_factory=dict, repr=False)
    _last_tokens: list[int] = field(default_factory=list, repr=False)
    _last_text: str = field(default="", repr=False)
    _last_images: list[str] = field(default_factory=list, repr=False)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    def segments(self) -> list[Segment]:
        return segments_of(self.token_data)

    def transcript(self, tokenizer: Any) -> list[str]:
        """Each segment's tokens decoded (prompt + completion): the text the model saw and wrote."""
        return [tokenizer.decode(s.tokens, skip_special_tokens=False) for s in self.segments()]


class RecordingProxy:
    """See the module docstring."""

    def __init__(self, backend: InferenceBackend, host: str = "127.0.0.1", port: int = 0, *,
                 model_name: str = "envgym-policy", sampling: Sampling | None = None,
                 default_max_tokens: int = 256, max_sessions: int = 4096,
                 seed_for: Callable[[SessionRecord], int] | None = None,
                 images: ImageStore | None = None) -> None:
        self.backend = backend
        self.seed_for = seed_for
        """For a call without a ``seed``: the seed to sample it with, from its session (whose ``calls`` are
        the earlier calls). A trainer derives it from the session key and call index, so an episode samples
        the same tokens however many others run beside it. A seed the client sends is kept."""
        self.tokenizer = backend.tokenizer
        processor = getattr(backend, "processor", None)
        self.vision = VisionProcessor.of(processor) if processor is not None else None
        """The backend's vision processor (``None``: a text model, which refuses images)."""
        self.images = images if images is not None else ImageStore()
        """Every image a session sent, by content hash (what ``CallRecord.images`` refer to)."""
        self._image_tokens: dict[str, int] = {}
        self.model_name = model_name
        self.sampling = sampling or Sampling()
        self.default_max_tokens = default_max_tokens
        self.max_sessions = max_sessions
        self.sessions_dropped = 0
        self._sessions: dict[str, SessionRecord] = {}
        self._server = JsonServer(self._handle, host=host, port=port)
        self._encode = ChunkEncoder(self.tokenizer)
        self._sections: list[tuple[list[dict[str, Any]], str]] = []
        eos = self.tokenizer.eos_token_id
        self._eos = {eos} if isinstance(eos, int) else set(eos or ())

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def base_url(self) -> str:
        """The un-prefixed base URL (the session goes in the API key)."""
        return f"http://{self._server.host}:{self._server.port}/v1"

    def base_url_for(self, session: str) -> str:
        return f"http://{self._server.host}:{self._server.port}/s/{session}/v1"

    async def start(self) -> RecordingProxy:
        await self._server.start()
        return self

    async def aclose(self) -> None:
        await self._server.aclose()

    async def __aenter__(self) -> RecordingProxy:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def session(self, key: str) -> SessionRecord:
        """The session's record (created if new)."""
        record = self._sessions.get(key)
        if record is None:
            while len(self._sessions) >= self.max_sessions:
                self._sessions.pop(next(iter(self._sessions)))
                self.sessions_dropped += 1
            record = self._sessions[key] = SessionRecord(key)
        return record

    def close_session(self, key: str) -> SessionRecord | None:
        """Hand over a session's record and forget it (a later call with the key starts afresh)."""
        return self._sessions.pop(key, None)

    # -- HTTP ---------------------------------------------------------------------------------------------

    async def _handle(self, request: Request) -> tuple[int, dict[str, Any] | bytes]:
        path, key = request.path, None
        if path.startswith("/s/"):
            key, _, rest = path[3:].partition("/")
            path = "/" + rest
        path = path.removesuffix("/")
        if path in ("/v1/models", "/models") and request.method == "GET":
            return 200, {"object": "list", "data": [{"id": self.model_name, "object": "model", "created": 0,
                                                     "owned_by": "envgym"}]}
        if path == "/health":
            return 200, {"status": "ok", "policy_version": self.backend.policy_version}
        if path not in ("/v1/chat/completions", "/chat/completions"):
            return 404, error_body(f"no route {request.method} {request.path}", code="not_found")
        if request.method != "POST":
            return 405, error_body("chat completions take POST")
        if not key:
            auth = request.headers.get("authorization", "")
            key = auth[7:].strip() if auth.lower().startswith("bearer ") else ""
        if not key:
            return 401, error_body("no session: use /s/<session>/v1 or the API key 'Bearer <session>'",
                                   "authentication_error")
        try:
            body = request.json()
        except ValueError as exc:
            return 400, error_body(f"the body is not JSON: {exc}")
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or not body["messages"]:
            return 400, error_body("the body needs a non-empty 'messages' list", code="invalid_messages")
        if body.get("stream"):
            return 400, error_body("streaming is not supported by the envgym recording proxy; send stream=false",
                                   code="stream_unsupported")
        if (body.get("n") or 1) != 1:
            return 400, error_body("only n=1 is supported")
        return await self._chat(self.session(key), body)

    async def _chat(self, session: SessionRecord, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        pinned = self.sampling
        temperature = pinned.temperature if pinned.temperature is not None else body.get("temperature")
        top_p = pinned.top_p if pinned.top_p is not None else body.get("top_p")
        max_tokens = pinned.max_tokens or body.get("max_completion_tokens") or body.get("max_tokens") \
            or self.default_max_tokens
        stop = body.get("stop")
        seed = body.get("seed")
        try:
            settings = {"max_new_tokens": int(max_tokens), "seed": None if seed is None else int(seed),
                        "temperature": 1.0 if temperature is None else float(temperature),
                        "top_p": 1.0 if top_p is None else float(top_p),
                        "stop": [stop] if isinstance(stop, str) else [str(s) for s in stop or ()]}
        except (TypeError, ValueError) as exc:
            return 400, error_body(f"bad sampling parameters: {exc}")
        async with session._lock:
            if settings["seed"] is None and self.seed_for is not None:
                settings["seed"] = int(self.seed_for(session))
            try:
                prompt_ids, prompt_text, refs = self._prompt(session, body["messages"], body.get("tools") or [])
            except ImageError as exc:
                code = "images_unsupported" if self.vision is None else "invalid_image"
                return 400, error_body(str(exc), code=code)
            except Exception as exc:  # malformed messages, or a chat template that rejects them
                return 400, error_body(f"cannot render the messages: {type(exc).__name__}: {exc}",
                                       code="invalid_messages")
            if refs:
                settings["images"] = [self.images.get(ref) for ref in refs]
            started = time.perf_counter()
            try:
                out = await self.backend.generate(prompt_ids, **settings)
            except PromptTooLong as exc:
                return 400, error_body(str(exc), code="context_length_exceeded")
            except BackendError as exc:
                return 502, error_body(str(exc), "server_error", code="backend_error")
            seconds = time.perf_counter() - started
            return 200, self._record(session, body, prompt_ids, prompt_text, out, settings["stop"], seconds, refs)

    def _prompt(self, session: SessionRecord, messages: list[dict[str, Any]],
                tools: list[dict[str, Any]]) -> tuple[list[int], str, list[str]]:
        turns: list[dict[str, Any]] = []
        replies: list[str] = []
        refs: list[str] = []
        for message in messages:
            role = message["role"]
            content = self._content(message.get("content"), refs) if role != "assistant" \
                else _text(message.get("content"))
            if role == "assistant":
                replies.append(session._texts.get(_reply_key(content, message.get("tool_calls")))
                               or _canonical(content, message.get("tool_calls")))
            if role == "developer":
                role = "system"
            turns.append({"role": role, "content": content})
        if tools:
            section = self._tool_section(tools)
            if turns[0]["role"] == "system" and isinstance(turns[0]["content"], str):
                turns[0] = {"role": "system", "content": (turns[0]["content"] + "\n\n" + section).strip()}
            else:
                turns.insert(0, {"role": "system", "content": section})
        text = self.tokenizer.apply_chat_template(render(turns, replies), tokenize=False, add_generation_prompt=True)
        known = session._last_images
        if session._last_text and text.startswith(session._last_text) and refs[: len(known)] == known:
            new = self._expand(self._encode(text[len(session._last_text):]), refs[len(known):])
            return session._last_tokens + new, text, refs
        return self._expand(self._encode(text), refs), text, refs

    def _content(self, content: Any, refs: list[str]) -> Any:
        """A message's content for the chat template: text, or a list of text and image parts when it has
        images (each image stored, its reference appended to ``refs``)."""
        if not isinstance(content, list):
            return _text(content)
        parts: list[dict[str, Any]] = []
        for part in content:
            if not isinstance(part, dict):
                continue
            if part.get("type") in ("image_url", "input_image"):
                url = part.get("image_url")
                url = url.get("url") if isinstance(url, dict) else url
                if self.vision is None:
                    raise ImageError(f"the model behind this proxy ({self.model_name}) takes no images")
                if not isinstance(url, str):
                    raise ImageError("an image_url part needs a 'url' string")
                refs.append(self.images.resolve(url))
                parts.append({"type": "image"})
            elif part.get("text"):
                parts.append({"type": "text", "text": str(part["text"])})
        if not any(p["type"] == "image" for p in parts):
            return "".join(p["text"] for p in parts)
        return parts

    def _expand(self, ids: list[int], refs: list[str]) -> list[int]:
        """The image placeholders of ``ids`` (one per image of ``refs``) repeated to each image's token count."""
        if not refs:
            return ids
        counts = []
        for ref in refs:
            count = self._image_tokens.get(ref)
            if count is None:
                width, height = self.images.size(ref)
                count = self._image_tokens[ref] = self.vision.tokens_for(_Size(width, height))
                if len(self._image_tokens) > 4096:
                    self._image_tokens.pop(next(iter(self._image_tokens)))
            counts.append(count)
        return self.vision.expand(ids, counts)

    def _tool_section(self, tools: list[dict[str, Any]]) -> str:
        """The tools' system-prompt section; the last few are remembered (comparing is cheaper than dumping)."""
        for i, (known, section) in enumerate(self._sections):
            if known == tools:
                if i:
                    self._sections.insert(0, self._sections.pop(i))
                return section
        section = tool_section(tools)
        self._sections = [(tools, section), *self._sections[:7]]
        return section

    def _record(self, session: SessionRecord, body: dict[str, Any], prompt_ids: list[int], prompt_text: str,
                out: Completion, stop: Sequence[str], seconds: float, refs: list[str]) -> dict[str, Any]:
        before = session._last_tokens
        extends = bool(session.calls) and prompt_ids[: len(before)] == before \
            and refs[: len(session._last_images)] == session._last_images
        segment = session.calls[-1].segment + (0 if extends else 1) if session.calls else 0
        ids = out.completion_ids
        full_text = self.tokenizer.decode(ids, skip_special_tokens=False)
        raw = self.tokenizer.decode(ids[:-1] if ids and ids[-1] in self._eos else ids, skip_special_tokens=False)
        visible = raw
        for s in stop:  # OpenAI semantics: the stop string is not part of the message (it stays in the tokens)
            if s and s in visible:
                visible = visible[: visible.index(s)]
        action = parse_reply(visible)
        calls = [{"id": f"call_{secrets.token_hex(8)}", "type": "function",
                  "function": {"name": c.name, "arguments": c.arguments}} for c in action.tool_calls]
        content = action.text if action.text is not None or calls else ""
        session._texts[_reply_key(content, calls)] = raw
        session._last_tokens = prompt_ids + ids
        session._last_text = prompt_text + full_text
        session._last_images = refs
        record = CallRecord(prompt_ids, list(ids), list(out.logprobs), out.finish_reason, out.policy_version,
                            segment, seconds, refs)
        session.calls.append(record)
        session.token_data.append(record.to_dict())
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
        finish = "tool_calls" if calls and out.finish_reason == "stop" else out.finish_reason
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
        if body.get("logprobs"):
            tokens = self.tokenizer.convert_ids_to_tokens(ids)
            choice["logprobs"] = {"content": [{"token": t, "logprob": lp, "bytes": None, "top_logprobs": []}
                                              for t, lp in zip(tokens, out.logprobs, strict=True)]}
        response: dict[str, Any] = {
            "id": f"chatcmpl-{secrets.token_hex(8)}", "object": "chat.completion", "created": int(time.time()),
            "model": self.model_name, "choices": [choice],
            "usage": {"prompt_tokens": len(prompt_ids), "completion_tokens": len(ids),
                      "total_tokens": len(prompt_ids) + len(ids)},
            "envgym": {"session": session.key, "call": len(session.calls) - 1, "segment": segment,
                       "policy_version": out.policy_version}}
        if body.get("return_token_ids"):
            response["prompt_token_ids"] = prompt_ids
            choice["token_ids"] = list(ids)
        return response


class ChunkEncoder:
    """``tokenizer.encode(text)`` by pieces between added tokens, each piece's ids kept in an LRU cache.

    A fast tokenizer splits text at added tokens (``<|im_start|>`` ...) before anything else, so the ids of
    the whole are the ids of the pieces joined: the same system prompt and tool schemas, repeated in every
    episode of an env, are tokenised once. Tokenizers whose added tokens strip or normalise their
    neighbours are encoded whole.
    """

    def __init__(self, tokenizer: Any, cache_size: int = 4096) -> None:
        self.tokenizer = tokenizer
        added = {t.content: i for i, t in getattr(tokenizer, "added_tokens_decoder", {}).items()}
        plain = all(not (t.lstrip or t.rstrip or t.normalized)
                    for t in getattr(tokenizer, "added_tokens_decoder", {}).values())
        self._added = added if added and plain else {}
        pattern = "|".join(re.escape(t) for t in sorted(self._added, key=len, reverse=True))
        self._split = re.compile(f"({pattern})").split if self._added else None
        self._piece = functools.lru_cache(maxsize=cache_size)(self._encode_piece)

    def __call__(self, text: str) -> list[int]:
        if self._split is None:
            return self.tokenizer.encode(text, add_special_tokens=False)
        ids: list[int] = []
        for piece in self._split(text):
            if piece in self._added:
                ids.append(self._added[piece])
            elif piece:
                ids.extend(self._piece(piece))
        return ids

    def _encode_piece(self, piece: str) -> tuple[int, ...]:
        return tuple(self.tokenizer.encode(piece, add_special_tokens=False))


def _text(content: Any) -> str:
    """A message's content as text (content-part lists keep their text parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


@dataclass(frozen=True, slots=True)
class _Size:
    width: int
    height: int


def _reply_key(content: str | None, tool_calls: Any) -> tuple[Any, ...]:
    calls = tuple((c.get("id"), c["function"]["name"], c["function"]["arguments"]) for c in tool_calls or ())
    return content or "", calls


def _canonical(content: str, tool_calls: Any) -> str:
    """An assistant turn this proxy did not produce, in the format the model is prompted to answer in."""
    blocks = []
    for call in tool_calls or ():
        function = call["function"]
        arguments = function.get("arguments") or "{}"
        with contextlib.suppress(ValueError, RecursionError):  # not JSON (or absurdly deep): shown as it is
            arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
        blocks.append("<tool_call>" + json.dumps({"name": function["name"], "arguments": arguments},
                                                 ensure_ascii=False) + "</tool_call>")
    return "\n".join([content, *blocks]) if content else "\n".join(blocks)
