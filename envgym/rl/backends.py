"""Inference backends: token ids in, sampled token ids and their log-probabilities out, with a policy version.

    backend = TransformersBackend(model, tokenizer)          # an in-process transformers model
    backend = VLLMBackend("http://127.0.0.1:8000", "m", tokenizer)   # a vLLM OpenAI server
    out = await backend.generate(prompt_ids, max_new_tokens=64, temperature=1.0, top_p=1.0, seed=7, stop=None)
    out.completion_ids, out.logprobs, out.finish_reason, out.policy_version
    await backend.update_weights(model.state_dict() or "/path/to/checkpoint", version=3)
    await backend.aclose()

The contract (:class:`InferenceBackend`): ``logprobs[i]`` is the log-probability of ``completion_ids[i]`` under
the distribution it was actually sampled from: the model's logits divided by ``temperature`` and, when
``top_p < 1``, renormalised over the nucleus. For training use ``temperature=1, top_p=1`` so the rollout
distribution is the policy itself and importance ratios are unbiased; ``temperature=0`` decodes greedily
and reports the token's log-probability at temperature 1. ``finish_reason`` is ``"stop"`` (end of turn or
a stop string; the stop tokens stay in ``completion_ids`` so nothing generated is ever dropped) or
``"length"``. ``policy_version`` is the version of the weights that generated every token of the
completion: ``update_weights`` waits for the generation in flight, swaps the weights, sets the version and
invalidates every cache, so no completion mixes versions or reuses keys/values of older weights.

:class:`TransformersBackend` runs one worker thread that micro-batches the requests queued at that moment
(left-padded, one KV cache per batch, per-request temperature, top-p, seed and stop), so the event loop
never blocks. Across batches it keeps the keys/values of a few shared prompt prefixes (an env's system
prompt and tool schemas, a GRPO group's task), so only the rest of each prompt is prefilled; a weight
update drops them.
:class:`VLLMBackend` speaks HTTP to a vLLM OpenAI server (``/v1/completions`` with token-id prompts); see its
docstring for the server flags it needs.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import queue
import random
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import httpx

from envgym.errors import PolicyError
from envgym.rl.vision import VisionProcessor


class BackendError(PolicyError):
    """The inference backend failed (model crash, server error, closed backend)."""


class PromptTooLong(BackendError, ValueError):
    """The prompt leaves no room for the requested tokens in the model's context (a client error, HTTP 400)."""


@dataclass(frozen=True, slots=True)
class Completion:
    """What one generation produced; see the module docstring for the meaning of ``logprobs``."""

    completion_ids: list[int]
    logprobs: list[float]
    finish_reason: str
    policy_version: int


@runtime_checkable
class InferenceBackend(Protocol):
    tokenizer: Any
    policy_version: int

    async def generate(self, prompt_ids: list[int], *, max_new_tokens: int, temperature: float = 1.0,
                       top_p: float = 1.0, seed: int | None = None,
                       stop: Sequence[str] | None = None) -> Completion: ...

    async def update_weights(self, state_dict_or_path: Mapping[str, Any] | str | Path, version: int) -> None: ...

    async def aclose(self) -> None: ...


@dataclass
class _Request:
    prompt_ids: list[int]
    max_new_tokens: int
    temperature: float
    top_p: float
    seed: int
    stop: tuple[str, ...]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Completion]
    images: tuple[bytes, ...] = ()
    out_ids: list[int] = field(default_factory=list)
    out_logprobs: list[float] = field(default_factory=list)
    finish_reason: str | None = None


