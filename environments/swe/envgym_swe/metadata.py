"""A commit's package metadata as its build backend reports it, read in a sandbox with no network.

::

    meta = read_metadata(Path("~/src/requests"), "9ed5db8e…")
    meta.requires_dist    # ("chardet>=3.0.2,<4", "idna>=2.5,<3", …, 'PySocks!=1.5.7,>=1.5.6; extra == "socks"')
    meta.tests_require    # setup(tests_require=…) of a setuptools project: not in METADATA, captured as setup() runs
    meta.error            # None, or why the backend gave no metadata (its last lines and a hint)

The repository's tree at the commit (``git archive``) goes into a container of ``envgym/swe-python``
(network ``none``, read-only root, the project's hardening); the backend named by ``pyproject.toml``'s
``[build-system]`` (``setuptools.build_meta:__legacy__`` when there is none, as pip would) runs its PEP 517
``prepare_metadata_for_build_wheel`` (``build_wheel`` when it has none), so a ``setup.py`` that computes
``install_requires`` from a variable or a file, ``setup.cfg``, PEP 621 and Poetry all count. The backend's
``requires`` that the image does not satisfy (hatchling, poetry-core, flit-core, pdm-backend, a newer
setuptools, setuptools-scm …) are fetched as wheels on the host
(:func:`envgym_swe.images.fetch_wheels`) and installed in the container only. A version from the VCS
(setuptools-scm, hatch-vcs) is pretended (``0.0.0``): the archive has no ``.git``.

Results are cached in :data:`CACHE`, keyed by the blobs of the packaging files (:data:`PACKAGING_FILES`
and the ``requirements/`` folder), the swe-python image and this module's script: commits whose packaging
did not change share one reading.

Synchronous (it runs its own event loop): call it from a thread in async code.
"""

from __future__ import annotations

import asyncio
import email.parser
import hashlib
import io
import json
import subprocess
import tarfile
import tempfile
import tomllib
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from envgym.plugin import SandboxError

CACHE = Path.home() / ".cache" / "envgym" / "swe" / "metadata"
PACKAGING_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "MANIFEST.in")
DEFAULT_BACKEND = "setuptools.build_meta:__legacy__"
DEFAULT_REQUIRES = ("setuptools>=40.8.0",)
_IMAGE_HAS = {"setuptools", "wheel"}
_SCRIPT = r'''
import importlib, json, os, sys, zipfile
captured = {}

def clean(value):
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    try:
        return [str(v) for v in value]
    except TypeError:
        return str(value)

def wrap(module):
    original = module.setup
    def setup(*args, **kw):
        for key in ("tests_require", "extras_require", "install_requires"):
            if key in kw:
                captured[key] = clean(kw[key])
        return original(*args, **kw)
    module.setup = setup

for name in ("setuptools", "distutils.core"):
    try:
        wrap(importlib.import_module(name))
    except Exception:
        pass
spec, out = sys.argv[1], sys.argv[2]
paths = [os.path.abspath(p) for p in sys.argv[3:]]
sys.path[:0] = paths
module, _, attr = spec.partition(":")
backend = importlib.import_module(module)
for part in filter(None, attr.split(".")):
    backend = getattr(backend, part)
os.makedirs(out, exist_ok=True)
hook = getattr(backend, "prepare_metadata_for_build_wheel", None)
if hook is not None:
    text = open(os.path.join(out, hook(out, {}), "METADATA"), encoding="utf-8").read()
else:
    with zipfile.ZipFile(os.path.join(out, backend.build_wheel(out, {}))) as whl:
        text = whl.read(next(n for n in whl.namelist() if n.endswith(".dist-info/METADATA"))).decode()
json.dump({"metadata": text, "captured": captured}, open("/work/result.json", "w"))
'''


@dataclass(frozen=True)
class PackageMetadata:
    name: str = ""
    requires_python: str = ""
    requires_dist: tuple[str, ...] = ()
    """``Requires-Dist`` lines as the backend wrote them (markers, ``extra == …`` included)."""
    tests_require: tuple[str, ...] = ()
    backend: str = DEFAULT_BACKEND
    error: str | None = None


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    return proc.stdout if proc.returncode == 0 else ""


