"""Sandbox images: recipes in ``sandboxes/<name>/``, tagged by a content hash, built offline.

``sandboxes/base/`` is built by its ``build.sh`` (debootstrap + ``docker import``; no registry is reachable).
Every other folder holding a ``Dockerfile`` is an image built ``FROM`` its *parent* (``ARG BASE``, the
parent's tag): the base, unless a ``FROM`` file in the folder names another recipe (one line, e.g. ``desktop``;
chains are allowed, cycles and unknown names are errors naming the file). A ``requirements.txt`` beside it
is resolved on the host with ``pip download`` into ``wheels/`` of the build context and installed offline
(builds run with network ``none``). A ``debs.txt`` (Debian package names, one per line, ``#`` comments) is
resolved the same way: the host's apt downloads, into ``debs/`` of the context, exactly the closure the
*parent image* lacks (apt reads the parent's ``/var/lib/dpkg/status``, copied out of a created, never started
container; recommends are not followed), and the Dockerfile installs them offline (``apt-get install
--no-install-recommends /tmp/debs/*.deb``). The host needs Debian bookworm's package lists (``apt-get
update``; ``sandboxes/host-setup.sh`` runs it). ``wheels/`` and ``debs/`` always exist in the context, empty
when there is nothing to install. Tags are ``envgym/<name>:<hash>`` where the hash covers the folder's files
except README.md (and, for derived images, the parent's tag), so an unchanged recipe is never rebuilt and a
changed base or parent rebuilds everything on top of it.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from envgym.sandbox.errors import ImageMissing, SandboxError

SANDBOXES = Path(__file__).resolve().parents[2] / "sandboxes"
"""The recipes of a source checkout (editable install); commands take ``--dir`` otherwise."""
REPO = "envgym"


@dataclass(frozen=True)
class Recipe:
    name: str
    path: Path
    tag: str
    parent: str | None = field(default=None, compare=False)
    """The recipe this image is built ``FROM`` (``"base"`` unless a ``FROM`` file says otherwise); None for the base.
    Not compared: the tag already hashes the parent's tag."""

    @property
    def is_base(self) -> bool:
        return self.name == "base"


def folder_listing(folder: Path) -> str:
    """``sha256sum`` lines of the folder's files (sorted, README.md excluded), as base/build.sh makes them."""
    lines = []
    for path in sorted(folder.rglob("*"), key=lambda p: p.relative_to(folder).as_posix().encode()):
        if path.is_file() and path.name != "README.md":
            lines.append(f"{hashlib.sha256(path.read_bytes()).hexdigest()}  ./{path.relative_to(folder).as_posix()}\n")
    return "".join(lines)


def recipe_hash(folder: Path, base_tag: str | None = None) -> str:
    text = folder_listing(folder) if base_tag is None else f"FROM {base_tag}\n{folder_listing(folder)}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def parent_of(folder: Path) -> str:
    """The recipe ``folder`` is built FROM: its ``FROM`` file's one name, else ``"base"``."""
    marker = folder / "FROM"
    if not marker.is_file():
        return "base"
    names = read_list(marker)
    if len(names) != 1:
        raise SandboxError(f"{marker}: line 1: expected one recipe name (a folder of sandboxes/), "
                           f"got {names or 'none'}")
    return names[0]


def recipes(root: Path = SANDBOXES) -> dict[str, Recipe]:
    """Every image recipe under ``root``, each after its parent (the base first)."""
    base_dir = root / "base"
    if not (base_dir / "build.sh").is_file():
        raise SandboxError(f"{root} has no base/build.sh: is this the sandboxes/ folder of an envgym checkout?")
    found = {"base": Recipe("base", base_dir, f"{REPO}/base:{recipe_hash(base_dir)}")}
    folders = {p.name: p for p in sorted(root.iterdir()) if (p / "Dockerfile").is_file()}
    parents = {name: parent_of(folder) for name, folder in folders.items()}

    def resolve(name: str, chain: tuple[str, ...]) -> Recipe:
        if name in found:
            return found[name]
        parent = parents[name]
        if parent == name or parent in chain:
            raise SandboxError(f"{folders[name] / 'FROM'}: line 1: recipes built FROM each other: "
                               f"{' -> '.join((*chain, name, parent))}")
        if parent != "base" and parent not in folders:
            raise SandboxError(f"{folders[name] / 'FROM'}: line 1: no image recipe {parent!r} under {root} "
                               f"(known: {', '.join(['base', *folders])})")
        parent_tag = resolve(parent, (*chain, name)).tag
        found[name] = Recipe(name, folders[name], f"{REPO}/{name}:{recipe_hash(folders[name], parent_tag)}", parent)
        return found[name]

    for name in folders:
        resolve(name, ())
    return found


