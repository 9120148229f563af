"""What a web agent sees: URL, title, a simplified DOM with stable element ids, and pixels only on request.

One ``page.evaluate`` walks the visible DOM and returns the page as text, one line per element of interest::

    [search-input] input type=text name=q value="" placeholder="Search products"
    [add-to-cart] button "Add to cart"
    [14] link "Orders" href=/orders
    [15] h1 "Your cart"

Element ids are stamped on the elements (``data-eg-id``) the first time they are seen and reused after, so
an element keeps its id across observations of the same page. An element with a unique, non-numeric HTML
``id`` uses that (apps name their controls, so reference solutions can address them); any other gets the
next number of a per-page counter, in document order, so the same page content always gets the same ids.

Screenshots are taken only when asked: Chromium encodes a JPEG of the viewport downscaled by ``scale``
(DevTools ``Page.captureScreenshot``); :class:`Screenshot` keeps the compressed bytes (observations stay
small, hashable and JSON-serialisable) and ``.array()`` decodes them into an ``(H, W, 3)`` uint8 array.
"""

from __future__ import annotations

import base64
import io
from typing import TYPE_CHECKING, Any

from envgym.plugin import FrozenModel, Observation

if TYPE_CHECKING:
    import numpy as np
    from playwright.async_api import Page

SNAPSHOT_JS = r"""
(maxLines) => {
  const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'META', 'LINK', 'HEAD', 'svg']);
  const LEAF = new Set(['A', 'BUTTON', 'SELECT', 'TEXTAREA', 'OPTION', 'INPUT', 'LABEL']);
  if (window.__egNext === undefined) window.__egNext = 1;
  const taken = new Set();
  document.querySelectorAll('[data-eg-id]').forEach(e => taken.add(e.getAttribute('data-eg-id')));
  const idOf = (el) => {
    let id = el.getAttribute('data-eg-id');
    if (id) return id;
    const own = el.id;
    if (own && !/^\d+$/.test(own) && !taken.has(own) && /^[\w.:-]{1,64}$/.test(own)
        && document.querySelectorAll('#' + CSS.escape(own)).length === 1) id = own;
    else { do { id = String(window.__egNext++); } while (taken.has(id)); }
    taken.add(id);
    el.setAttribute('data-eg-id', id);
    return id;
  };
  const clip = (s, n) => { s = (s || '').replace(/\s+/g, ' ').trim(); return s.length > n ? s.slice(0, n) + '…' : s; };
  const q = (s) => JSON.stringify(s);
  const lines = [];
  const visit = (el) => {
    if (lines.length >= maxLines || SKIP.has(el.tagName)) return;
    const id = idOf(el);
    if (el !== document.body && !el.checkVisibility({checkOpacity: false, checkVisibilityCSS: true})) return;
    const tag = el.tagName.toLowerCase();
    const role = el.getAttribute('role');
    let line = null;
    if (tag === 'input') {
      const type = (el.getAttribute('type') || 'text').toLowerCase();
      if (type === 'hidden') return;
      line = `input type=${type}`;
      if (el.name) line += ` name=${el.name}`;
      if (type === 'checkbox' || type === 'radio') line += el.checked ? ' checked' : ' unchecked';
      else if (type === 'submit' || type === 'button') line += ` ${q(clip(el.value, 80))}`;
      else line += ` value=${q(clip(el.value, 200))}`;
      if (el.placeholder) line += ` placeholder=${q(clip(el.placeholder, 80))}`;
      const label = el.labels && el.labels[0] ? clip(el.labels[0].innerText, 80) : '';
      if (label) line += ` label=${q(label)}`;
    } else if (tag === 'textarea') {
      line = `textarea name=${el.name} value=${q(clip(el.value, 400))}`;
    } else if (tag === 'select') {
      const opts = Array.from(el.options).map(o => clip(o.text, 60));
      const cur = el.selectedIndex >= 0 ? clip(el.options[el.selectedIndex].text, 60) : '';
      line = `select name=${el.name} selected=${q(cur)} options=${q(opts)}`;
    } else if (tag === 'a') {
      line = `link ${q(clip(el.innerText, 120))}`;
      const href = el.getAttribute('href');
      if (href && !href.startsWith('javascript:')) line += ` href=${href}`;
    } else if (tag === 'button' || role === 'button') {
      line = `button ${q(clip(el.innerText, 120))}`;
    } else if (tag === 'label') {
      line = `label ${q(clip(el.innerText, 160))}`;
    } else {
      let own = '';
      for (const n of el.childNodes) if (n.nodeType === 3) own += n.textContent + ' ';
      own = clip(own, 300);
      if (own) line = `${role || tag} ${q(own)}`;
      else if (el.tagName === 'CANVAS' || el.tagName === 'IMG') line = tag;
    }
    if (line !== null) lines.push(`[${id}] ${line}`);
    if (LEAF.has(el.tagName) && el.tagName !== 'LABEL') return;
    for (const child of el.children) visit(child);
  };
  if (document.body) visit(document.body);
  if (lines.length >= maxLines) lines.push(`… (page truncated at ${maxLines} lines)`);
  return {url: location.href, title: document.title, dom: lines.join('\n')};
}
"""


class Screenshot(FrozenModel):
    """A downscaled JPEG of the viewport; ``array()`` decodes it to an ``(H, W, 3)`` uint8 array."""

    width: int
    height: int
    jpeg_base64: str

    def array(self) -> np.ndarray:
        import numpy as np
        from PIL import Image

        with Image.open(io.BytesIO(base64.b64decode(self.jpeg_base64))) as image:
            return np.asarray(image.convert("RGB"))


class WebObservation(Observation):
    """``text`` renders goal, URL, title and the simplified DOM for text-only agents."""

    url: str = ""
    title: str = ""
    screenshot: Screenshot | None = None


def render(goal: str, url: str, title: str, dom: str, *, note: str | None = None) -> str:
    parts = [f"GOAL: {goal}", f"URL: {url}", f"TITLE: {title}"]
    if note:
        parts.append(note)
    parts += ["", dom]
    return "\n".join(parts)


async def snapshot(page: Page, *, max_lines: int = 800, extra: tuple[str, Any] | None = None) -> dict[str, Any]:
    """The page as ``url``, ``title``, ``dom``; with ``extra=(js_function, arg)`` also ``extra``: that function's
    value on the same document, in the same round trip (an env's own page state)."""
    if extra is None:
        return await page.evaluate(SNAPSHOT_JS, max_lines)
    script = f"([maxLines, arg]) => ({{...({SNAPSHOT_JS})(maxLines), extra: ({extra[0]})(arg)}})"
    return await page.evaluate(script, [max_lines, extra[1]])


async def screenshot(page: Page, *, scale: float = 0.5, quality: int = 60) -> Screenshot:
    """The viewport as a JPEG, downscaled by Chromium itself."""
    size = page.viewport_size or {"width": 1024, "height": 768}
    session = await page.context.new_cdp_session(page)
    try:
        shot = await session.send("Page.captureScreenshot", {
            "format": "jpeg", "quality": quality,
            "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": scale}})
    finally:
        await session.detach()
    return Screenshot(width=round(size["width"] * scale), height=round(size["height"] * scale),
                      jpeg_base64=shot["data"])
