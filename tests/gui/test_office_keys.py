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

from envgym.sandbox import tag_for
from envgym.sandbox.docker import DockerEngine, DockerSandbox
from envgym_gui.desktop import PROFILE, Desktop

pytestmark = pytest.mark.docker
RUN_ID = f"pytest-gui-keys-{secrets.token_hex(4)}"
PATH = "/home/user/Documents/report.odt"


def _odt(paragraphs: list[str]) -> bytes:
    ns = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
          'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2"')
    body = "".join(f"<text:p>{p}</text:p>" for p in paragraphs)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.text")
        z.writestr("META-INF/manifest.xml", '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest '
                   'xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2">'
                   '<manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.'
                   'opendocument.text"/><manifest:file-entry manifest:full-path="content.xml" '
                   'manifest:media-type="text/xml"/></manifest:manifest>', zipfile.ZIP_DEFLATED)
        z.writestr("content.xml", f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {ns}>'
                                  f"<office:body><office:text>{body}</office:text></office:body>"
                                  "</office:document-content>", zipfile.ZIP_DEFLATED)
    return buf.getvalue()


def _paragraphs(odt: bytes) -> list[str]:
    xml = zipfile.ZipFile(io.BytesIO(odt)).read("content.xml").decode()
    return [re.sub("<[^>]+>", "", p) for p in re.findall(r"<text:p\b[^>]*?(?:/>|>.*?</text:p>)", xml)]


@pytest.fixture
async def writer():
    image = tag_for("desktop")
    async with DockerEngine(max_concurrency=4) as engine:
        try:
            await engine.call("inspect_image", image)
        except Exception as exc:  # the engine's not-found, whatever its type
            pytest.fail(f"{image} is not built: envgym sandbox build desktop ({exc})")
        sb = DockerSandbox(image, PROFILE, engine=engine, run_id=RUN_ID)
        await sb.start()
        d = Desktop(sb)
        try:
            await d.start()
            await d.write_files({PATH: _odt(["Title", "Body one."])})
            await d.launch("writer", PATH, timeout=180)
            await d.wait_window(r"report\.odt - LibreOffice Writer", timeout=180, settle=0)
            assert await d.office_quiet(timeout=60, horizon_ms=100)
            yield d
        finally:
            await d.close()
            await sb.stop()


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