class TransformersBackend:
    """An in-process transformers causal LM; see the module docstring."""

    def __init__(self, model: Any, tokenizer: Any, *, max_batch: int = 16, policy_version: int = 0,
                 prefix_cache: int = 4, min_prefix: int = 128, processor: Any = None) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.processor = processor
        """A VLM's processor (``None``: a text model); see "Images" in the module docstring."""
        self._vision = VisionProcessor.of(processor) if processor is not None else None
        self.policy_version = policy_version
        self.max_batch = max_batch
        self.prefix_cache = prefix_cache
        self.min_prefix = min_prefix
        self.cache_resets = 0
        """How many times a weight update invalidated the caches (tests and metrics read it)."""
        self.batches = 0
        self.prefix_hits = 0
        """Batches that reused a cached prefix's keys/values."""
        self._prefixes: OrderedDict[tuple[int, ...], list[tuple[Any, Any]]] = OrderedDict()
        self._recent: list[int] = []
        self._weights = threading.Lock()  # held by a batch in flight and by a weight swap
        self._queue: queue.SimpleQueue[_Request | None] = queue.SimpleQueue()
        self._worker: threading.Thread | None = None
        self._closed = False
        self._seeds = random.Random()
        eos = tokenizer.eos_token_id
        self._eos = {eos} if isinstance(eos, int) else set(eos or ())
        self._pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else next(iter(self._eos), 0)
        self._limit = getattr(model.config, "max_position_embeddings", None) or getattr(
            getattr(model.config, "text_config", None), "max_position_embeddings", None)

    async def generate(self, prompt_ids: list[int], *, max_new_tokens: int, temperature: float = 1.0,
                       top_p: float = 1.0, seed: int | None = None,
                       stop: Sequence[str] | None = None, images: Sequence[bytes] | None = None) -> Completion:
        if self._closed:
            raise BackendError("the inference backend is closed")
        if images and self._vision is None:
            raise PromptTooLong("this backend has no vision processor: it takes no images")
        if not prompt_ids:
            raise PromptTooLong("the prompt is empty")
        if max_new_tokens < 1 or temperature < 0 or not 0 < top_p <= 1:
            raise PromptTooLong("need max_new_tokens >= 1, temperature >= 0 and 0 < top_p <= 1")
        if self._limit is not None and len(prompt_ids) + max_new_tokens > self._limit:
            raise PromptTooLong(f"the prompt ({len(prompt_ids)} tokens) leaves no room for {max_new_tokens} new "
                                f"tokens in the model's {self._limit}-token context")
        loop = asyncio.get_running_loop()
        request = _Request(list(prompt_ids), max_new_tokens, float(temperature), float(top_p),
                           self._seeds.getrandbits(63) if seed is None else int(seed), tuple(stop or ()), loop,
                           loop.create_future(), tuple(images or ()))
        if self._worker is None:
            self._worker = threading.Thread(target=self._run, name="envgym-generate", daemon=True)
            self._worker.start()
        self._queue.put(request)
        return await request.future

    async def update_weights(self, state_dict_or_path: Mapping[str, Any] | str | Path, version: int) -> None:
        """Load new weights (a state dict, a safetensors file or a folder holding ``*.safetensors``)."""
        if self._closed:
            raise BackendError("the inference backend is closed")
        await asyncio.to_thread(self._swap, state_dict_or_path, version)

    async def aclose(self) -> None:
        self._closed = True
        worker, self._worker = self._worker, None
        if worker is not None:
            self._queue.put(None)
            await asyncio.to_thread(worker.join)

    # -- worker thread ------------------------------------------------------------------------------------

    def _swap(self, source: Mapping[str, Any] | str | Path, version: int) -> None:
        state = load_state_dict(source) if isinstance(source, str | Path) else source
        with self._weights:
            result = self.model.load_state_dict(state, strict=False)
            tied = {"lm_head.weight"} if getattr(self.model.config, "tie_word_embeddings", False) else set()
            missing = set(result.missing_keys) - tied
            if result.unexpected_keys or missing:
                raise BackendError(f"the new weights do not fit the model: missing {sorted(missing)[:5]}, "
                                   f"unexpected {sorted(result.unexpected_keys)[:5]}")
            self.policy_version = version
            self._prefixes.clear()  # keys/values of the old weights must never serve the new ones
            self.cache_resets += 1

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < self.max_batch:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self._queue.put(None)  # stop after this batch
                    break
                batch.append(nxt)
            batch = [r for r in batch if not r.future.cancelled()]
            if not batch:
                continue
            try:
                with self._weights:
                    version = self.policy_version
                    if self._vision is not None:
                        self._decode_vision(batch)
                    else:
                        self._decode(batch)
                    self.batches += 1
            except Exception as exc:  # the model crashed: every request of the batch fails, the worker lives on
                error = BackendError(f"generation failed: {type(exc).__name__}: {exc}")
                for r in batch:
                    _resolve(r, error=error)
                continue
            for r in batch:
                _resolve(r, Completion(r.out_ids, r.out_logprobs, r.finish_reason or "length", version))

    def _decode(self, batch: list[_Request]) -> None:
        import torch

        model = self.model
        device = next(model.parameters()).device
        start, past = self._prefix(batch, device)
        # Each row's tokens after the shared prefix, left-padded; the pads sit between prefix and suffix,
        # masked out, and positions count real tokens only.
        width = max(len(r.prompt_ids) for r in batch) - start
        ids = torch.full((len(batch), width), self._pad, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, r in enumerate(batch):
            suffix = r.prompt_ids[start:]
            ids[row, width - len(suffix):] = torch.tensor(suffix)
            mask[row, width - len(suffix):] = 1
        ids, mask = ids.to(device), mask.to(device)
        positions = start + (mask.cumsum(-1) - 1).clamp(min=0)
        if start:
            mask = torch.cat([torch.ones((len(batch), start), dtype=mask.dtype, device=device), mask], dim=1)

        def forward(step_ids: Any, step_mask: Any, step: int, cache: Any) -> Any:
            nonlocal positions
            if step:
                positions = positions[:, -1:] + 1
            return model(input_ids=step_ids, attention_mask=step_mask, position_ids=positions, cache=cache,
                         use_cache=True, logits_to_keep=1)

        self._sample(batch, ids, mask, past, forward, device)

    def _decode_vision(self, batch: list[_Request]) -> None:
        """A VLM batch: left-padded prompts, the batch's images through the processor, M-RoPE positions when
        the model uses them (decoding continues at real tokens + the row's delta); no prefix cache."""
        import io

        import torch
        from PIL import Image

        model, vision = self.model, self._vision
        device = next(model.parameters()).device
        width = max(len(r.prompt_ids) for r in batch)
        ids = torch.full((len(batch), width), self._pad, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, r in enumerate(batch):
            ids[row, width - len(r.prompt_ids):] = torch.tensor(r.prompt_ids)
            mask[row, width - len(r.prompt_ids):] = 1
        ids, mask = ids.to(device), mask.to(device)
        pictures = []
        for r in batch:
            for data in r.images:
                with Image.open(io.BytesIO(data)) as image:
                    pictures.append(image.convert("RGB"))
        features = {k: v.to(device) for k, v in vision.features(pictures).items()} if pictures else {}
        if "pixel_values" in features:
            features["pixel_values"] = features["pixel_values"].to(next(model.parameters()).dtype)
        rope = vision.positions(model, ids, mask, features)
        if rope is not None:
            positions, deltas = rope
            following = mask.sum(-1, keepdim=True) + deltas.to(device)  # the next token's position, per row
        else:
            positions = (mask.cumsum(-1) - 1).clamp(min=0)
            following = mask.sum(-1, keepdim=True)

        def forward(step_ids: Any, step_mask: Any, step: int, cache: Any) -> Any:
            if not step:
                return model(input_ids=step_ids, attention_mask=step_mask, position_ids=positions, cache=None,
                             use_cache=True, logits_to_keep=1, **features)
            at = following + (step - 1)
            return model(input_ids=step_ids, attention_mask=step_mask, cache=cache, use_cache=True, logits_to_keep=1,
                         position_ids=at.unsqueeze(0).expand(3, -1, -1) if rope is not None else at)

        self._sample(batch, ids, mask, None, forward, device)

    def _sample(self, batch: list[_Request], ids: Any, mask: Any, past: Any, forward: Any, device: Any) -> None:
        """The decoding loop: ``forward(ids, mask, step, cache)`` gives the logits of each row's next token."""
        import torch

        generators = [torch.Generator(device=device).manual_seed(r.seed) for r in batch]
        temps = torch.tensor([r.temperature or 1.0 for r in batch], device=device).unsqueeze(1)
        greedy = torch.tensor([r.temperature == 0 for r in batch], device=device)
        nucleus = [(row, r.top_p) for row, r in enumerate(batch) if r.top_p < 1.0 and r.temperature > 0]
        live = list(range(len(batch)))
        with torch.inference_mode():
            for step in range(max(r.max_new_tokens for r in batch)):
                out = forward(ids, mask, step, past)
                past = out.cache
                logp = torch.log_softmax(out.logits[:, -1, :].float() / temps, dim=-1)
                for row, top_p in nucleus:
                    logp[row] = _nucleus(logp[row], top_p)
                # Inverse-CDF draws, each from its request's own generator (so batching does not change them),
                # on the model's device; one host sync per step.
                cdf = logp.exp().cumsum(-1)
                u = torch.stack([torch.rand((), generator=g, device=device) for g in generators]) * cdf[:, -1]
                drawn = torch.searchsorted(cdf, u.unsqueeze(1)).squeeze(1).clamp(max=cdf.shape[1] - 1)
                chosen = torch.where(greedy, logp.argmax(-1), drawn)
                tokens = chosen.tolist()
                logprobs = logp.gather(1, chosen.unsqueeze(1)).squeeze(1).tolist()
                for row in live:
                    r, token = batch[row], tokens[row]
                    r.out_ids.append(token)
                    r.out_logprobs.append(logprobs[row])
                    if token in self._eos or (r.stop and self._hit_stop(r)):
                        r.finish_reason = "stop"
                    elif len(r.out_ids) >= r.max_new_tokens:
                        r.finish_reason = "length"
                live = [row for row in live if batch[row].finish_reason is None]
                if not live:
                    break
                ids = chosen.unsqueeze(1)
                mask = torch.cat([mask, torch.ones((len(batch), 1), dtype=mask.dtype, device=device)], dim=1)

    def _prefix(self, batch: list[_Request], device: Any) -> tuple[int, Any]:
        """The length of a prefix every prompt of the batch shares and a KV cache holding it (0, None: none).

        Cached prefixes (the last ``prefix_cache``, cleared by weight updates) are reused when every prompt
        starts with one; otherwise the longest common prefix of the batch's prompts and the previous
        batch's first prompt (the system prompt and tool schemas an env repeats, a GRPO group's task) is
        computed once and cached when it has at least ``min_prefix`` tokens. The keys/values of a prefix do
        not depend on what follows it, so the logits are those of a full prefill.
        """
        import torch
        from transformers import DynamicCache

        prompts = [r.prompt_ids for r in batch]
        limit = min(len(p) for p in prompts) - 1  # the last prompt token is always fed, for its logits
        recent, self._recent = self._recent, prompts[0]
        if not self.prefix_cache:
            return 0, None
        best: tuple[int, ...] = ()
        for key in self._prefixes:
            n = len(key)
            if len(best) < n <= limit and all(tuple(p[:n]) == key for p in prompts):
                best = key
        if best:
            self._prefixes.move_to_end(best)
            self.prefix_hits += 1
            layers = self._prefixes[best]
        else:
            others = [*prompts[1:], *([recent] if recent else [])]
            n = limit
            for other in others:
                n = min(n, _common(prompts[0], other, n))
            if not others or n < self.min_prefix:  # no evidence that anything is shared
                return 0, None
            best = tuple(prompts[0][:n])
            with torch.inference_mode():
                out = self.model(input_ids=torch.tensor([best], device=device), use_cache=True, logits_to_keep=1)
            layers = [(layer.keys, layer.values) for layer in out.cache.layers]
            self._prefixes[best] = layers
            while len(self._prefixes) > self.prefix_cache:
                self._prefixes.popitem(last=False)
        rows = len(batch)
        cache = DynamicCache(ddp_cache_data=[(k.expand(rows, -1, -1, -1), v.expand(rows, -1, -1, -1))
                                             for k, v in layers], config=self.model.config)
        return len(best), cache

    def _hit_stop(self, r: _Request) -> bool:
        tail = self.tokenizer.decode(r.out_ids[-16:], skip_special_tokens=False)
        return any(s in tail for s in r.stop)


def _common(a: list[int], b: list[int], limit: int) -> int:
    """The length of the common prefix of ``a`` and ``b`` (at most ``limit``)."""
    n = min(limit, len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def _nucleus(logp: Any, top_p: float) -> Any:
    """Log-probabilities renormalised over the smallest set of tokens whose mass reaches ``top_p``."""
    import torch

    sorted_logp, order = torch.sort(logp, descending=True)
    cumulative = sorted_logp.exp().cumsum(-1)
    drop = cumulative - sorted_logp.exp() >= top_p  # keep a token while the mass before it is below top_p
    sorted_logp = sorted_logp.masked_fill(drop, float("-inf"))
    kept = torch.full_like(logp, float("-inf")).scatter(0, order, sorted_logp)
    return torch.log_softmax(kept, dim=-1)


def _resolve(request: _Request, completion: Completion | None = None, *, error: BaseException | None = None) -> None:
    def settle() -> None:
        if request.future.done():
            return
        if error is not None:
            request.future.set_exception(error)
        else:
            request.future.set_result(completion)  # type: ignore[arg-type]

    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
        request.loop.call_soon_threadsafe(settle)


def load_state_dict(path: str | Path) -> dict[str, Any]:
    """The tensors of a safetensors file, or of every ``*.safetensors`` file in a folder (blocking)."""
    from safetensors.torch import load_file

    path = Path(path)
    files = sorted(path.glob("*.safetensors")) if path.is_dir() else [path]
    if not files or not all(f.is_file() for f in files):
        raise BackendError(f"no safetensors weights at {path}")
    state: dict[str, Any] = {}
    for file in files:
        state.update(load_file(str(file)))
    return state


class VLLMBackend:
    """A vLLM OpenAI-compatible server, over HTTP.

    Generation posts token ids to ``{base_url}/v1/completions`` with ``return_token_ids`` (the sampled ids
    come back as ids, never re-tokenised), ``logprobs: 0`` (the sampled token's log-probability),
    ``skip_special_tokens: false`` and ``include_stop_str_in_output: true``. Start the server with
    ``--logprobs-mode processed_logprobs`` so the log-probabilities are those of the distribution sampled
    from (after temperature and top-p), as the backend contract requires; without it they are the raw
    model's. Weight updates need a path the server can read (a state dict is saved to ``save_dir`` first):
    ``POST {update_path}`` with ``{"model_path": path}`` (prime-rl's and SGLang-style reload from disk;
    vLLM's dev-mode ``/collective_rpc`` works the same with ``update_path="/collective_rpc"`` and a server-side
    ``reload_weights`` worker extension), then ``POST {reset_cache_path}`` (vLLM's ``/reset_prefix_cache``,
    served with ``VLLM_SERVER_DEV_MODE=1``) so no prefix-cached keys/values of the old weights are reused.

    Images (a VLM): vLLM's ``/v1/completions`` takes token ids or images, not both, so a prompt with images
    goes the way vLLM's scale-out API (``--enable-scale-out``, vLLM >= 0.30) offers: ``POST
    /v1/chat/completions/render`` with the images alone returns their processed ``features``, then ``POST
    /inference/v1/generate`` with the prompt's token ids (placeholders already expanded by the proxy) and
    those features samples the completion. The server's processor settings (e.g. ``max_pixels``, via
    ``--mm-processor-kwargs``) must be the proxy's processor's, or the placeholder counts disagree and the
    server refuses the request.
    """

    def __init__(self, base_url: str, model: str, tokenizer: Any, *, policy_version: int = 0,
                 update_path: str = "/update_weights", reset_cache_path: str = "/reset_prefix_cache",
                 save_dir: str | Path | None = None, timeout_s: float = 300.0,
                 client: httpx.AsyncClient | None = None) -> None:
        self.base_url = base_url.rstrip("/").removesuffix("/v1")
        self.model = model
        self.tokenizer = tokenizer
        self.policy_version = policy_version
        self.update_path = update_path
        self.reset_cache_path = reset_cache_path
        self.save_dir = Path(save_dir) if save_dir is not None else None
        self._client = client or httpx.AsyncClient(timeout=httpx.Timeout(timeout_s))
        self._updating = asyncio.Lock()
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()

    async def generate(self, prompt_ids: list[int], *, max_new_tokens: int, temperature: float = 1.0,
                       top_p: float = 1.0, seed: int | None = None,
                       stop: Sequence[str] | None = None, images: Sequence[bytes] | None = None) -> Completion:
        async with self._updating:  # a weight update in progress holds new requests back
            self._in_flight += 1
            self._idle.clear()
        try:
            version = self.policy_version
            if images:
                return await self._generate_with_images(prompt_ids, images, max_new_tokens, temperature, top_p,
                                                        seed, stop, version)
            body: dict[str, Any] = {"model": self.model, "prompt": list(prompt_ids), "max_tokens": max_new_tokens,
                                    "temperature": temperature, "top_p": top_p, "logprobs": 0,
                                    "return_token_ids": True, "return_tokens_as_token_ids": True,
                                    "skip_special_tokens": False, "include_stop_str_in_output": True}
            if seed is not None:
                body["seed"] = seed
            if stop:
                body["stop"] = list(stop)
            data = await self._post("/v1/completions", body)
            try:
                choice = data["choices"][0]
                ids = choice.get("token_ids")
                lp = choice["logprobs"]
                if ids is None:  # older servers: tokens as "token_id:<n>" strings
                    ids = [int(str(t).rsplit(":", 1)[1]) for t in lp["tokens"]]
                logprobs = [float(x) if x is not None else 0.0 for x in lp["token_logprobs"]]
                finish = choice.get("finish_reason") or "stop"
            except (KeyError, IndexError, TypeError, ValueError) as exc:
                raise BackendError(f"malformed vLLM completion ({type(exc).__name__}: {exc}): {str(data)[:300]}") \
                    from exc
            if len(ids) != len(logprobs):
                raise BackendError(f"vLLM returned {len(ids)} tokens but {len(logprobs)} logprobs")
            return Completion([int(i) for i in ids], logprobs, "length" if finish == "length" else "stop", version)
        finally:
            self._in_flight -= 1
            if not self._in_flight:
                self._idle.set()

    async def _generate_with_images(self, prompt_ids: list[int], images: Sequence[bytes], max_new_tokens: int,
                                    temperature: float, top_p: float, seed: int | None, stop: Sequence[str] | None,
                                    version: int) -> Completion:
        parts = [{"type": "image_url", "image_url": {"url": f"data:{_media_type(data)};base64,"
                                                           f"{base64.b64encode(data).decode('ascii')}"}}
                 for data in images]
        rendered = await self._post("/v1/chat/completions/render", {
            "model": self.model, "messages": [{"role": "user", "content": parts}], "max_tokens": 1})
        if not isinstance(rendered, dict) or "features" not in rendered:
            raise BackendError(f"{self.base_url}/v1/chat/completions/render returned no image features: "
                               f"{str(rendered)[:200]} (serve vLLM with --enable-scale-out)")
        sampling: dict[str, Any] = {"max_tokens": max_new_tokens, "temperature": temperature, "top_p": top_p,
                                    "logprobs": 0, "skip_special_tokens": False, "include_stop_str_in_output": True,
                                    "output_kind": 2}  # FINAL_ONLY
        if seed is not None:
            sampling["seed"] = seed
        if stop:
            sampling["stop"] = list(stop)
        data = await self._post("/inference/v1/generate", {
            "request_id": f"envgym-{random.getrandbits(64):016x}", "model": self.model,
            "token_ids": list(prompt_ids), "features": rendered["features"], "sampling_params": sampling})
        try:
            choice = data["choices"][0]
            ids = [int(i) for i in choice["token_ids"]]
            logprobs = [float(entry["logprob"]) for entry in choice["logprobs"]["content"]]
            finish = choice.get("finish_reason") or "stop"
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise BackendError(f"malformed vLLM generation ({type(exc).__name__}: {exc}): {str(data)[:300]}") from exc
        if len(ids) != len(logprobs):
            raise BackendError(f"vLLM returned {len(ids)} tokens but {len(logprobs)} logprobs")
        return Completion(ids, logprobs, "length" if finish == "length" else "stop", version)

    async def update_weights(self, state_dict_or_path: Mapping[str, Any] | str | Path, version: int) -> None:
        async with self._updating:
            await self._idle.wait()  # generations in flight finish on the old weights, at the old version
            path = state_dict_or_path
            if not isinstance(path, str | Path):
                if self.save_dir is None:
                    raise BackendError("VLLMBackend needs save_dir to send a state dict to the server")
                path = self.save_dir / f"policy-v{version}"
                await asyncio.to_thread(_save_state, dict(state_dict_or_path), path)
            await self._post(self.update_path, {"model_path": str(path)})
            await self._post(self.reset_cache_path, {})
            self.policy_version = version

    async def aclose(self) -> None:
        await self._client.aclose()

    async def _post(self, path: str, body: dict[str, Any]) -> Any:
        url = self.base_url + path
        try:
            response = await self._client.post(url, json=body)
        except httpx.TransportError as exc:
            raise BackendError(f"{url}: {type(exc).__name__}: {exc}") from exc
        if response.status_code >= 400:
            status = 400 if response.status_code < 500 else 502
            error = PromptTooLong if status == 400 and "context" in response.text else BackendError
            raise error(f"{url} answered HTTP {response.status_code}: {response.text[:300]}")
        try:
            return response.json() if response.content else {}
        except ValueError as exc:
            raise BackendError(f"{url} answered with a body that is not JSON: {response.text[:200]!r}") from exc


def _media_type(data: bytes) -> str:
    if data[:3] == b"\xff\xd8\xff":
        return "image/jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return "image/png"


def _save_state(state: dict[str, Any], path: Path) -> None:
    from safetensors.torch import save_file

    path.mkdir(parents=True, exist_ok=True)
    seen: set[int] = set()
    tensors = {}
    for name, tensor in state.items():  # tied weights share storage, which safetensors refuses: keep the first
        if tensor.data_ptr() not in seen:
            seen.add(tensor.data_ptr())
            tensors[name] = tensor.detach().contiguous().cpu()
    save_file(tensors, str(path / "model.safetensors"), metadata={"format": "pt"})
