"""A Docker image per MCP server package, built offline on first use and named by a content hash.

A server given as a pip requirement (:attr:`McpServerSpec.package <envgym_mcp.spec.McpServerSpec.package>`, with
``requirements`` beside it) runs in an image of its own: the sandbox base image (``sandboxes/base``) plus a
virtual environment ``/opt/mcp-server`` holding the package and its dependencies, its console scripts on
``PATH``. So two servers whose MCP SDKs conflict (one needs ``mcp<2``, one ``mcp>=2.3``) each have theirs, and
neither touches envgym's own venv.

- **Tag**: ``envgym-mcp/<name>:<hash>``, the hash covering the requirements (sorted), the base image's tag and
  this module's Dockerfile: an unchanged server is never rebuilt, a changed base or pin rebuilds it.
- **Wheels**: resolved on the host by ``pip download --only-binary=:all:`` (PyPI is reachable from the host
  only; the base image's Python is Debian bookworm's 3.11, as the host's is expected to be, the same
  assumption ``envgym sandbox build`` makes) into ``~/.cache/envgym/mcp/<hash>/wheels``, kept: a removed image
  is rebuilt from them with no network at all.
- **Build**: ``docker build`` with network ``none``, ``pip install --no-index`` from those wheels; the image is
  labelled with what it holds (``envgym.mcp.resolved``). At run time the container has no network either.

:func:`ensure_image` builds when the tag is missing (a progress line on stderr, the time and size at the end),
under a file lock, so concurrent episodes and processes build once. ``envgym mcp build`` calls it ahead.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from envgym.plugin import EnvError, SpecError
from envgym.plugin.sandbox import image_exists
from envgym_mcp.spec import McpServerSpec

__all__ = ["CACHE", "DOCKERFILE", "ImageBuildFailed", "ensure_image", "image_tag"]

CACHE = Path.home() / ".cache" / "envgym" / "mcp"
"""Where the resolved wheels of each server image are kept (one folder per tag hash)."""
REPO = "envgym-mcp"
VENV = "/opt/mcp-server"
DOCKERFILE = f"""\
ARG BASE
FROM ${{BASE}}
COPY requirements.txt /tmp/build/requirements.txt
COPY wheels /tmp/build/wheels
RUN python3 -m venv --without-pip {VENV} \\
 && set -- /tmp/build/wheels/pip-*.whl \\
 && {VENV}/bin/python "$1/pip" install --quiet --no-index --find-links /tmp/build/wheels --no-cache-dir \\
      --root-user-action=ignore -r /tmp/build/requirements.txt \\
 && rm -rf /tmp/build
ENV PATH={VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
"""


class ImageBuildFailed(EnvError):
    """A server's image could not be built (the wheels would not resolve, or the build failed): nothing the
    agent did, the episode never starts."""

    blame = "infra"


def _requirements(spec: McpServerSpec) -> list[str]:
    assert spec.package is not None
    return [spec.package, *sorted(spec.requirements)]


def _base_tag() -> str:
    from envgym.plugin.sandbox import tag_for

    return tag_for("base")


def image_tag(spec: McpServerSpec, base_tag: str | None = None) -> str:
    """The tag of ``spec``'s image (built or not)."""
    if spec.package is None:
        raise SpecError(f"server {spec.name!r} names no package: it has no image of its own", field="package")
    recipe = json.dumps({"requirements": _requirements(spec), "base": base_tag or _base_tag(),
                         "dockerfile": DOCKERFILE}, sort_keys=True)
    return f"{REPO}/{spec.name}:{hashlib.sha256(recipe.encode()).hexdigest()[:12]}"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_image(spec: McpServerSpec, *, log: Callable[[str], None] | None = None) -> str:
    """``spec``'s image tag, built first if missing (synchronous: call it off the event loop)."""
    from envgym.plugin.sandbox import connect

    say = log or (lambda line: print(line, file=sys.stderr, flush=True))
    base = _base_tag()
    tag = image_tag(spec, base)
    api = connect()
    try:
        if image_exists(api, tag):
            return tag
        folder = CACHE / tag.rsplit(":", 1)[1]
        with _locked(folder.parent / f"{folder.name}.lock"):
            if image_exists(api, tag):  # another process built it while this one waited
                return tag
            if not image_exists(api, base):
                raise ImageBuildFailed(f"the sandbox base image {base} is missing: run sandboxes/host-setup.sh "
                                       "(or `envgym sandbox build python`)")
            started = time.monotonic()
            say(f"envgym mcp: building {tag} for {' '.join(_requirements(spec))} (first use: 15-40 s)")
            wheels = _wheels(spec, folder, say)
            _build(api, spec, tag, base, wheels)
            size = api.inspect_image(tag)["Size"]
            say(f"envgym mcp: built {tag} in {time.monotonic() - started:.1f} s ({size / 1e6:.0f} MB)")
            return tag
    finally:
        api.close()


def _wheels(spec: McpServerSpec, folder: Path, say: Callable[[str], None]) -> Path:
    """The folder of resolved wheels, downloaded on the host unless an earlier build left them."""
    wheels = folder / "wheels"
    if (folder / "resolved.txt").is_file():
        return wheels
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    (partial / "wheels").mkdir(parents=True)
    say(f"envgym mcp: pip download {' '.join(_requirements(spec))} (on the host)")
    done = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:",
                           "-d", str(partial / "wheels"), *_requirements(spec), "pip"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        errors = [line for line in done.stderr.splitlines() if not line.startswith("WARNING")]
        raise ImageBuildFailed(f"pip download {' '.join(_requirements(spec))} failed: "
                               + "\n".join(errors)[-1500:])
    names = sorted(p.name for p in (partial / "wheels").iterdir())
    (partial / "resolved.txt").write_text("\n".join(names) + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(partial, folder)
    return wheels


def _build(api: Any, spec: McpServerSpec, tag: str, base: str, wheels: Path) -> None:
    resolved = sorted(p.name for p in wheels.iterdir())
    with tempfile.TemporaryDirectory(prefix=f"envgym-mcp-{spec.name}-") as tmp:
        context = Path(tmp)
        (context / "Dockerfile").write_text(DOCKERFILE)
        (context / "requirements.txt").write_text("\n".join(_requirements(spec)) + "\n")
        shutil.copytree(wheels, context / "wheels")
        labels = {"envgym.image": f"mcp-{spec.name}", "envgym.mcp.requirements": " ".join(_requirements(spec)),
                  "envgym.mcp.resolved": " ".join(n.removesuffix(".whl") for n in resolved)[:8000]}
        tail: list[str] = []
        for chunk in api.build(path=str(context), tag=tag, buildargs={"BASE": base}, network_mode="none", rm=True,
                               forcerm=True, labels=labels, decode=True):
            if "error" in chunk:
                raise ImageBuildFailed(f"building {tag} failed: {chunk['error'].strip()}\n" + "".join(tail)[-1500:])
            tail = [*tail, chunk.get("stream", "")][-30:]
