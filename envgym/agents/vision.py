"""The vision side of a local vision-language model: placeholder tokens, token counts, pixel features, positions.

    vision = VisionProcessor.of(processor)          # an HF processor (AutoProcessor) or tiny_vlm()'s
    vision.image_token_id, vision.tokens_for(pil)   # the placeholder id, and how many the image expands to
    vision.features([pil, ...])                     # {"pixel_values": ..., "image_grid_thw": ...}
    vision.positions(model, ids, attention, features)   # M-RoPE position ids (Qwen2-VL family), else None
    model, tokenizer, processor = load_vlm("/models/Qwen2-VL-2B-Instruct")   # offline, local files only

A chat template writes one placeholder token per image (``<|image_pad|>`` for the Qwen2-VL family);
:meth:`VisionProcessor.expand` repeats it as many times as the processor says the image takes, which is
what the model's own processor does to its text, so prompt ids built this way are exactly the ids the
model consumes. The ``hf`` agent and the RL layer (``envgym.rl``: proxy, backends, learner) share this
module. torch, transformers and Pillow are imported by the calls that need them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envgym._images import ImageError


def load_vlm(path: str | Path, dtype: Any = None, device: str | None = None) -> tuple[Any, Any, Any]:
    """``(model, tokenizer, processor)`` of a local transformers VLM folder (``AutoModelForImageTextToText`` +
    ``AutoProcessor``), offline, in eval mode; ``dtype`` defaults to ``torch.float32``."""
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    if not Path(path).is_dir():
        raise FileNotFoundError(f"no VLM folder at {path} (download one first; envgym loads local files only)")
    processor = AutoProcessor.from_pretrained(str(path), local_files_only=True)
    model = AutoModelForImageTextToText.from_pretrained(str(path), local_files_only=True,
                                                        dtype=dtype or torch.float32)
    if device is not None:
        model = model.to(device)
    model.eval()
    return model, processor.tokenizer, processor


class VisionProcessor:
    """The image half of a VLM's processor: placeholder token, token counts, pixel features, positions.

    Built from an HF processor (``AutoProcessor.from_pretrained`` of a VLM, or :func:`envgym.rl.models.tiny_vlm`'s)
    with :meth:`of`. Supported: processors whose image processor returns one grid per image
    (``image_grid_thw``: the Qwen2-VL / Qwen2.5-VL / Qwen3-VL families) or a fixed token count per image
    (``num_image_tokens`` / ``image_seq_length``: LLaVA-style). Others raise a :class:`ValueError` naming them.
    """

    def __init__(self, image_processor: Any, image_token_id: int, *, fixed_tokens: int | None = None) -> None:
        self.image_processor = image_processor
        self.image_token_id = int(image_token_id)
        self.fixed_tokens = fixed_tokens
        self.merge = int(getattr(image_processor, "merge_size", 1) or 1)

    @classmethod
    def of(cls, processor: Any) -> VisionProcessor:
        if isinstance(processor, VisionProcessor):
            return processor
        image_processor = getattr(processor, "image_processor", None)
        token_id = getattr(processor, "image_token_id", None)
        if token_id is None and getattr(processor, "image_token", None) is not None:
            token_id = processor.tokenizer.convert_tokens_to_ids(processor.image_token)
        if image_processor is None or token_id is None:
            raise ValueError(f"{type(processor).__name__} has no image processor or image token: not a VLM processor")
        fixed = getattr(processor, "num_image_tokens", None) or getattr(processor, "image_seq_length", None)
        if fixed is None and not hasattr(image_processor, "merge_size"):
            raise ValueError(f"{type(processor).__name__}: unsupported VLM processor (neither per-image grids nor "
                             f"a fixed number of image tokens)")
        return cls(image_processor, token_id, fixed_tokens=fixed)

    def tokens_for(self, image: Any) -> int:
        """How many placeholder tokens the image takes in the prompt (``image``: a PIL image or anything with
        ``width`` and ``height``)."""
        if self.fixed_tokens is not None:
            return int(self.fixed_tokens)
        count = getattr(self.image_processor, "get_number_of_image_patches", None)
        if count is not None:  # from the size alone: no pixels are processed
            return int(count(image.height, image.width, {})) // self.merge**2
        grid = self.features([image])["image_grid_thw"][0]
        return int(grid.prod()) // self.merge**2

    def features(self, images: Sequence[Any]) -> dict[str, Any]:
        """The model's image inputs for these images, in order (tensors)."""
        return dict(self.image_processor(images=list(images), return_tensors="pt"))

    def expand(self, ids: list[int], counts: Sequence[int]) -> list[int]:
        """``ids`` with the i-th placeholder token repeated ``counts[i]`` times (one placeholder per image)."""
        if not counts:
            return ids
        out: list[int] = []
        it = iter(counts)
        for token in ids:
            if token == self.image_token_id:
                n = next(it, None)
                if n is None:
                    raise ImageError("the rendered prompt has more image placeholders than images")
                out.extend([token] * n)
            else:
                out.append(token)
        if next(it, None) is not None:
            raise ImageError("the chat template dropped an image: fewer placeholders than images")
        return out

    def positions(self, model: Any, ids: Any, attention: Any, features: dict[str, Any]) -> tuple[Any, Any] | None:
        """``(position_ids [3, B, L], deltas [B, 1])`` for an M-RoPE model (Qwen2-VL family), else ``None``.

        Decoding continues at ``(real tokens so far) + delta`` on all three axes."""
        inner = getattr(model, "model", model)
        if not hasattr(inner, "get_rope_index"):
            return None
        types = (ids == self.image_token_id).int()
        return inner.get_rope_index(ids, mm_token_type_ids=types, image_grid_thw=features.get("image_grid_thw"),
                                    attention_mask=attention)

