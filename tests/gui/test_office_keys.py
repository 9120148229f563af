"""Keys reach LibreOffice in the order they were sent, also when it is starved of CPU.

LibreOffice runs a shortcut (``ctrl+End``) from an event it posts to itself after the key press; keys that
arrived meanwhile were handled first. On a loaded host (oracle runs at load 20+) ``ctrl+End Return`` then
split the document's first paragraph and the text typed next landed at its start (or ``ctrl+End`` ran after
the ``Return``). Stopping LibreOffice while the keys go out and resuming it half a second later reproduces the
starved process every time: all of them are read in one go.
"""

from __future__ import annotations

import asyncio
import io
import re
import secrets
import zipfile

import pytest

from envgym_gui._samples import odf

pytestmark = pytest.mark.docker
RUN_ID = f"pytest-gui-keys-{secrets.token_hex(4)}"
PATH = "/home/user/Documents/report.odt"


def _odt(paragraphs: list[str]) -> bytes:
    body = "".join(f"<text:p>{p}</text:p>" for p in paragraphs)
    return odf("application/vnd.oasis.opendocument.text", f"<office:text>{body}</office:text>")


def _paragraphs(odt: bytes) -> list[str]:
    xml = zipfile.ZipFile(io.BytesIO(odt)).read("content.xml").decode()
    return [re.sub("<[^>]+>", "", p) for p in re.findall(r"<text:p\b[^>]*?(?:/>|>.*?</text:p>)", xml)]


@pytest.fixture
async def writer(desktop):
    await desktop.write_files({PATH: _odt(["Title", "Body one."])})
    await desktop.launch("writer", PATH, timeout=180)
    await desktop.wait_window(r"report\.odt - LibreOffice Writer", timeout=180, settle=0)
    assert await desktop.office_quiet(timeout=60, horizon_ms=100)
    return desktop


async def test_a_shortcut_is_handled_before_the_keys_after_it_by_a_starved_libreoffice(writer):
    d = writer

    async def signal(sig: str) -> None:
        done = await d.sandbox.exec(["sh", "-c", f"kill -{sig} $(pidof soffice.bin)"], user="user")
        assert done.exit_code == 0, done.stderr

    async def append(i: int) -> None:
        await d.key("ctrl+End Return")
        await d.type_text(f"Added {i}")

    for i in range(3):
        await d.key("ctrl+Home")
        await signal("STOP")
        typing = asyncio.create_task(append(i))
        await asyncio.sleep(0.5)  # the keys are sent (or the first waits for LibreOffice)
        await signal("CONT")
        await typing
    before = await d.read_file(PATH)
    await d.key("ctrl+s")
    for _ in range(150):  # the save is asynchronous to the key press
        saved = await d.read_file(PATH)
        if saved != before:
            break
        await asyncio.sleep(0.2)
    assert saved is not None and saved != before
    assert _paragraphs(saved) == ["Title", "Body one.", "Added 0", "Added 1", "Added 2"]
