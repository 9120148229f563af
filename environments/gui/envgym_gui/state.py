"""What a GUI verifier may read: the desktop as the agent left it, read from outside the agent's reach.

Grading runs after the agent's last action, while the episode's container is still up, and reads only
through channels the agent cannot impersonate: files come out of the container through the engine's
archive API (:meth:`envgym.sandbox.Sandbox.copy_out`, every member validated, size-capped) and are parsed
here on the host; window titles and the clipboard are asked of the X server by the root-owned desktop
daemon, which the agent's processes (user ``user``, no capabilities) can neither kill nor replace. Nothing
the agent wrote is executed.

``final`` says how the agent ended the episode (``"done"`` / ``"fail"``, None when a step limit or the
deadline ended it) and ``answer`` the text it gave; ``initial_files`` holds what reset wrote, for
collateral checks (a file that must not change).
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

FileReader = Callable[[str], Awaitable[bytes | None]]
DirLister = Callable[[str], Awaitable[list[str] | None]]
Windows = Callable[[], Awaitable[list[dict[str, Any]]]]
Clipboard = Callable[[], Awaitable[str | None]]


@dataclass
class DesktopState:
    """The :class:`~envgym.verify.StateView` of a GUI episode (see the module docstring)."""

    final: Literal["done", "fail"] | None
    answer: str | None
    initial_files: dict[str, bytes]
    _read_file: FileReader
    _list_dir: DirLister
    _windows: Windows
    _clipboard: Clipboard
    _cache: dict[str, bytes | None] = field(default_factory=dict)

    async def read_file(self, path: str) -> bytes | None:
        """The file's bytes as the episode left them; None when it is absent (or not a regular file)."""
        if path not in self._cache:
            self._cache[path] = await self._read_file(path)
        return self._cache[path]

    async def list_dir(self, path: str) -> list[str] | None:
        """The names in the folder ``path``, sorted; None when it is absent."""
        return await self._list_dir(path)

    async def windows(self) -> list[dict[str, Any]]:
        """The desktop's top-level windows: ``{"title", "wm_class", "focused"}`` each."""
        return await self._windows()

    async def clipboard(self) -> str | None:
        return await self._clipboard()

    def snapshot(self) -> dict[str, Any]:
        """A JSON summary for the record: how the episode ended and the files read during grading (hashes)."""
        return {"final": self.final, "answer": self.answer,
                "files_read": {path: None if data is None else hashlib.sha256(data).hexdigest()[:16]
                               for path, data in sorted(self._cache.items())}}

