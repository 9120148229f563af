"""Images an observation carries, whatever its family: what a vision agent sends and a trainer stores.

    for image in observation_images(observation):      # [] for a text-only observation
        image.media_type, image.sha256, image.data_url()
    small = fit_image(image, max_pixels=640 * 360, max_bytes=200_000)   # downscaled JPEG within a budget

The kernel imports no family, so it finds images by a small protocol rather than by type. An observation
may define ``images() -> Sequence[ObservedImage]`` (it wins); otherwise every field of the observation whose
value carries base64 image bytes counts, in field order: an object with ``jpeg_base64`` (a web
screenshot), ``png_base64`` (a GUI screenshot), or ``base64`` beside a ``media_type``. ``width`` and
``height`` are read from the object when it has them. Decoding is lazy: the bytes are decoded from base64
once, when ``data`` is first read.

:func:`fit_image` needs Pillow (the ``web``, ``gui`` and ``train`` extras); a missing Pillow is a clear
:class:`~envgym.errors.PolicyError`.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from envgym.errors import PolicyError

_FIELDS = (("jpeg_base64", "image/jpeg"), ("png_base64", "image/png"))


class ImageError(PolicyError, ValueError):
    """An image (or image URL) that cannot be used: bad base64, an unknown reference, a remote URL, a
    placeholder count that does not match the images (a client's error: the proxy answers HTTP 400)."""

    blame = None  # a client's bad request or a chat template that drops images: the stage decides


@dataclass(frozen=True)
class ObservedImage:
    """One image: its base64 text as the observation holds it, its media type and (when known) its size."""

    base64: str
    media_type: str = "image/png"
    width: int | None = None
    height: int | None = None
    name: str = "screenshot"
    """The observation field it came from."""
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False, hash=False)

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str, *, width: int | None = None, height: int | None = None,
                   name: str = "image") -> ObservedImage:
        image = cls(base64.b64encode(data).decode("ascii"), media_type, width, height, name)
        image._cache["data"] = data
        return image

    @property
    def data(self) -> bytes:
        if "data" not in self._cache:
            try:
                self._cache["data"] = base64.b64decode(self.base64, validate=True)
            except binascii.Error as exc:
                raise ValueError(f"the {self.name} image is not valid base64: {exc}") from exc
        return self._cache["data"]

    @functools.cached_property
    def sha256(self) -> str:
        """``sha256:<hex>`` of the image bytes: the image's identity (what samples store instead of pixels)."""
        return "sha256:" + hashlib.sha256(self.data).hexdigest()

    def data_url(self) -> str:
        return f"data:{self.media_type};base64,{self.base64}"


def observation_images(observation: Any) -> list[ObservedImage]:
    """The images an observation carries (module docstring: the protocol), in field order."""
    own = getattr(observation, "images", None)
    if callable(own):
        return list(own())
    fields = getattr(type(observation), "model_fields", None)
    names = list(fields) if fields is not None else list(getattr(observation, "__dict__", {}))
    found = []
    for name in names:
        value = getattr(observation, name, None)
        if value is None or isinstance(value, str | bytes | int | float | tuple | list | dict):
            continue
        image = image_of(value, name=name)
        if image is not None:
            found.append(image)
    return found


def image_of(value: Any, *, name: str = "image") -> ObservedImage | None:
    """An :class:`ObservedImage` from one screenshot-like object (``None`` when it holds no image)."""
    width, height = getattr(value, "width", None), getattr(value, "height", None)
    size = {"width": width if isinstance(width, int) else None, "height": height if isinstance(height, int) else None}
    for attribute, media_type in _FIELDS:
        text = getattr(value, attribute, None)
        if isinstance(text, str) and text:
            return ObservedImage(text, media_type, name=name, **size)
    text, media_type = getattr(value, "base64", None), getattr(value, "media_type", None)
    if isinstance(text, str) and text and isinstance(media_type, str) and media_type.startswith("image/"):
        return ObservedImage(text, media_type, name=name, **size)
    return None


def fit_image(image: ObservedImage, *, max_pixels: int | None = None, max_bytes: int | None = None,
              quality: int = 80) -> ObservedImage:
    """The image within a budget: downscaled (aspect kept) to at most ``max_pixels`` pixels and re-encoded as
    JPEG, lowering the quality and then the size until it fits ``max_bytes``. An image already within both
    bounds is returned as it is (same bytes, same hash)."""
    if (max_pixels is not None and max_pixels < 1) or (max_bytes is not None and max_bytes < 1):
        raise ValueError("max_pixels and max_bytes must be positive")
    try:
        from PIL import Image
    except ImportError as exc:
        raise PolicyError("sending images within a size budget needs Pillow: pip install pillow") from exc
    with Image.open(io.BytesIO(image.data)) as opened:
        picture = opened.convert("RGB")
    width, height = picture.size
    fits_pixels = max_pixels is None or width * height <= max_pixels
    if fits_pixels and (max_bytes is None or len(image.data) <= max_bytes):
        if image.width is None:
            return ObservedImage(image.base64, image.media_type, width, height, image.name)
        return image
    if not fits_pixels:
        scale = (max_pixels / (width * height)) ** 0.5
        picture = picture.resize((max(1, int(width * scale)), max(1, int(height * scale))), Image.Resampling.LANCZOS)
    while True:
        buffer = io.BytesIO()
        picture.save(buffer, format="JPEG", quality=quality)
        data = buffer.getvalue()
        if max_bytes is None or len(data) <= max_bytes:
            break
        if quality > 30:
            quality -= 15
        elif min(picture.size) > 16:
            picture = picture.resize((max(1, picture.width * 3 // 4), max(1, picture.height * 3 // 4)))
        else:
            raise ValueError(f"the {image.name} image cannot be made to fit {max_bytes} bytes")
    return ObservedImage.from_bytes(data, "image/jpeg", width=picture.width, height=picture.height, name=image.name)


def image_parts(images: Sequence[ObservedImage]) -> list[dict[str, Any]]:
    """OpenAI chat content parts (``image_url`` with a data URL) for the images."""
    return [{"type": "image_url", "image_url": {"url": image.data_url()}} for image in images]
