"""Repository images: one per (repository, version), built FROM ``envgym/swe-python``, never one per task.

An :class:`ImageSpec` (stored in every task's ``initial_state["image"]``) names what goes in: the repository,
its version, the base commits the image must hold, the pip requirements and the install command. The tag is
``envgym-swe/<owner>__<name>:<hash>`` where the hash covers the spec, the swe-python tag (itself a hash of
``sandboxes/swe-python``) and the Dockerfile template below (:data:`DOCKERFILE`), so a changed recipe gets a
new tag and ``envgym swe build --all`` builds it, while a second
import (or a fresh machine building the same suite) finds the image or rebuilds the same one. (Not under
``envgym/``: ``envgym sandbox gc --images`` removes every ``envgym/`` tag that no ``sandboxes/`` recipe
makes.)

The build, on the host (synchronous: call it from a thread):

* ``/testbed`` gets the repository's git objects (``git clone --no-local --no-checkout``, one pack kept with a
  ``.keep`` file) and no refs, reflog or remote: ``git log --all`` shows no other task's commits and no
  future history; every base commit stays checkout-able by its id. Build artefacts (``*.egg-info``,
  ``__pycache__``, ``.pytest_cache``) are listed in ``.git/info/exclude``.
* the requirements (and any non-setuptools build backend named by the repository's ``pyproject.toml``) are
  fetched as wheels with ``pip wheel`` (cache: ``~/.cache/envgym/wheels``) into the context's ``wheels/``,
  which joins swe-python's ``/wheels``;
* the Dockerfile checks out the first base commit, installs the requirements (``pip install --no-index
  --find-links /wheels REQ...``) and then runs the install command with ``PIP_NO_INDEX=1``
  ``PIP_FIND_LINKS=/wheels``; the build runs with network ``none``. The commits of one image must share
  their environment (layout, pins): :mod:`envgym_swe.environment` tells which do, and the importer never
  puts commits of different environments in one image. The installed tree is also copied to
  ``/opt/envgym/testbed``: containers run with a read-only root and ``/testbed`` on a tmpfs, filled from
  that copy at start (:mod:`envgym_swe.containers`).
* a smoke check then imports the repository's own package in a container of the new image, as the tests
  would (:func:`import_names`); an image where that fails is removed.

A failure says why (:func:`build_failure`, :func:`pip_error`): pip's own ``ERROR`` lines (a requirement no
fetched wheel satisfies, a build that failed), the last lines of the build log, the import error of the
smoke check, and a hint (``-v`` for the whole log, or what would fix it), never only Docker's
``returned a non-zero code: 1``.

(``/etc/hosts`` cannot come from the image: Docker shadows it with an empty file in every container's init
layer. :mod:`envgym_swe.containers` mounts one, read-only.)
"""

from __future__ import annotations

import collections
import hashlib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable
from pathlib import Path

from envgym.plugin import FrozenModel, SandboxError, canonical_json
from envgym.plugin.sandbox import image_exists

WHEEL_CACHE = Path.home() / ".cache" / "envgym" / "wheels"
PARENT = "swe-python"
EXCLUDES = ("*.egg-info/", "__pycache__/", "*.pyc", ".pytest_cache/")
_BUILTIN_BACKEND = {"setuptools", "wheel"}
_EDITABLE_REQUIRES = {"hatchling": ("editables~=0.3",)}
"""What a backend's PEP 660 ``get_requires_for_build_editable`` adds to its ``[build-system] requires`` (hatchling
asks for ``editables`` in every version so far): the install command is an editable install with no index, so
these wheels must be fetched too (attrs' Hatch era: ``No matching distribution found for editables~=0.3``)."""
_IMAGE_PYTEST = "8.3.5"
"""swe-python's pytest (``sandboxes/swe-python/requirements.txt``; envgym_swe.environment.IMAGE_PACKAGES)."""


class ImageSpec(FrozenModel):
    """What a repository image holds; its tag derives from this and the swe-python tag."""

    repo: str
    version: str = "0"
    commits: tuple[str, ...]
    """Base commits the image must hold (sorted); the first is checked out for the install."""
    requirements: tuple[str, ...] = ()
    install: str
    build_requires: tuple[str, ...] = ()
    """Build backends the host fetched besides setuptools/wheel (read from pyproject.toml)."""


