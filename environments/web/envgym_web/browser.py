"""The browser layer: one shared Chromium per process (and event loop), one context per episode.

Playwright's async API drives Debian's Chromium, launched with ``executable_path`` (Playwright's own download
is never used): Debian's ``chromium-headless-shell`` when installed, else ``chromium``. The headless shell is
the same Chromium build without the browser UI layer, and what Playwright itself runs for headless Chromium;
here it opens a context and page about 5x faster and navigates about 2x faster (benchmarks/web_latency.py
``--compare-binaries``). ``ENVGYM_CHROMIUM`` overrides the choice.

:func:`shared_browser` returns the loop's :class:`SharedBrowser`; an env holds a lease on it while open
(``acquire``/``release``), and the browser process is shut down when the last lease goes.
:meth:`SharedBrowser.open_episode` gives an :class:`EpisodeBrowser`: a fresh context (own cookies, storage,
cache) whose every request outside the episode's origin fails and is recorded in ``blocked``. When Chromium
dies, every episode opened on it raises :class:`BrowserCrashed` (an ``EnvError``: the rollout records the
episode as ``infra_error``) and the next ``open_episode`` launches a new browser.

An env may run its next episode in the same context and page (:meth:`EpisodeBrowser.recycle`), which spares
Chromium a renderer process per episode (the largest CPU cost of a short episode), but only while the context
is proven clean: recycling closes any other page, clears cookies and the origin's storage, and parks the mouse
off the page; after the next document loads, :meth:`EpisodeBrowser.proven_clean` drops the navigation history
and checks what that document found when it started (an init script records it before any page script runs):
empty local and session storage. Cookies are checked browser-side: none is left once recycling cleared them
(the env then adds its own, e.g. a signed-in user's). A context that fails any of this is closed and the
episode gets a fresh one.

The off-origin guard is the context's proxy: every request goes to a sink on 127.0.0.1 that notes the URL and
hangs up (the page sees ``ERR_EMPTY_RESPONSE``), except the episode's origin, the one bypass (``<-loopback>``
first: Chromium sends loopback direct unless told). Same-origin requests go straight to the site and may be
cached. A Playwright route did this before, and cost more than a whole page load: every request paused for a
round trip through the driver and Python, and routing turns Chromium's HTTP cache off.

Playwright objects belong to the event loop that created them, so the "one browser per process" is one per
process and loop: the sync Gymnasium facade, which runs a private loop, gets its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import uuid
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from playwright.async_api import Browser, BrowserContext, CDPSession, Page, Playwright, async_playwright
from playwright.async_api import Error as PlaywrightError

from envgym.plugin import EnvError

# The last switch: no RenderDocument (a new document host per same-site navigation) and no back-forward
# cache, which halves same-origin navigation time here; going back reloads the page from the local app.
CHROMIUM_ARGS = ("--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic",
                 "--disable-features=RenderDocument,BackForwardCache")
VIEWPORT = {"width": 1024, "height": 768}


class BrowserCrashed(EnvError):
    """Chromium died (or was killed) under an episode; the episode is an infra error.

    The agent's actions cannot run script or leave the site, so nothing it does kills the host's browser.
    """

    blame = "infra"


class BrowserMissing(EnvError, FileNotFoundError):
    """Debian's chromium is not installed (``bash sandboxes/host-setup.sh`` installs it)."""

    blame = "infra"


HEADLESS_SHELL = "/usr/lib/chromium/chromium-headless-shell"  # Debian's package puts a wrapper in /usr/bin


def chromium_path() -> str:
    """The browser binary: ``$ENVGYM_CHROMIUM``, else Debian's headless shell, else Debian's chromium."""
    found = (os.environ.get("ENVGYM_CHROMIUM") or (HEADLESS_SHELL if Path(HEADLESS_SHELL).exists() else None)
             or shutil.which("chromium") or "/usr/bin/chromium")
    if not Path(found).exists():
        raise BrowserMissing(f"Debian's chromium not found at {found}: run `bash sandboxes/host-setup.sh`")
    return found


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


# Runs at the start of every document, before the page's own scripts: what the document found. ``recycle`` asks
# for none of it to be there (a fresh context has none).
_START_JS = """(() => {
  let found;
  try { found = {local: localStorage.length, session: sessionStorage.length}; }
  catch (e) { found = {error: String(e)}; }
  Object.defineProperty(window, '__envgymStart', {value: found, enumerable: false});
})()"""
_CLEAN_JS = """() => { const s = window.__envgymStart;
  return !!s && s.local === 0 && s.session === 0; }"""


