"""Reset's readiness checks: a LibreOffice window whose menu and toolbar rows are flat is not drawn yet; an app that
ended without its window is launched again; a pool's refill waits for the resets in progress."""

from __future__ import annotations

import io

import pytest
from PIL import Image, ImageDraw

from envgym_gui.desktop import Window
from envgym_gui.env import drawn

WINDOW = Window(id=1, title="budget.ods - LibreOffice Calc", wm_class="libreoffice-calc", pid=None, focused=True,
                x=0, y=25, w=1280, h=695)


def _png(draw_menu: bool, *, status: bool = False) -> bytes:
    image = Image.new("RGB", (1280, 720), (246, 245, 244))
    pen = ImageDraw.Draw(image)
    pen.rectangle((0, 0, 1279, 24), fill=(80, 120, 200))  # the title bar, outside the window's client area
    if draw_menu:
        for i, word in enumerate(("File", "Edit", "View", "Insert", "Format")):
            pen.text((8 + 60 * i, 30), word, fill=(20, 20, 20))
        pen.rectangle((4, 60, 400, 90), outline=(150, 150, 150), fill=(230, 230, 230))
    if status:
        pen.text((8, 704), "Loading document...", fill=(20, 20, 20))
    buf = io.BytesIO()
    image.save(buf, "PNG")
    return buf.getvalue()


def test_a_blank_window_is_not_drawn_even_with_a_status_line() -> None:
    assert not drawn(_png(False), WINDOW)
    assert not drawn(_png(False, status=True), WINDOW)  # "Loading document..." at the bottom, nothing above


def test_menus_and_toolbars_make_it_drawn() -> None:
    assert drawn(_png(True), WINDOW)


class _FlakyApp:
    """The host side of a desktop whose app ends without a window ``fails`` times, then opens (the other side
    of the boundary: what DesktopEnv._open sees of the daemons)."""

    def __init__(self, fails: int, *, handed_off: bool = False) -> None:
        self.fails, self.launched, self.handed_off = fails, [], handed_off

    async def launch(self, app, path=None, *, timeout=60.0):  # noqa: ASYNC109 - its signature
        self.launched.append((app, path))
        return 100 + len(self.launched)

    async def wait_window(self, title, timeout=10.0, *, settle=0.25, app=None, pid=None):  # noqa: ASYNC109 - its signature
        from envgym_gui.desktop import AppExited, Window

        assert title == r"a\.txt"
        if self.handed_off:  # its launched process ends at once: not watched
            assert pid is None and app == "calc"
        else:
            assert pid == 100 + len(self.launched) and app == "editor"
        if len(self.launched) <= self.fails:
            raise AppExited(f"editor (pid {pid}) exited and no window title matches {title!r}; its log: 'bus'")
        return Window(id=1, title="a.txt - Mousepad", wm_class="mousepad", pid=pid, focused=True, x=0, y=0, w=10,
                      h=10)


async def test_reset_launches_an_app_that_ended_without_its_window_again():
    from envgym_gui.desktop import AppExited
    from envgym_gui.env import LAUNCHES, DesktopEnv

    env = DesktopEnv()
    env.desktop = _FlakyApp(fails=LAUNCHES - 1)
    window = await env._open({"app": "editor", "path": "/home/user/a.txt"})
    assert window.title == "a.txt - Mousepad" and len(env.desktop.launched) == LAUNCHES
    env.desktop = _FlakyApp(fails=LAUNCHES)  # every launch ends: the last error (with the app's log) is reset's
    with pytest.raises(AppExited, match="its log: 'bus'"):
        await env._open({"app": "editor", "path": "/home/user/a.txt"})
    assert len(env.desktop.launched) == LAUNCHES
    env.desktop = _FlakyApp(fails=0, handed_off=True)  # soffice hands its document to the prewarmed process
    await env._open({"app": "calc", "path": "/home/user/a.txt"})


async def test_a_pools_refill_waits_for_resets_that_prepare_their_first_observation():
    import asyncio

    from envgym_gui import env as gui_env

    resets = gui_env._Resets()
    loop = asyncio.get_running_loop()
    with resets.preparing_one():  # a reset has its desktop and has not observed yet
        refill = asyncio.ensure_future(resets.wait_quiet())
        await asyncio.sleep(gui_env.LEASE_GRACE_S + 0.2)
        assert not refill.done()
    await asyncio.wait_for(refill, 1)  # the observation taken: the refill goes at once

    resets.started("pool", +1)
    with resets.leasing_from("pool"):  # a reset leasing a ready desktop: held for a moment, not for ever
        started = loop.time()
        await asyncio.wait_for(resets.wait_quiet(), gui_env.LEASE_GRACE_S + 1)
        assert loop.time() - started >= gui_env.LEASE_GRACE_S * 0.9
    resets.started("pool", -1)
    with resets.leasing_from("pool"):  # nothing ready: the reset waits for this very refill, which goes now
        started = loop.time()
        await resets.wait_quiet()
        assert loop.time() - started < 0.1
