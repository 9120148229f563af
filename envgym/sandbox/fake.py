"""The fake backend: an in-memory sandbox for unit tests of code that uses sandboxes.

Files live in a dict; commands go to a ``handler(cmd, cwd, env, user)`` returning an :class:`ExecResult`, a
``(exit_code, stdout)`` pair or a string (exit code 0). The default handler knows ``echo``, ``cat``,
``true``, ``false`` and ``sleep`` (which times out when longer than the timeout, as a real one would);
anything else exits 127. Every command is recorded in ``calls``. ``crash()`` makes the next operation raise
:class:`SandboxCrashed` (and ``alive()`` False), as a container killed under the caller would. Copy-out goes
through the same archive validation as the real backends.
"""

from __future__ import annotations

import asyncio
import io
import posixpath
import shlex
import tarfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import envgym.sandbox.tarsafe as tarsafe
from envgym.sandbox.base import Command, ExecResult, Sandbox, SandboxState
from envgym.sandbox.errors import SandboxCrashed, SandboxError, SandboxFileNotFound

Handler = Callable[[str, str, Mapping[str, str], str | None], ExecResult | tuple[int, str] | str]

_started = 0


class FakeSandbox(Sandbox):
    backend = "fake"

    def __init__(self, handler: Handler | None = None, *, files: Mapping[str, bytes | str] | None = None,
                 symlinks: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self.handler = handler or self._default
        self.files = {posixpath.normpath(k): v.encode() if isinstance(v, str) else v for k, v in (files or {}).items()}
        self.symlinks = dict(symlinks or {})
        """Link path -> target, as an agent could plant them; copy-out must refuse those leading outside."""
        self.calls: list[str] = []
        self._crash = False

    def crash(self) -> None:
        self._crash = True

    async def _alive(self) -> bool:
        return not self._crash

    def _check(self) -> None:
        super()._check()
        if self._crash:
            self.state = SandboxState.FAILED
            raise SandboxCrashed(f"fake sandbox {self.id} crashed")

    async def _start(self) -> None:
        global _started
        _started += 1
        self.id = f"fake-{_started}"

    async def _stop(self) -> None:
        self.files.clear()

    def _default(self, cmd: str, cwd: str, env: Mapping[str, str], user: str | None) -> tuple[int, str]:
        argv = shlex.split(cmd)
        match argv:
            case ["echo", *words]:
                return 0, " ".join(words) + "\n"
            case ["cat", path]:
                if posixpath.normpath(posixpath.join(cwd, path)) in self.files:
                    return 0, self.files[posixpath.normpath(posixpath.join(cwd, path))].decode()
                return 1, ""
            case ["true"]:
                return 0, ""
            case ["false"]:
                return 1, ""
        return 127, ""

    async def _exec(self, cmd: Command, *, timeout: float, max_output: int, cwd: str | None, env: dict[str, str],  # noqa: ASYNC109 - the command's own deadline
                    user: str | None) -> ExecResult:
        text = cmd if isinstance(cmd, str) else shlex.join(cmd)
        self.calls.append(text)
        argv = shlex.split(text)
        if argv[:1] == ["sleep"] and float(argv[1]) > timeout:
            return ExecResult(exit_code=None, stdout="", stderr="", timed_out=True, duration_s=timeout)
        start = time.monotonic()
        out = self.handler(text, cwd or "/work", env, user)
        if isinstance(out, ExecResult):
            return out
        code, stdout = (0, out) if isinstance(out, str) else out
        data = stdout.encode()
        return ExecResult(exit_code=code, stdout=data[:max_output].decode(errors="replace"), stderr="",
                          truncated=len(data) > max_output, duration_s=time.monotonic() - start)

    def _session(self) -> FakeSandbox:
        return self

    async def open(self) -> None:
        """Session protocol: nothing to open."""

    async def _write(self, path: str, data: bytes, mode: int) -> None:
        self.files[posixpath.normpath(path)] = data

    async def _read(self, path: str, max_bytes: int) -> bytes:
        try:
            data = self.files[posixpath.normpath(path)]
        except KeyError:
            raise SandboxFileNotFound(f"{path}: not found in the sandbox") from None
        if len(data) > max_bytes:
            raise SandboxError(f"{path} is larger than {max_bytes} bytes")
        return data

    async def _copy_in(self, src: Path, dest: str) -> None:
        def load() -> dict[str, bytes]:
            paths = [src] if src.is_file() else sorted(p for p in src.rglob("*") if p.is_file())
            return {posixpath.join(dest, p.relative_to(src.parent).as_posix()): p.read_bytes() for p in paths}

        self.files.update(await asyncio.to_thread(load))

    async def _copy_out(self, src: str, dest: Path, max_bytes: int) -> None:
        entries = {p: d for p, d in self.files.items() if p == src or p.startswith(src + "/")}
        links = {p: t for p, t in self.symlinks.items() if p == src or p.startswith(src + "/")}
        if not entries and not links:
            raise SandboxFileNotFound(f"{src}: not found in the sandbox")
        top = posixpath.basename(src)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            if src not in entries and src not in links:
                tar.addfile(_dir(top))
            for path, data in sorted(entries.items()):
                info = tarfile.TarInfo(top + path[len(src):])
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            for path, target in sorted(links.items()):
                info = tarfile.TarInfo(top + path[len(src):])
                info.type, info.linkname = tarfile.SYMTYPE, target
                tar.addfile(info)
        await asyncio.to_thread(tarsafe.extract, buf.getvalue(), dest, max_bytes=max_bytes)


def _dir(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode = tarfile.DIRTYPE, 0o755
    return info