@dataclass
class EpisodeBrowser:
    """One episode's browser context and page. ``blocked`` lists the off-origin URLs the route aborted."""

    context: BrowserContext
    page: Page
    origin: str
    generation: int
    owner: SharedBrowser
    blocked: list[str] = field(default_factory=list)
    recycled: bool = False
    """True when this context served an earlier episode (until :meth:`proven_clean` says otherwise)."""
    page_crashed: bool = False
    sink: asyncio.Server | None = None
    """The proxy the context sends its off-origin requests to (:func:`_sink`)."""
    _cdp: CDPSession | None = None

    @property
    def crashed(self) -> bool:
        return self.owner.generation != self.generation or not self.owner.connected

    async def cdp(self) -> CDPSession:
        """A DevTools session on the page (one per episode browser, kept)."""
        if self._cdp is None:
            self._cdp = await self.context.new_cdp_session(self.page)
        return self._cdp

    async def recycle(self, origin: str) -> bool:
        """Ready this context for another episode on ``origin``; False when it cannot be (close it then).

        Closes any other page (popups), clears the context's cookies and the origin's storage, empties the
        page's session storage and parks the mouse off the page (so no element of the next document starts
        hovered). What the next document finds is checked by :meth:`proven_clean`.
        """
        if self.crashed or self.page_crashed or self.page.is_closed() or origin.lower() != self.origin:
            return False
        try:
            for other in self.context.pages:
                if other is not self.page:
                    await other.close()
            await self.context.clear_cookies()
            cdp = await self.cdp()
            await cdp.send("Storage.clearDataForOrigin", {"origin": self.origin, "storageTypes": "all"})
            if origin_of(self.page.url) == self.origin:  # session storage lives in the tab, per origin
                await self.page.evaluate("() => { try { sessionStorage.clear(); } catch (e) {} }")
            await self.page.mouse.move(-1, -1)
            if await self.context.cookies() or len(self.context.pages) != 1:
                return False
        except PlaywrightError:
            return False
        self.blocked = []
        self.recycled = True
        return True

    async def proven_clean(self) -> bool:
        """After the next episode's first document loaded: drop the history and check what it started with."""
        try:
            cdp = await self.cdp()
            await cdp.send("Page.resetNavigationHistory")
            history = await cdp.send("Page.getNavigationHistory")
            clean = len(history["entries"]) == 1 and bool(await self.page.evaluate(_CLEAN_JS))
        except PlaywrightError:
            return False
        self.recycled = clean
        return clean

    async def close(self) -> None:
        if self.sink is not None:
            self.sink.close()
        if self.crashed:
            return
        with contextlib.suppress(PlaywrightError):
            await self.context.close()


async def _sink(episode: EpisodeBrowser) -> asyncio.Server:
    """A proxy that refuses everything: it notes each request's URL in ``episode.blocked`` and hangs up."""

    async def refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            method, target, _ = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1").split(" ", 2)
            episode.blocked.append(f"https://{target}" if method == "CONNECT" else target)
        except (OSError, ValueError, TimeoutError):
            pass
        finally:
            writer.close()

    return await asyncio.start_server(refuse, "127.0.0.1", 0)


class SharedBrowser:
    """The loop's Chromium: launched on demand, relaunched after a crash, closed with its last lease."""

    def __init__(self) -> None:
        self.marker = f"--envgym-browser={uuid.uuid4().hex}"
        self.generation = 0
        self.leases = 0
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._lock = asyncio.Lock()

    @property
    def connected(self) -> bool:
        return self._browser is not None and self._browser.is_connected()

    def acquire(self) -> None:
        self.leases += 1

    async def release(self) -> None:
        self.leases = max(0, self.leases - 1)
        if self.leases == 0:
            await self.shutdown()

    async def _ensure(self) -> Browser:
        async with self._lock:
            if self._browser is not None and self._browser.is_connected():
                return self._browser
            if self._playwright is None:
                self._playwright = await async_playwright().start()
            self.generation += 1
            try:
                self._browser = await self._playwright.chromium.launch(
                    executable_path=chromium_path(), args=[*CHROMIUM_ARGS, self.marker], headless=True)
            except PlaywrightError as exc:
                raise EnvError(f"chromium failed to launch: {exc.message.splitlines()[0]}") from exc
            return self._browser

    async def open_episode(self, origin: str, *, viewport: dict[str, int] | None = None) -> EpisodeBrowser:
        """A new context whose requests outside ``origin`` fail (see the module docstring), and its page."""
        browser = await self._ensure()
        generation = self.generation
        episode = EpisodeBrowser(context=None, page=None, origin=origin_of(origin),  # type: ignore[arg-type]
                                 generation=generation, owner=self)
        episode.sink = sink = await _sink(episode)
        proxy = {"server": f"http://127.0.0.1:{sink.sockets[0].getsockname()[1]}",
                 "bypass": f"<-loopback>,{episode.origin}"}
        try:
            episode.context = context = await browser.new_context(viewport=viewport or VIEWPORT,
                                                                  service_workers="block", proxy=proxy)
            await context.add_init_script(_START_JS)
            context.set_default_timeout(15_000)
            episode.page = await context.new_page()
            episode.page.on("crash", lambda _page: setattr(episode, "page_crashed", True))
        except PlaywrightError as exc:
            sink.close()
            if not self.connected or self.generation != generation:
                raise BrowserCrashed(f"chromium died while opening an episode: {exc.message.splitlines()[0]}") from exc
            raise EnvError(f"could not open a browser context: {exc.message.splitlines()[0]}") from exc
        return episode

    def pids(self) -> list[int]:
        """Process ids of this browser's main process (found by the marker switch on its command line)."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if self.marker.encode() in argv and not any(a.startswith(b"--type=") for a in argv):
                found.append(int(entry.name))
        return found

    async def shutdown(self) -> None:
        browser, playwright = self._browser, self._playwright
        self._browser = self._playwright = None
        if browser is not None:
            with contextlib.suppress(PlaywrightError):
                await browser.close()
        if playwright is not None:
            await playwright.stop()


_shared: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, SharedBrowser] = weakref.WeakKeyDictionary()


def shared_browser() -> SharedBrowser:
    """The running loop's shared browser (created, not launched, on first use)."""
    loop = asyncio.get_running_loop()
    browser = _shared.get(loop)
    if browser is None:
        browser = _shared[loop] = SharedBrowser()
    return browser


def is_crash(exc: BaseException, episode: EpisodeBrowser) -> bool:
    return isinstance(exc, PlaywrightError) and episode.crashed


__all__ = ["CHROMIUM_ARGS", "BrowserCrashed", "BrowserMissing", "EpisodeBrowser", "SharedBrowser", "chromium_path",
           "is_crash", "origin_of", "shared_browser"]
