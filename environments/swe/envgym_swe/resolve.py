"""Pinning a commit's requirements as of its date: ``uv pip compile --exclude-newer DATE`` on the host.

::

    res = resolve(["requests>=2", "pytest==8.3.5"], date="2021-03-01T12:00:00Z")
    res.pins     # ("certifi==2020.12.5", "chardet==4.0.0", …): every package, runtime and test, one version each
    res.error    # None, or the resolver's own error lines and a hint
    res.newer    # packages taken newer than DATE because their dated releases do not build for the image's Python

No release uploaded after ``date`` is considered, so 2021's ``requests`` gets 2021's ``urllib3`` and an
unpinned Flask gets the MarkupSafe of its day, not today's. Two kinds of package are exempt from the date:

* the grader's test stack (:data:`UNDATED`: pytest, which the caller pins to the image's version, and what
  it needs): the grader's runner needs a pytest that runs on the image's Python;
* a package whose dated release does not build for the target Python (a C extension older than the
  Python, e.g. cffi 1.14.0 under brotlipy for 3.11), in the resolver's own builds or in ``check`` (the
  host's ``pip wheel`` of each pin, :func:`fetch_pins`, as the image build will fetch them): the resolution
  is retried with that package undated, at most :data:`MAX_UNDATED` times, and the package is named in
  :attr:`Resolution.newer`.

The target is one Python (``--python-version``): ``envgym/swe-python`` offers only Debian bookworm's
``python3`` (:data:`envgym_swe.environment.IMAGE_PYTHON`), so a commit is pinned to what that Python can
run as of the commit's date. The index is uv's own configuration: PyPI unless ``UV_DEFAULT_INDEX`` (or the user's
``uv.toml``) says otherwise; tests serve one on loopback. Resolutions are cached in :data:`CACHE` per
(requirements, date, Python, index); failures are not (one may be the network's).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import Version

from envgym.plugin import SandboxError
from envgym_swe import images
from envgym_swe.images import failed_build

CACHE = Path.home() / ".cache" / "envgym" / "swe" / "resolved"
UNDATED = ("pytest", "pluggy", "iniconfig", "py")
"""The grader's test stack: never cut off by date (pytest itself is pinned to the image's by the caller). ``py``:
old pytest plugins (pytest-xdist, pytest-forked) require it, and a ``py`` older than 1.11 installed beside
pytest 8 breaks ``import pytest`` on Python 3.11."""
MAX_UNDATED = 4
_FAR = "2100-01-01T00:00:00Z"
_BUILD_FAILED = re.compile(r"Failed to (?:download and )?build `([A-Za-z0-9_.\-]+)==")
_INDEX_ENV = ("UV_DEFAULT_INDEX", "UV_INDEX_URL", "UV_INDEX", "UV_FIND_LINKS", "UV_EXTRA_INDEX_URL")


@dataclass(frozen=True)
class Resolution:
    pins: tuple[str, ...] = ()
    """``name==version`` of every package, sorted; empty when :attr:`error` is set."""
    error: str | None = None
    newer: tuple[str, ...] = ()


def uv_binary() -> str:
    """The ``uv`` next to this Python (``pip install uv`` puts it there) or on ``PATH``."""
    beside = Path(sys.executable).parent / "uv"
    found = str(beside) if beside.is_file() else shutil.which("uv")
    if found is None:
        raise SandboxError("uv is not installed: `pip install uv` (it pins a commit's requirements as of its date)")
    return found


def _error_lines(stderr: str) -> str:
    """uv's error and cause lines, the build's own ``error:`` lines and uv's hints (not the whole build log)."""
    keep = []
    for raw in stderr.splitlines():
        line = raw.strip()
        if line.startswith(("error:", "Error:", "cause:", "×", "╰─▶", "├─▶", "hint:")) or (
                line.startswith(("ERROR:", "error: ")) or " error: " in line or line.startswith("ModuleNotFoundError")):
            keep.append(line)
    text = "\n".join(dict.fromkeys(keep)) or "\n".join(stderr.strip().splitlines()[-8:])
    return text[:1500]


def resolve(requirements: list[str] | tuple[str, ...], *, date: str, python: str, cache: Path | None = CACHE,
            check: Callable[[tuple[str, ...]], None] | None = None) -> Resolution:
    """Pin ``requirements`` for ``python`` with nothing newer than ``date`` (see the module docstring).

    ``check(pins)`` (e.g. :func:`fetch_pins`) may prove the pins install: a SandboxError naming a package whose
    wheel does not build is retried like a build failure of the resolver's own; any other is the error."""
    reqs = sorted(dict.fromkeys(r.strip() for r in requirements if r.strip()))
    if not reqs:
        return Resolution()
    index = {k: os.environ[k] for k in _INDEX_ENV if k in os.environ}
    key = hashlib.sha256(json.dumps([reqs, date, python, index, UNDATED]).encode()).hexdigest()[:20]
    cached = cache / f"{key}.json" if cache is not None else None
    if cached is not None and cached.is_file():
        data = json.loads(cached.read_text())
        return Resolution(tuple(data["pins"]), data["error"], tuple(data["newer"]))
    undated = list(UNDATED)
    newer: list[str] = []
    while True:
        cmd = [uv_binary(), "pip", "compile", "-", "--quiet", "--no-header", "--no-annotate",
               "--python-version", python, "--exclude-newer", date,
               *(arg for name in undated for arg in ("--exclude-newer-package", f"{name}={_FAR}"))]
        proc = subprocess.run(cmd, input="\n".join(reqs) + "\n", capture_output=True, text=True, timeout=900,
                              cwd=tempfile.gettempdir())  # no project's uv settings; the user's apply
        hint = (f"hint: `uv pip compile --exclude-newer {date} --python-version {python}` with these requirements "
                "reproduces it; a pin the commit names may be newer than its date or need another Python")
        if proc.returncode == 0:
            pins = tuple(sorted(line.strip() for line in proc.stdout.splitlines()
                                if line.strip() and not line.lstrip().startswith("#")))
            try:
                if check is not None:
                    check(pins)
            except SandboxError as exc:
                culprit, error = failed_build(str(exc)), str(exc)
            else:
                result = Resolution(pins, None, tuple(newer))
                break
        else:
            failed = _BUILD_FAILED.findall(proc.stderr)
            culprit, error = (failed[-1].lower() if failed else None), _error_lines(proc.stderr) + "\n" + hint
        if culprit is not None and culprit not in undated and len(newer) < MAX_UNDATED:
            undated.append(culprit)
            newer.append(culprit)
            continue
        result = Resolution((), error, tuple(newer))
        break
    if cached is not None and result.error is None:  # a failure may be the network's: tried again next time
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_name(f"{cached.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"pins": list(result.pins), "error": result.error, "newer": list(result.newer)}))
        tmp.replace(cached)
    return result


def fetch_pins(pins: tuple[str, ...]) -> None:
    """Build or fetch the wheel of every pin not yet in the wheel cache (``pip wheel --no-deps``, as the image
    build will): a pin that resolves but does not build for the image's Python is found before any image."""
    have = images.cached_wheels()
    missing = [p for p in pins if _split_pin(p) not in have]
    if missing:
        images.fetch_wheels(missing, images.WHEEL_CACHE, deps=False)


def _split_pin(pin: str) -> tuple[str, str]:
    name, _, version = pin.partition("==")
    return str(canonicalize_name(name)), str(Version(version.split(";")[0].strip())) if version else ""
