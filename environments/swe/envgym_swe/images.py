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

(``/etc/hosts`` cannot come from the image: Docker shadows it with an empty file in every container's init
layer. :mod:`envgym_swe.containers` mounts one, read-only.)
"""

from __future__ import annotations

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
from typing import Any

from envgym.plugin import FrozenModel, SandboxError, canonical_json

WHEEL_CACHE = Path.home() / ".cache" / "envgym" / "wheels"
PARENT = "swe-python"
EXCLUDES = ("*.egg-info/", "__pycache__/", "*.pyc", ".pytest_cache/")
_BUILTIN_BACKEND = {"setuptools", "wheel"}


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
    """``[build-system] requires`` of the repository at each commit, minus setuptools and wheel."""
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
    return tuple(sorted(found))


def exists(api: Any, tag: str) -> bool:
    import docker.errors

    try:
        api.inspect_image(tag)
    except docker.errors.ImageNotFound:
        return False
    return True


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
            for chunk in api.build(path=str(context), tag=tag, network_mode="none", rm=True, forcerm=True,
                                   labels=labels, decode=True, nocache=nocache):
                if "error" in chunk:
                    raise SandboxError(f"building {tag} failed: {chunk['error'].strip()}")
                if chunk.get("stream", "").strip():
                    log(chunk["stream"].rstrip())
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
        WHEEL_CACHE.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--wheel-dir", str(wheels),
                               "--find-links", str(WHEEL_CACHE), *wanted], capture_output=True, text=True)
        if proc.returncode != 0:
            raise SandboxError(f"pip wheel {' '.join(wanted)} failed: {proc.stderr.strip()[-800:]}")
        for wheel in wheels.glob("*.whl"):
            if not (WHEEL_CACHE / wheel.name).exists():
                shutil.copy2(wheel, WHEEL_CACHE / wheel.name)
    (context / "install.sh").write_text(install_script(spec))
    (context / "Dockerfile").write_text(DOCKERFILE.format(parent=parent, commit=spec.commits[0]))
