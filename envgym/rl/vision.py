"""Images on the RL path: a content-addressed image store (and :class:`VisionProcessor`, re-exported).

    store = ImageStore("run/images")                # or ImageStore() in memory
    ref = store.put(jpeg_bytes, "image/jpeg")       # "sha256:<hex>": what calls and samples record
    store.get(ref), store.pil(ref)

    VisionProcessor.of(processor)                   # the VLM side (envgym.agents.vision, re-exported here)

Samples never hold pixels: a call records the reference of each image of its prompt, in order, and the
learner rebuilds the pixel values from the store with the same processor, so the model sees the same
tensors at rollout and at training time. A chat template writes one placeholder token per image
(``<|image_pad|>`` for the Qwen2-VL family); :meth:`VisionProcessor.expand` repeats it as many times as the
processor says the image takes, exactly what the model's own processor does to its text, so the recorded
prompt ids are the ids the model consumed, placeholders included.

Image URLs a proxy accepts (:meth:`ImageStore.resolve`): ``data:image/...;base64,...`` (stored on arrival) and
``envgym-image:sha256:<hex>``, a reference to an image already in the store (an in-process agent puts the
env's screenshot there and sends only the reference). Remote ``http(s)`` URLs are refused: nothing here
opens a connection.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from envgym._images import ImageError
from envgym.agents.vision import VisionProcessor

__all__ = ["REF_SCHEME", "ImageError", "ImageStore", "VisionProcessor"]

REF_SCHEME = "envgym-image:"
_EXTENSIONS = {"image/jpeg": ".jpg", "image/png": ".png", "image/webp": ".webp", "image/gif": ".gif"}


class ImageStore:
    """Images by content hash, in memory or in a folder (``<hex>.<ext>``, written once).

    In memory every image is kept until :meth:`clear` (an episode's screenshots are what its samples
    reference); in a folder only the last ``cache`` images stay in memory as well. Thread-safe: the proxy
    writes on the event loop, the learner reads in its thread.
    """

    def __init__(self, folder: str | Path | None = None, *, cache: int = 256) -> None:
        self.folder = Path(folder) if folder is not None else None
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)
        self.cache = cache
        self.bytes_written = 0
        """Bytes this store wrote to its folder (each distinct image once)."""
        self._items: OrderedDict[str, tuple[bytes, str]] = OrderedDict()
        self._lock = threading.Lock()

    def __contains__(self, ref: str) -> bool:
        return ref in self._items or self._path(ref) is not None

    def __len__(self) -> int:
        if self.folder is None:
            return len(self._items)
        return sum(1 for _ in self.folder.glob("*.*"))

    def put(self, data: bytes, media_type: str = "image/png") -> str:
        """Store the bytes (once per content) and return their reference ``sha256:<hex>``."""
        if not media_type.startswith("image/"):
            raise ImageError(f"not an image media type: {media_type!r}")
        ref = "sha256:" + hashlib.sha256(data).hexdigest()
        with self._lock:
            if ref in self._items:
                self._items.move_to_end(ref)
                return ref
            self._items[ref] = (data, media_type)
            if self.folder is not None:
                path = self.folder / (ref[7:] + _EXTENSIONS.get(media_type, ".img"))
                if not path.exists():
                    staging = path.with_suffix(path.suffix + ".tmp")
                    staging.write_bytes(data)
                    staging.replace(path)
                    self.bytes_written += len(data)
                while len(self._items) > self.cache:
                    self._items.popitem(last=False)
        return ref

    def get(self, ref: str) -> bytes:
        """The bytes of a stored image; an unknown reference is a KeyError naming it."""
        with self._lock:
            item = self._items.get(ref)
        if item is not None:
            return item[0]
        path = self._path(ref)
        if path is None:
            raise KeyError(f"no image {ref} in the image store"
                           + (f" ({self.folder})" if self.folder is not None else " (in memory)"))
        return path.read_bytes()

    def size(self, ref: str) -> tuple[int, int]:
        """``(width, height)`` of a stored image, read from its header (no pixels decoded)."""
        from PIL import Image

        with Image.open(io.BytesIO(self.get(ref))) as image:
            return image.size

    def pil(self, ref: str) -> Any:
        from PIL import Image

        with Image.open(io.BytesIO(self.get(ref))) as image:
            return image.convert("RGB")

    def resolve(self, url: str) -> str:
        """The reference of an image URL (a data URL is stored first); see the module docstring."""
        if url.startswith(REF_SCHEME):
            ref = url[len(REF_SCHEME):]
            if ref not in self:
                raise ImageError(f"unknown image reference {url!r}: put the image in the proxy's store first")
            return ref
        if url.startswith("data:"):
            header, sep, payload = url.partition(",")
            media_type = header[5:].split(";")[0] or "image/png"
            if not sep or ";base64" not in header:
                raise ImageError("an image data URL must be base64: data:image/<type>;base64,<data>")
            try:
                data = base64.b64decode(payload, validate=True)
            except binascii.Error as exc:
                raise ImageError(f"the image data URL is not valid base64: {exc}") from exc
            return self.put(data, media_type)
        raise ImageError(f"image URLs must be data: URLs or {REF_SCHEME}sha256:<hex> references, not "
                         f"{url[:40]!r} (the proxy opens no connections)")

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def _path(self, ref: str) -> Path | None:
        if self.folder is None or not ref.startswith("sha256:"):
            return None
        found = list(self.folder.glob(ref[7:] + ".*"))
        return next((p for p in found if not p.name.endswith(".tmp")), None)