DOCKERFILE = (
    "FROM {parent}\n"
    "COPY wheels /wheels/\n"
    "COPY testbed /testbed\n"
    "COPY install.sh /tmp/envgym-install.sh\n"
    "WORKDIR /testbed\n"
    "RUN git checkout -qf --detach {commit} \\\n"
    " && PIP_NO_INDEX=1 PIP_FIND_LINKS=/wheels bash /tmp/envgym-install.sh \\\n"
    " && rm -f /tmp/envgym-install.sh && git reset -q --hard && git clean -fdxq -e '*.egg-info' \\\n"
    " && mkdir -p /opt/envgym && cp -a /testbed /opt/envgym/testbed\n"
    "# install.sh: the requirements, then the install command (envgym_swe.images.install_script)\n")
"""The repository image's recipe (hashed into its tag)."""


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def parent_tag() -> str:
    from envgym.plugin.sandbox import tag_for

    return tag_for(PARENT)


def image_tag(spec: ImageSpec, parent: str | None = None) -> str:
    owner, name = spec.repo.split("/", 1)
    digest = hashlib.sha256(f"{parent or parent_tag()}\n{canonical_json(spec.model_dump(mode='json'))}\n"
                            f"{DOCKERFILE}".encode())
    return f"envgym-swe/{_slug(owner)}__{_slug(name)}:{digest.hexdigest()[:12]}"


def git(repo: Path, *args: str, check: bool = True, input: str | None = None) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, input=input)
    if check and proc.returncode != 0:
        raise SandboxError(f"git {' '.join(args[:3])} in {repo} failed: {proc.stderr.strip()[-500:]}")
    return proc.stdout


def has_commit(repo: Path, commit: str) -> bool:
    return subprocess.run(["git", "-C", str(repo), "cat-file", "-e", f"{commit}^{{commit}}"],
                          capture_output=True).returncode == 0


def build_requires(repo: Path, commits: tuple[str, ...]) -> tuple[str, ...]:
    """``[build-system] requires`` of the repository at each commit, minus setuptools and wheel, plus what the
    backend needs for an editable build (:data:`_EDITABLE_REQUIRES`)."""
    found: set[str] = set()
    for commit in commits:
        text = git(repo, "show", f"{commit}:pyproject.toml", check=False)
        if not text:
            continue
        try:
            requires = tomllib.loads(text).get("build-system", {}).get("requires", [])
        except tomllib.TOMLDecodeError:
            continue
        for req in requires:
            name = re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0].strip().lower().replace("_", "-")
            if name not in _BUILTIN_BACKEND:
                found.add(req)
            found.update(_EDITABLE_REQUIRES.get(name, ()))
    return tuple(sorted(found))


exists = image_exists
"""Whether the engine holds an image (:func:`envgym.plugin.sandbox.image_exists`; the name this module had)."""


def ensure_image(spec: ImageSpec, repo_path: Path | None, *, force: bool = False, nocache: bool = False,
                 log: Callable[[str], None] = lambda _: None) -> tuple[str, bool]:
    """Build the image of ``spec`` unless its tag exists; returns (tag, built now?).

    ``repo_path`` is the local git repository; it is needed only when the image must be built. ``force``
    rebuilds an existing tag; ``nocache`` also ignores Docker's layer cache (a first build, measured).
    """
    from envgym.plugin.sandbox import build_images, connect

    build_images([PARENT], log=log)
    parent = parent_tag()
    tag = image_tag(spec, parent)
    api = connect()
    try:
        if exists(api, tag) and not force:
            return tag, False
        if repo_path is None:
            raise SandboxError(f"image {tag} of {spec.repo} (version {spec.version}) is not built and no local "
                               f"repository was given for it: pass --repo {spec.repo}=PATH")
        with tempfile.TemporaryDirectory(prefix="envgym-swe-build-") as tmp:
            context = Path(tmp)
            _prepare_context(spec, Path(repo_path), context, parent, log)
            labels = {"envgym.image": "swe", "envgym.swe.repo": spec.repo, "envgym.swe.version": spec.version}
            lines: collections.deque[str] = collections.deque(maxlen=400)
            for chunk in api.build(path=str(context), tag=tag, network_mode="none", rm=True, forcerm=True,
                                   labels=labels, decode=True, nocache=nocache):
                if "error" in chunk:
                    raise SandboxError(build_failure(tag, chunk["error"], list(lines)))
                if chunk.get("stream", "").strip():
                    lines.extend(chunk["stream"].rstrip().splitlines())
                    log(chunk["stream"].rstrip())
        names = import_names(Path(repo_path), spec.commits[0], spec.repo)
        problem = smoke_check(tag, names)
        if problem is not None:
            api.remove_image(tag, force=True)
            raise SandboxError(f"image {tag} of {spec.repo} built, but {problem} (the image was removed)\nhint: a "
                               "requirement is missing, or too old or too new for this commit or for pytest "
                               f"{_IMAGE_PYTEST}; the instance's `requirements` (pinned as of the commit's era by "
                               "`envgym swe mine`) name what gets installed")
        return tag, True
    finally:
        api.close()