def tag_for(name: str, root: Path = SANDBOXES) -> str:
    """The current tag of image ``name`` (built or not)."""
    try:
        return recipes(root)[name].tag
    except KeyError:
        raise ImageMissing(f"no image recipe sandboxes/{name}/ (known: {', '.join(recipes(root))})") from None


def _client() -> Any:
    # on first use: callers of tag_for and recipes (families, the plug-in surface) need no engine, asyncio or threads
    from envgym.sandbox.dockerengine import connect

    return connect()


def image_exists(api: Any, tag: str) -> bool:
    """Whether the Docker engine behind ``api`` (a ``docker.APIClient``) holds the image ``tag``."""
    import docker.errors

    try:
        api.inspect_image(tag)
    except docker.errors.ImageNotFound:
        return False
    return True


def build(names: list[str], *, root: Path = SANDBOXES, force: bool = False,
          log: Callable[[str], None] = print) -> list[tuple[str, bool]]:
    """Build the named images (and the base and parents they need); returns (tag, built now?) per image.

    Synchronous: it is the CLI's work (no event loop), a minute for the base and seconds per image.
    """
    known = recipes(root)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ImageMissing(f"no image recipe for {', '.join(unknown)} (known: {', '.join(known)})")
    needed = set()
    for name in names:
        while name is not None and name not in needed:
            needed.add(name)
            name = known[name].parent
    order = [n for n in known if n in needed]  # recipes() lists each recipe after its parent
    api = _client()
    try:
        done = []
        for name in order:
            recipe = known[name]
            if image_exists(api, recipe.tag) and not force:
                done.append((recipe.tag, False))
                continue
            log(f"building {recipe.tag}")
            if recipe.is_base:
                if force:
                    api.remove_image(recipe.tag, force=True)
                subprocess.run(["bash", str(recipe.path / "build.sh")], check=True)
            else:
                _build_derived(api, recipe, known[recipe.parent or "base"].tag, log)
            done.append((recipe.tag, True))
        return done
    finally:
        api.close()


def _build_derived(api: Any, recipe: Recipe, parent_tag: str, log: Callable[[str], None]) -> None:
    with tempfile.TemporaryDirectory(prefix=f"envgym-build-{recipe.name}-") as tmp:
        context = Path(tmp) / "context"
        shutil.copytree(recipe.path, context)
        wheels, debs = context / "wheels", context / "debs"
        wheels.mkdir(exist_ok=True)
        debs.mkdir(exist_ok=True)
        if (context / "requirements.txt").is_file():  # resolved on the host; the build itself has no network
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "-d", str(wheels),
                            "-r", str(context / "requirements.txt"), "pip"], check=True)
        if (context / "debs.txt").is_file():
            status = base_dpkg_status(api, parent_tag, Path(tmp) / "status")
            found = download_debs(read_list(context / "debs.txt"), status, debs)
            log(f"{recipe.name}: {len(found)} Debian packages resolved against {parent_tag}")
        labels = {"envgym.image": recipe.name, "envgym.recipe": recipe.tag.rsplit(":", 1)[1]}
        for chunk in api.build(path=str(context), tag=recipe.tag, buildargs={"BASE": parent_tag}, network_mode="none",
                               rm=True, forcerm=True, labels=labels, decode=True):
            if "error" in chunk:
                raise SandboxError(f"building {recipe.tag} failed: {chunk['error'].strip()}")
            if chunk.get("stream", "").strip():
                log(chunk["stream"].rstrip())


