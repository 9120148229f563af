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

:class:`OSWorldObservation` (``gui/osworld-v1`` with ``observation="osworld"``) adds OSWorld's own form:
``.osworld()`` is the dict OSWorld's agents take, with the tree as OSWorld's XML (:func:`osworld_tree`).
"""

from __future__ import annotations

import base64
import io
import re
from typing import TYPE_CHECKING, Any
from xml.sax.saxutils import escape, quoteattr

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


# -- OSWorld's form --------------------------------------------------------------------------------------------
OSWORLD_NS = {name: f"https://accessibility.ubuntu.example.org/ns/{path}" for name, path in (
    ("st", "state"), ("attr", "attributes"), ("cp", "component"), ("doc", "document"),
    ("docattr", "document/attributes"), ("txt", "text"), ("val", "value"), ("act", "action"))}
"""The XML namespaces of OSWorld's Ubuntu accessibility tree (its server's ``/accessibility``)."""
_TAG = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
_XML_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ufffc\ufffd]")


class OSWorldObservation(GuiObservation):
    """A :class:`GuiObservation` that also carries OSWorld's observation (``gui/osworld-v1`` with
    ``observation="osworld"``): :meth:`osworld` is the dict an OSWorld agent's ``predict`` takes."""

    instruction: str = ""
    accessibility_tree: str | None = None
    """The accessibility tree as OSWorld's server gives it: XML, a ``desktop-frame`` root, one element per node
    named by its role, ``name``, ``st:*`` states, ``cp:screencoord`` / ``cp:size`` and the node's text."""

    def osworld(self) -> dict[str, Any]:
        """``{"screenshot": PNG bytes, "accessibility_tree": XML text, "terminal": None, "instruction": ...}``."""
        return {"screenshot": self.screenshot.png() if self.screenshot else None,
                "accessibility_tree": self.accessibility_tree, "terminal": None, "instruction": self.instruction}


def osworld_tree(elements: list[Any]) -> str:
    """:class:`envgym_gui.desktop.Element` s (depth first, with depths) as OSWorld's XML accessibility tree.

    The desktop daemon reports showing nodes only, with the states focused, selected, checked, expanded,
    editable and active: every node is written ``st:showing``, ``st:visible`` and ``st:enabled`` (the daemon
    does not yet say which are disabled), so OSWorld's own filter (``linearize_accessibility_tree``) keeps
    the nodes it would keep on its VM. Text is the node's first 200 characters (OSWorld reads all of it)."""
    head = " ".join(f'xmlns:{k}="{v}"' for k, v in OSWORLD_NS.items())
    out = [f"<desktop-frame {head}>"]
    stack: list[tuple[int, str]] = []  # (depth, tag) of the open elements

    def close_to(depth: int) -> None:
        while stack and stack[-1][0] >= depth:
            out.append(f"</{stack.pop()[1]}>")

    for element in elements:
        close_to(element.depth)
        tag = element.role.replace(" ", "-") or "unknown"
        tag = tag if _TAG.match(tag) and not tag.lower().startswith("xml") else "unknown"
        attrs = {"name": element.name}
        for state in ("showing", "visible", "enabled", *element.states):
            attrs[f"st:{state}"] = "true"
        if element.bbox is not None:
            x, y, w, h = element.bbox
            attrs["cp:screencoord"], attrs["cp:size"] = str((x, y)), str((w, h))
        rendered = " ".join(f"{k}={quoteattr(_XML_UNSAFE.sub('', v))}" for k, v in attrs.items())
        out.append(f"<{tag} {rendered}>{escape(_XML_UNSAFE.sub('', element.text or ''))}")
        stack.append((element.depth, tag))
    close_to(-1)
    out.append("</desktop-frame>")
    return "".join(out)