def install_script(spec: ImageSpec) -> str:
    """The shell script the image build runs in ``/testbed``: the requirements, then the install command."""
    lines = ["set -e"]
    if spec.requirements:
        lines.append("pip install --no-index --find-links /wheels " + shlex.join(spec.requirements))
    lines.append(spec.install)
    return "\n".join(lines) + "\n"


def _prepare_context(spec: ImageSpec, repo: Path, context: Path, parent: str, log: Callable[[str], None]) -> None:
    testbed = context / "testbed"
    proc = subprocess.run(["git", "clone", "-q", "--no-local", "--no-checkout", str(repo), str(testbed)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SandboxError(f"cannot clone {repo}: {proc.stderr.strip()[-500:]}")
    missing = [c for c in spec.commits if not has_commit(testbed, c)]
    if missing:
        raise SandboxError(f"{repo}: base commit(s) not reachable from any ref: {', '.join(missing)}")
    for pack in (testbed / ".git" / "objects" / "pack").glob("*.pack"):
        pack.with_suffix(".keep").write_text("envgym: base commits are unreferenced; never drop them\n")
    for ref in git(testbed, "for-each-ref", "--format=%(refname)").split():
        git(testbed, "update-ref", "-d", ref)
    git(testbed, "remote", "remove", "origin", check=False)
    for key, value in (("gc.auto", "0"), ("core.logAllRefUpdates", "false"), ("core.fileMode", "false")):
        git(testbed, "config", key, value)
    shutil.rmtree(testbed / ".git" / "logs", ignore_errors=True)
    (testbed / ".git" / "info").mkdir(exist_ok=True)
    (testbed / ".git" / "info" / "exclude").write_text("\n".join(EXCLUDES) + "\n")
    wheels = context / "wheels"
    wheels.mkdir()
    wanted = [*spec.requirements, *spec.build_requires]
    if wanted:  # resolved on the host; the build itself has no network
        log(f"fetching wheels: {' '.join(wanted)}")
        fetch_wheels(wanted, wheels)
    (context / "install.sh").write_text(install_script(spec))
    (context / "Dockerfile").write_text(DOCKERFILE.format(parent=parent, commit=spec.commits[0]))


def pip_error(output: str) -> str:
    """pip's own error lines in ``output`` (``ERROR: …``, ``error: …``, a compiler's), else its last lines."""
    keep = [line.strip() for line in output.splitlines()
            if line.strip().startswith(("ERROR:", "error:", "×", "╰─>")) or ": error: " in line]
    return "\n".join(dict.fromkeys(keep[:12])) or "\n".join(output.strip().splitlines()[-8:])


def build_failure(tag: str, docker_error: str, lines: list[str]) -> str:
    """Why the build of ``tag`` failed, from the build's log (``lines``) rather than Docker's exit line alone."""
    log = "\n".join(lines)
    cause = pip_error(log) if lines else docker_error.strip()
    missing = re.search(r"No matching distribution found for ([^\s]+)", log)
    if missing:
        hint = (f"hint: no wheel of {missing.group(1)} was fetched for the offline install: add it to the instance's "
                "`requirements` (envgym swe mine pins a commit's requirements as of its date)")
    elif "BackendUnavailable" in log or "No module named 'setuptools'" in log:
        hint = "hint: the build backend is not installed: name it in pyproject.toml's [build-system] requires"
    else:
        hint = "hint: -v prints the whole build log"
    tail = "\n".join("  " + line for line in lines[-10:])
    return (f"building {tag} failed: {docker_error.strip()}\n{cause}\nlast lines of the build log:\n{tail}\n"
            f"{hint}")


def import_names(repo: Path, commit: str, repo_name: str) -> tuple[str, ...]:
    """The repository's own top-level package to import in a smoke check: the package or module named like the
    repository (``psf/requests`` -> ``requests``), at the top or under ``src/``; else the one package there is
    besides tests and docs; else none (nothing is checked)."""
    names = git(repo, "ls-tree", "--name-only", commit, check=False).split()
    if "src" in names:
        names += git(repo, "ls-tree", "--name-only", commit, "src/", check=False).split()
    inits = [f"{n}/__init__.py" for n in names if "." not in n.rsplit("/", 1)[-1]]
    found = set(git(repo, "ls-tree", "--name-only", commit, "--", *inits, check=False).split()) if inits else set()
    packages = {p.split("/")[-2] for p in found}
    modules = {n.rsplit("/", 1)[-1][:-3] for n in names if n.endswith(".py") and n.rsplit("/", 1)[-1] not in
               ("setup.py", "conftest.py", "noxfile.py", "tasks.py")}
    want = repo_name.rsplit("/", 1)[-1].lower().replace("-", "_").replace(".", "_")
    for candidate in (want, want.removeprefix("python_"), want.removeprefix("py")):
        if candidate in packages or candidate in modules:
            return (candidate,)
    others = sorted(p for p in packages if p.isidentifier() and p.lower() not in
                    {"test", "tests", "testing", "docs", "doc", "examples", "benchmarks", "scripts", "tools"})
    return (others[0],) if len(others) == 1 else ()


def smoke_check(tag: str, names: tuple[str, ...]) -> str | None:
    """In ``/testbed`` of a fresh container of ``tag`` (network none): import ``names``, then start pytest with the
    plugins the requirements installed (``pytest --version``); what failed and its last lines, or None."""
    import asyncio

    from envgym_swe.containers import PROFILE, WORKDIR, SweSandbox

    async def run() -> str | None:
        sandbox = SweSandbox(tag, PROFILE)
        await sandbox.start()
        try:
            checks = [("`pytest --version`", ["python3", "-m", "pytest", "--version", "-p", "no:cacheprovider"])]
            if names:
                code = "; ".join(f"import {n}" for n in names)
                checks.insert(0, (f"`import {', '.join(names)}`", ["python3", "-c", code]))
            for what, argv in checks:
                result = await sandbox.exec(argv, timeout=120, max_output=1 << 15, cwd=WORKDIR)
                if result.exit_code != 0:
                    tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-6:])
                    return f"{what} fails in it:\n{tail}\n"
        finally:
            await sandbox.stop()
        return None

    return asyncio.run(run())


