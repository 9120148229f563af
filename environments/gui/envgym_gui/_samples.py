"""What the tests and the benchmarks of the desktop share: small documents of each kind the apps open (any
OpenDocument file with ``odf(mime, body)``, a slide with ``odp()`` for Impress, an image with ``png()`` for GIMP, a
sound with ``wav(seconds)`` for VLC), built here so that none needs files, and the reading of a desktop container's
memory (:func:`container_memory`)."""

from __future__ import annotations

import io
import wave
import zipfile
from typing import Any, NamedTuple

_ODF_NS = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
           'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
           'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
           'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
           'xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" office:version="1.2"')


def odf(mime: str, body: str) -> bytes:
    """A minimal OpenDocument file of type ``mime`` whose ``office:body`` holds ``body`` (the mimetype entry first
    and stored, as the format asks; a manifest; ``content.xml``)."""
    manifest = ('<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:'
                'opendocument:xmlns:manifest:1.0" manifest:version="1.2"><manifest:file-entry manifest:full-path="/" '
                f'manifest:media-type="{mime}"/><manifest:file-entry manifest:full-path="content.xml" '
                'manifest:media-type="text/xml"/></manifest:manifest>')
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(zipfile.ZipInfo("mimetype"), mime)
        z.writestr("META-INF/manifest.xml", manifest, zipfile.ZIP_DEFLATED)
        z.writestr("content.xml", f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {_ODF_NS}>'
                                  f"<office:body>{body}</office:body></office:document-content>", zipfile.ZIP_DEFLATED)
    return buf.getvalue()


def odp() -> bytes:
    return odf("application/vnd.oasis.opendocument.presentation",
               '<office:presentation><draw:page draw:name="Slide1"><draw:frame svg:x="2cm" svg:y="2cm" '
               'svg:width="20cm" svg:height="3cm"><draw:text-box><text:p>Quarterly review</text:p></draw:text-box>'
               "</draw:frame></draw:page></office:presentation>")


def png() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (320, 200), (30, 120, 200)).save(buf, "PNG")
    return buf.getvalue()


def wav(seconds: int = 600) -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(1)
        w.setframerate(8000)
        w.writeframes(b"\x80" * 8000 * seconds)
    return buf.getvalue()


class ContainerMemory(NamedTuple):
    """A container's memory in MiB, as :func:`container_memory` reads it from Docker's stats (cgroup v1 or v2)."""

    held: float
    """Anonymous memory + tmpfs: what the desktop itself holds and cannot give back."""
    docker: float
    """Usage less inactive file pages, the figure ``docker stats`` shows. It also holds the page cache of the image's
    files that this container read first (the same libraries read by another container first are charged there),
    so it moves by tens of MiB from run to run (Thunderbird's 200 MB of libraries)."""
    usage: float
    """The whole usage, page cache included."""


async def container_memory(engine: Any, container: str) -> ContainerMemory:
    """The memory of ``container`` now; ``engine`` is an ``envgym.sandbox.docker.DockerEngine``."""
    stats = (await engine.call("stats", container, stream=False))["memory_stats"]
    inner = stats.get("stats", {})
    inactive = inner.get("total_inactive_file", inner.get("inactive_file", 0))
    held = sum(inner.get(f"total_{k}", inner.get(k, 0)) for k in ("active_anon", "inactive_anon"))  # tmpfs included
    return ContainerMemory(held / 2**20, (stats["usage"] - inactive) / 2**20, stats["usage"] / 2**20)
