"""Archives copied *out* of a sandbox, validated member by member and extracted without following links.

Everything inside a sandbox is the agent's, including the program that builds the archive, so an archive is
hostile until proven otherwise. :func:`extract` refuses (:class:`UnsafeArchive`) the whole archive when any
member

* has an absolute name, a ``..`` component, a NUL, or lies outside the single top-level entry;
* is a device node, FIFO or anything but a file, directory, symlink or hard link;
* is a symlink whose target is absolute or leaves the top-level entry: targets are resolved inside the
  entry only (``..`` above it is refused, even when it comes back down by the entry's own name, because the
  entry is renamed to the destination), following the archive's other symlinks the way the kernel would, so
  ``d/l -> ..`` plus ``x -> d/l/../..`` is refused too; a top-level symlink is refused (its target would be
  read next to the destination);
* is a hard link to anything but an earlier file member; or sits below a symlink member (``link/x``);
* repeats an earlier name, or takes the total past ``max_bytes``.

Extraction then writes into a fresh directory with ``O_NOFOLLOW | O_EXCL``, drops set-id bits, copies
hard-linked content instead of linking, and finally renames the top-level entry to the destination.

Bytes that are not a whole archive (not a tar, a header or a member's data cut short, no end-of-archive block
after the last member: a cut at a member boundary would otherwise read as a smaller tree) raise
:class:`BrokenArchive`, an ``UnsafeArchive``, never ``tarfile.ReadError``; nothing is left at the destination.
Its blame is the rollout stage's (see the class): the archive is built inside the agent's sandbox.
"""

from __future__ import annotations

import io
import os
import posixpath
import shutil
import tarfile
import tempfile
from pathlib import Path

from envgym.sandbox.errors import BrokenArchive, UnsafeArchive

_ALLOWED = {tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE}


def _norm(name: str) -> str:
    return posixpath.normpath(name.removeprefix("./"))


def check_members(members: list[tarfile.TarInfo], *, max_bytes: int) -> str:
    """Validate every member; returns the name of the single top-level entry."""
    if not members:
        raise UnsafeArchive("empty archive")
    names: dict[str, tarfile.TarInfo] = {}
    links: set[str] = set()
    top = _norm(members[0].name).split("/")[0]
    total = 0
    for m in members:
        raw = m.name
        if "\0" in raw or raw.startswith("/") or not raw:
            raise UnsafeArchive(f"member {raw!r}: absolute or malformed name")
        if ".." in raw.split("/"):
            raise UnsafeArchive(f"member {raw!r}: '..' in its path")
        name = _norm(raw)
        if name in ("", ".") or name.split("/")[0] != top:
            raise UnsafeArchive(f"member {raw!r}: outside the top-level entry {top!r}")
        if m.type not in _ALLOWED:
            raise UnsafeArchive(f"member {raw!r}: type {m.type!r} (devices, FIFOs and others are refused)")
        if name in names:
            raise UnsafeArchive(f"member {raw!r}: appears twice")
        parts = name.split("/")
        for i in range(1, len(parts)):
            if "/".join(parts[:i]) in links:
                raise UnsafeArchive(f"member {raw!r}: lies below the symlink {'/'.join(parts[:i])!r}")
        if m.issym():
            target = m.linkname
            if not target or target.startswith("/") or "\0" in target:
                raise UnsafeArchive(f"symlink {raw!r} -> {target!r}: absolute or empty target")
            if name == top:
                raise UnsafeArchive(f"symlink {raw!r} -> {target!r}: the copied entry itself is a link")
            links.add(name)
        elif m.islnk():
            target = _norm(m.linkname)
            if target not in names or not names[target].isreg():
                raise UnsafeArchive(f"hard link {raw!r} -> {m.linkname!r}: not an earlier file of the archive")
        total += m.size if m.isreg() else 0
        if total > max_bytes:
            raise UnsafeArchive(f"archive holds more than {max_bytes} bytes")
        names[name] = m
    for name in names:  # a symlink member named before a member below it
        parts = name.split("/")
        if any("/".join(parts[:i]) in links for i in range(1, len(parts))):
            raise UnsafeArchive(f"member {name!r}: lies below a symlink")
    inside = {tuple(name.split("/")[1:]): names[name].linkname for name in links}
    for where, target in inside.items():
        if _resolve(inside, where[:-1], target, 0) is None:
            raise UnsafeArchive(f"symlink {'/'.join((top, *where))!r} -> {target!r}: points outside the copied "
                                "tree (as it will lie at the destination)")
    return top


def _resolve(links: dict[tuple[str, ...], str], where: tuple[str, ...], target: str, depth: int
             ) -> tuple[str, ...] | None:
    """Where ``target``, read in the directory ``where`` (parts below the top entry), leads; None if it leaves.

    Symlinks of the archive met on the way are followed as the kernel would (a ``..`` after one climbs from
    its target), up to 40 deep like the kernel's own limit.
    """
    if depth > 40:
        return None
    parts = list(where)
    for comp in target.split("/"):
        if comp in ("", "."):
            continue
        if comp == "..":
            if not parts:
                return None  # above the top entry, which is renamed to the destination: outside it
            parts.pop()
            continue
        parts.append(comp)
        if tuple(parts) in links:
            resolved = _resolve(links, tuple(parts[:-1]), links[tuple(parts)], depth + 1)
            if resolved is None:
                return None
            parts = list(resolved)
    return tuple(parts)


def _write_file(path: Path, source: io.BufferedReader | None, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, (mode & 0o777) | 0o600)
    with os.fdopen(fd, "wb") as f:
        if source is not None:
            shutil.copyfileobj(source, f)


def extract(data: bytes, dest: Path, *, max_bytes: int) -> Path:
    """Validate the tar ``data`` and materialise its single top-level entry as ``dest``."""
    try:
        return _extract(data, dest, max_bytes=max_bytes)
    except (tarfile.TarError, EOFError) as exc:  # a header or a member's data cut short, or no tar at all
        raise BrokenArchive(f"copy-out got no whole tar archive ({len(data)} bytes): {exc}") from None


def _extract(data: bytes, dest: Path, *, max_bytes: int) -> Path:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        members = tar.getmembers()
        # tarfile stops quietly at a header it cannot read after the first; a whole archive has the
        # end-of-archive block (zeros) there
        if members and data[tar.offset:tar.offset + tarfile.BLOCKSIZE] != tarfile.NUL * tarfile.BLOCKSIZE:
            raise BrokenArchive(f"copy-out got no whole tar archive ({len(data)} bytes): cut short or garbled "
                                f"after member {members[-1].name!r}")
        top = check_members(members, max_bytes=max_bytes)
        dest.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".envgym-copy-", dir=dest.parent))
        try:
            by_name = {_norm(m.name): m for m in members}
            for m in members:
                path = staging / _norm(m.name)
                for parent in reversed(path.relative_to(staging).parents[:-1]):
                    p = staging / parent
                    if not p.exists():
                        p.mkdir(0o755)
                    elif p.is_symlink() or not p.is_dir():
                        raise UnsafeArchive(f"member {m.name!r}: parent {parent} is not a directory")
                if m.isdir():
                    if not path.exists():
                        path.mkdir((m.mode & 0o777) | 0o700)
                elif m.issym():
                    os.symlink(m.linkname, path)
                elif m.islnk():
                    _write_file(path, tar.extractfile(by_name[_norm(m.linkname)]), m.mode)
                else:
                    _write_file(path, tar.extractfile(m), m.mode)
            os.rename(staging / top, dest)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return dest