def read_list(path: Path) -> list[str]:
    """The names of a ``debs.txt`` or ``packages.txt``: one per line, blank lines and ``#`` comments skipped."""
    names = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.extend(line.split())
    return names


def apt_download_argv(packages: list[str], status: Path, archives: Path, *, print_only: bool = False) -> list[str]:
    """The host ``apt-get`` call that downloads into ``archives`` what a system with dpkg ``status`` lacks.

    No lock, no cache file and no state of the host's apt is written: its package lists are only read.
    ``print_only``: list the files (``--print-uris``) instead of downloading them.
    """
    return ["apt-get", "install", "--download-only", "--no-install-recommends", "-y", "-q",
            *(["--print-uris"] if print_only else []),
            "-o", f"Dir::State::status={status}", "-o", f"Dir::Cache::archives={archives}",
            "-o", "Dir::Cache::pkgcache=", "-o", "Dir::Cache::srcpkgcache=", "-o", "Debug::NoLocking=1",
            "-o", "APT::Get::AllowUnauthenticated=false", *packages]


def missing_debs(packages: list[str], status: Path) -> list[str]:
    """The package names apt would download for ``packages`` on a system with dpkg ``status`` (nothing is
    downloaded: the host's package lists are read, the network is not used)."""
    with tempfile.TemporaryDirectory(prefix="envgym-apt-") as tmp:
        (Path(tmp) / "partial").mkdir()
        run = subprocess.run(apt_download_argv(packages, status, Path(tmp), print_only=True), capture_output=True,
                             text=True)
    if run.returncode != 0:
        raise SandboxError(f"apt-get could not resolve {' '.join(packages)}: {run.stderr.strip()[-2000:]}")
    return sorted(line.split()[1].split("_", 1)[0] for line in run.stdout.splitlines() if line.startswith("'"))


