"""Where a command writes: an output folder or file named by a flag (``--out``), made ready before any work.

:func:`output_dir` creates the folder (and its parents) and proves it writable by creating a file in it;
:func:`output_file` does that for a file's folder and refuses a path that is a folder. Anything in the way
(the path or one of its parents is a file, a place nothing can be created in such as ``/proc``, no
permission, a read-only file system, a name too long) is one :class:`~envgym.errors.SpecError` naming the
flag, the path and why, which the CLI prints as one line and exit 2; never an ``OSError`` with a traceback.
Every command with an output flag goes through here (``envgym eval``, ``leaderboard build``, ``train``,
plug-ins' through :mod:`envgym.cli`), as does :func:`envgym.eval.evaluate` for its run folder.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from envgym.errors import SpecError


def output_dir(path: str | os.PathLike[str], flag: str = "--out", *, create: bool = True) -> Path:
    """``path`` as a folder that exists and can be written (it may hold an earlier run: resume).

    ``create=False`` only proves it could be: the folders made for the proof are removed again (for a command
    that may end with nothing to write and should then leave nothing behind)."""
    folder = Path(path)
    made: list[Path] = []
    try:
        if folder.exists() and not folder.is_dir():
            raise SpecError(f"{flag} {path}: exists and is not a directory")
        made = [p for p in (folder, *folder.parents) if not p.exists()]
        folder.mkdir(parents=True, exist_ok=True)
        _probe(folder)
    except OSError as exc:
        raise SpecError(f"{flag} {path}: {_why(folder, exc)}") from None
    finally:
        for made_here in made if not create else ():  # deepest first
            with contextlib.suppress(OSError):
                made_here.rmdir()
    return folder


def output_file(path: str | os.PathLike[str], flag: str = "--out") -> Path:
    """``path`` as a file that can be written: its folder exists and is writable, and it is no folder."""
    file = Path(path)
    try:
        if file.is_dir():
            raise SpecError(f"{flag} {path}: is a directory, not a file")
        file.parent.mkdir(parents=True, exist_ok=True)
        _probe(file.parent)
    except OSError as exc:
        raise SpecError(f"{flag} {path}: {_why(file.parent, exc)}") from None
    return file


def _probe(folder: Path) -> None:
    """Create and remove a file in ``folder``: the only test that holds for root and for odd file systems
    (``os.access`` says yes to root in ``/proc``, where nothing can be created)."""
    import tempfile

    with tempfile.TemporaryFile(dir=folder):
        pass


def _why(folder: Path, exc: OSError) -> str:
    if exc.errno in (errno.ENOTDIR, errno.EEXIST):  # a file where a folder of the path must be
        for part in (folder, *folder.parents):
            try:
                if part.exists() and not part.is_dir():
                    return f"{part} is a file, not a directory"
            except OSError:
                continue
    return f"cannot write there ({exc.strerror or exc})"