def build_system(repo: Path, commit: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """(backend, requires, backend-path) of ``pyproject.toml``'s ``[build-system]``, pip's defaults without it."""
    try:
        table = tomllib.loads(_git(repo, "show", f"{commit}:pyproject.toml") or "").get("build-system", {})
    except tomllib.TOMLDecodeError:
        table = {}
    backend = str(table.get("build-backend") or DEFAULT_BACKEND)
    requires = tuple(str(r) for r in table.get("requires", DEFAULT_REQUIRES))
    return backend, requires, tuple(str(p) for p in table.get("backend-path", []))


def cache_key(repo: Path, commit: str) -> str:
    """The packaging files' blob ids (and the requirements folder's tree id), the image and the script."""
    from envgym_swe.images import parent_tag

    listing = _git(repo, "ls-tree", commit, "--", *PACKAGING_FILES, "requirements")
    return hashlib.sha256(f"{listing}\n{parent_tag()}\n{_SCRIPT}".encode()).hexdigest()[:20]


def parse(text: str, captured: dict, backend: str) -> PackageMetadata:
    msg = email.parser.HeaderParser().parsestr(text)
    tests = captured.get("tests_require") or []
    if isinstance(tests, str):
        tests = tests.splitlines()
    return PackageMetadata(name=str(msg.get("Name") or ""), requires_python=str(msg.get("Requires-Python") or ""),
                           requires_dist=tuple(str(r) for r in msg.get_all("Requires-Dist") or ()),
                           tests_require=tuple(str(t).strip() for t in tests if str(t).strip()), backend=backend)


def _needed(requires: tuple[str, ...]) -> tuple[str, ...]:
    """The requirements the image does not satisfy (its setuptools and wheel, any version they meet)."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    from envgym_swe.environment import IMAGE_PACKAGES

    needed = []
    for text in requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        name = canonicalize_name(req.name)
        if name in _IMAGE_HAS and req.specifier.contains(IMAGE_PACKAGES[name], prereleases=True):
            continue
        needed.append(text)
    return tuple(needed)


async def _read(repo: Path, commit: str, log: Callable[[str], None]) -> PackageMetadata:
    from envgym.plugin.sandbox import DEFAULT, DockerSandbox, build_images
    from envgym_swe.images import PARENT, fetch_wheels, parent_tag

    backend, requires, backend_path = build_system(repo, commit)
    needed = _needed(requires)
    await asyncio.to_thread(build_images, [PARENT], log=log)
    profile = DEFAULT.model_copy(update={
        "name": "swe-metadata", "memory": "2g", "lifetime_s": 900, "disk": "1088m",
        "tmpfs": {**DEFAULT.tmpfs, "/work": "rw,exec,nosuid,size=768m,mode=1777"},
        "environment": {"HOME": "/root", "PIP_NO_INDEX": "1", "PYTHONDONTWRITEBYTECODE": "1",
                        "SETUPTOOLS_SCM_PRETEND_VERSION": "0.0.0", "PYTHONPATH": "/work/backend"}})
    with tempfile.TemporaryDirectory(prefix="envgym-swe-meta-") as tmp:
        src = Path(tmp) / "src"
        await asyncio.to_thread(_archive, repo, commit, src)
        wheels = Path(tmp) / "wheels"
        if needed:
            log(f"fetching the build backend: {' '.join(needed)}")
            await asyncio.to_thread(fetch_wheels, needed, wheels)
        else:
            wheels.mkdir()
        sandbox = DockerSandbox(parent_tag(), profile)
        await sandbox.start()
        try:
            await sandbox.copy_in(src, "/work")
            await sandbox.copy_in(wheels, "/work")
            await sandbox.write("/work/meta.py", _SCRIPT)
            steps = []
            if needed:
                steps.append("python3 -m pip install -q --no-index --find-links /wheels --find-links /work/wheels "
                             "--target /work/backend " + " ".join(f"'{r}'" for r in needed))
            steps.append(f"cd /work/src && python3 /work/meta.py '{backend}' /work/out " +
                         " ".join(f"'{p}'" for p in backend_path))
            result = await sandbox.exec(["bash", "-c", " && ".join(steps)], timeout=600, max_output=1 << 16)
            if result.exit_code != 0:
                tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-12:])
                return PackageMetadata(backend=backend, error=f"{backend} could not prepare the metadata at "
                                       f"{commit[:12]} (exit {result.exit_code}):\n{tail}")
            data = json.loads(await sandbox.read("/work/result.json"))
        finally:
            await sandbox.stop()
    return parse(data["metadata"], data["captured"], backend)


def _archive(repo: Path, commit: str, dest: Path) -> None:
    """The tree of ``commit`` (no ``.git``) extracted into ``dest``."""
    proc = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", commit], capture_output=True)
    if proc.returncode != 0:
        raise SandboxError(f"git archive {commit[:12]} in {repo} failed: {proc.stderr.decode()[-300:]}")
    dest.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
        tar.extractall(dest, filter="data")


def read_metadata(repo: Path, commit: str, *, cache: Path | None = CACHE,
                  log: Callable[[str], None] = lambda _: None) -> PackageMetadata:
    """The metadata of ``repo`` at ``commit`` (see the module docstring); a failing backend is a result, not
    an exception (:attr:`PackageMetadata.error`); SandboxError when Docker or the host's fetch fails."""
    repo = Path(repo)
    path = cache / f"{cache_key(repo, commit)}.json" if cache is not None else None
    if path is not None and path.is_file():
        data = json.loads(path.read_text())
        return PackageMetadata(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})
    meta = asyncio.run(_read(repo, commit, log))
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.tmp{id(meta)}")
        tmp.write_text(json.dumps(asdict(meta)))
        tmp.replace(path)
    return meta