def fetch_wheels(requirements: list[str] | tuple[str, ...], into: Path, *, deps: bool = True) -> None:
    """Wheels of ``requirements`` (and their dependencies unless ``deps`` is false) in ``into``, fetched or built on
    the host by ``pip wheel`` through :data:`WHEEL_CACHE`; SandboxError with pip's own error lines and a hint
    (:func:`failed_build` names the package whose build failed)."""
    WHEEL_CACHE.mkdir(parents=True, exist_ok=True)
    into.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", *([] if deps else ["--no-deps"]), "--wheel-dir",
                           str(into), "--find-links", str(WHEEL_CACHE), *requirements], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SandboxError(f"fetching the wheels on the host (pip wheel {' '.join(requirements)}) failed:\n"
                           f"{pip_error(proc.stderr)}\nhint: a requirement that names no release on the index, "
                           "or an sdist that does not build for the image's Python (a C extension older than "
                           "it): pin a version that does")
    if into.resolve() != WHEEL_CACHE.resolve():
        for wheel in into.glob("*.whl"):
            if not (WHEEL_CACHE / wheel.name).exists():
                shutil.copy2(wheel, WHEEL_CACHE / wheel.name)


def failed_build(message: str) -> str | None:
    """The package whose wheel did not build, from pip's output (``Failed building wheel for X``)."""
    found = re.findall(r"Failed building wheel for ([A-Za-z0-9_.\-]+)", message)
    return found[-1].lower() if found else None


def cached_wheels() -> set[tuple[str, str]]:
    """(normalised name, version) of every wheel in :data:`WHEEL_CACHE`."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    found = set()
    for wheel in WHEEL_CACHE.glob("*.whl"):
        try:
            name, version, _, _ = parse_wheel_filename(wheel.name)
        except (InvalidWheelFilename, ValueError):
            continue
        found.add((str(name), str(version)))
    return found