def base_dpkg_status(api: Any, base_tag: str, dest: Path) -> Path:
    """Copy ``/var/lib/dpkg/status`` out of ``base_tag`` (a created, never started container) to ``dest``; any
    image's, a derived recipe's parent included."""
    container = api.create_container(base_tag, command=["true"], network_disabled=True,
                                     labels={"envgym.image": "build-probe"})["Id"]
    try:
        stream, _ = api.get_archive(container, "/var/lib/dpkg/status")
        data = b"".join(stream)
    finally:
        api.remove_container(container, force=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        member = tar.extractfile("status")
        if member is None:
            raise SandboxError(f"{base_tag} has no /var/lib/dpkg/status")
        dest.write_bytes(member.read())
    return dest


def download_debs(packages: list[str], status: Path, archives: Path) -> list[Path]:
    """Download the closure of ``packages`` missing from dpkg ``status`` into ``archives``; the .deb files."""
    (archives / "partial").mkdir(parents=True, exist_ok=True)
    run = subprocess.run(apt_download_argv(packages, status, archives), capture_output=True, text=True)
    shutil.rmtree(archives / "partial", ignore_errors=True)
    for leftover in ("lock",):
        (archives / leftover).unlink(missing_ok=True)
    if run.returncode != 0:
        hint = (" (the host's package lists may be missing: run `apt-get update`, or sandboxes/host-setup.sh)"
                if "Unable to locate" in run.stderr or "has no installation candidate" in run.stderr else "")
        raise SandboxError(f"apt-get could not resolve {' '.join(packages)}{hint}: {run.stderr.strip()[-2000:]}")
    return sorted(archives.glob("*.deb"))


FAMILY_REPOS = f"{REPO}-"
"""Images a family builds FROM a recipe image are named ``envgym-<family>/...`` (``envgym-mcp/<server>``,
``envgym-swe/<repo>``), their tags hashing the parent's tag: built FROM a parent that is no longer current, such
an image is never asked for again."""


@dataclass(frozen=True)
class StaleImage:
    """A tag ``envgym sandbox gc --images`` removes, or keeps with the reason (``kept``)."""

    tag: str
    reason: str
    kept: str | None = None
    """Why it stays: its image is the parent of an image that stays (the child is built on its layers; Docker
    would only untag it), or removing it failed (a container uses the image), or it is below one that did."""
    ancestors: frozenset[str] = field(default=frozenset(), compare=False, repr=False)
    """The ids of the images below its own: kept with it when its removal fails."""


def stale_images(root: Path = SANDBOXES) -> list[StaleImage]:
    """envgym's image tags that nothing will ask for again, children before their parents (the order to remove
    them in): ``envgym/<name>`` tags that are not the current tag of a recipe under ``root`` (changed, or gone),
    and family images (``envgym-<family>/...``) built FROM such an image. A tag whose image stays the parent of an
    image with a tag that is not stale (a family image of the current recipes, someone's own image) is listed as
    ``kept``: removing the last tag of a parent would fail, and must not take the child's layers."""
    current = {r.tag for r in recipes(root).values()}
    api = _client()
    try:
        images = {i["Id"]: i for i in api.images(all=True)}
    finally:
        api.close()
    tags = {iid: [t for t in i.get("RepoTags") or [] if t != "<none>:<none>"] for iid, i in images.items()}
    children: dict[str, list[str]] = {}
    for iid, image in images.items():
        children.setdefault(image.get("ParentId") or "", []).append(iid)

    def built_from(iid: str) -> str | None:
        """The nearest ancestor image holding an ``envgym/`` tag (what a family image was built FROM)."""
        parent = images[iid].get("ParentId")
        while parent and parent in images:
            if any(t.startswith(f"{REPO}/") for t in tags[parent]):
                return parent
            parent = images[parent].get("ParentId")
        return None

    stale: dict[str, str] = {}  # tag -> reason
    for names in tags.values():
        for tag in names:
            if tag.startswith(f"{REPO}/") and tag not in current:
                stale[tag] = "recipe changed or gone"
    for iid, names in tags.items():
        family = [t for t in names if t.startswith(FAMILY_REPOS)]
        parent = built_from(iid) if family else None
        if parent is not None and not any(t in current for t in tags[parent]):
            for tag in family:
                stale[tag] = f"built FROM {min(tags[parent])}, no longer current"

    def ancestors(iid: str) -> list[str]:
        found, parent = [], images[iid].get("ParentId")
        while parent and parent in images:
            found.append(parent)
            parent = images[parent].get("ParentId")
        return found

    def staying_child(iid: str) -> str | None:
        """A tag that stays on an image below ``iid`` (through untagged layers), if any."""
        pending = list(children.get(iid, ()))
        while pending:
            child = pending.pop()
            staying = [t for t in tags[child] if t not in stale]
            if staying:
                return staying[0]
            pending.extend(children.get(child, ()))
        return None

    found = []
    below = {i: ancestors(i) for i in tags if any(t in stale for t in tags[i])}
    for iid in sorted(below, key=lambda i: (-len(below[i]), min(tags[i]))):
        last = all(t in stale for t in tags[iid])  # else removing the tag only untags the image
        child = staying_child(iid) if last else None
        for tag in sorted(t for t in tags[iid] if t in stale):
            found.append(StaleImage(tag, stale[tag], f"the parent of {child}" if child else None,
                                    frozenset(below[iid])))
    return found


def remove_images(stale: list[StaleImage]) -> list[StaleImage]:
    """Remove the tags of ``stale`` that are not ``kept``, in order (children first); what could not be removed is
    returned as kept, with Docker's reason (a container uses it), and the rest goes on."""
    import docker.errors

    api = _client()
    result, held = [], {}  # image id -> the tag above it that stays
    try:
        for image in stale:
            if image.kept is None:
                try:
                    iid = api.inspect_image(image.tag)["Id"] if held else ""
                    if iid in held:
                        image = replace(image, kept=f"the parent of {held[iid]}, which stays")
                    else:
                        api.remove_image(image.tag)
                except docker.errors.ImageNotFound:
                    pass  # removed by another gc meanwhile
                except docker.errors.APIError as exc:  # a container uses it
                    image = replace(image, kept=str(exc.explanation or exc))
            if image.kept is not None:
                held.update(dict.fromkeys(image.ancestors, image.tag))
            result.append(image)
        return result
    finally:
        api.close()
