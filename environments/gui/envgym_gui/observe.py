"""What a GUI agent sees: a screenshot, the window list, and (optionally) the accessibility tree as text.

The screenshot is the X screen as PNG (lossless, so the same desktop state gives the same bytes), downscaled
by the desktop daemon when the env asks for a smaller size; :class:`Screenshot` keeps the compressed bytes
(observations stay small, hashable and JSON-serialisable) and ``.array()`` decodes them into an ``(H, W, 3)``
uint8 array on demand. Coordinates in actions are always in screen pixels, whatever the screenshot's size:
``Screenshot.scale`` converts.

``text`` renders, for text-only agents and for the transcript::

    GOAL: Put the total of column B in B7 and save the spreadsheet.
    SCREEN: 1280x720 (screenshot 1280x720)
    FOCUSED: budget.ods - LibreOffice Calc
    WINDOWS:
      * budget.ods - LibreOffice Calc
    ACCESSIBILITY TREE:
    [a12] table "Sheet1"
    ...
"""

from __future__ import annotations

import base64
import io
from typing import TYPE_CHECKING, Any

from envgym.plugin import FrozenModel, Observation

if TYPE_CHECKING:
    import numpy as np


class Screenshot(FrozenModel):
    """A PNG of the screen; ``scale`` = screenshot pixels per screen pixel."""

    width: int
    height: int
    scale: float = 1.0
    png_base64: str

    def png(self) -> bytes:
        return base64.b64decode(self.png_base64)

    def array(self) -> np.ndarray:
        import numpy as np
        from PIL import Image

        with Image.open(io.BytesIO(self.png())) as image:
            return np.asarray(image.convert("RGB"))


class WindowInfo(FrozenModel):
    title: str
    wm_class: str = ""
    focused: bool = False


class GuiObservation(Observation):
    """The desktop after reset or a step (see the module docstring)."""

    screenshot: Screenshot | None = None
    windows: tuple[WindowInfo, ...] = ()
    focused: str | None = None
    """The focused window's title."""
    a11y: str | None = None
    """The accessibility tree as text, one element a line, ``[id] role "name"``; None when not asked for."""


def render(goal: str, *, size: tuple[int, int], shot: Screenshot | None, windows: tuple[WindowInfo, ...],
           focused: str | None, a11y: str | None, error: str | None = None, note: str | None = None) -> str:
    lines = [f"GOAL: {goal}"]
    screen = f"SCREEN: {size[0]}x{size[1]}"
    if shot is not None:
        screen += f" (screenshot {shot.width}x{shot.height}; actions take screen coordinates)"
    lines += [screen, f"FOCUSED: {focused or '(none)'}", "WINDOWS:"]
    lines += [f"  {'*' if w.focused else '-'} {w.title or '(untitled)'}" for w in windows] or ["  (none)"]
    if note:
        lines.append(note)
    if a11y is not None:
        lines += ["ACCESSIBILITY TREE:", a11y or "(empty)"]
    if error:
        lines += ["", f"LAST ACTION ERROR: {error}"]
    return "\n".join(lines)



def render_tree(elements: list[Any], *, max_lines: int = 400) -> str:
    """The accessibility tree as text, one element a line (:meth:`envgym_gui.desktop.Element.line`)."""
    lines = [element.line() for element in elements[:max_lines]]
    if len(elements) > max_lines:
        lines.append(f"… ({len(elements) - max_lines} more elements)")
    return "\n".join(lines)
