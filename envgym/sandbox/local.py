"""The local backend: commands run as host processes in a temporary directory. NOT a security boundary.

For development without Docker only. It warns (:class:`InsecureSandboxWarning` and a log line) every time
one starts. File paths are mapped under the sandbox's root directory (``/work/a`` -> ``<root>/work/a``),
commands run with that root as their default cwd and ``HOME``, but they see and can change the whole host.
``session`` is ``exec`` (a process start is already cheap).

**Its timeout kill is NOT complete.** On the host there is no PID namespace to sweep (the Docker backend
kills every process started since the command began): a timeout kills the command's process group and what
carries the ``ENVGYM_EXEC`` tag, plus their descendants by parent. A descendant that clears its environment
(``env -i``) *and* re-parents (``setsid`` + double fork) escapes it and keeps running after
``timed_out=True`` and after ``stop`` (which kills the same way and removes the root). **No disk bound
either**: the profile's limits do not apply here; ``disk_full`` is set only when stderr says ENOSPC.
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import posixpath
import secrets
import shutil
import tarfile
import tempfile
import time
import warnings
from pathlib import Path

import envgym.sandbox.incontainer as incontainer
import envgym.sandbox.tarsafe as tarsafe
from envgym.sandbox.base import Command, ExecResult, Sandbox
from envgym.sandbox.errors import BrokenArchive, SandboxError, SandboxFileNotFound

log = logging.getLogger(__name__)


class InsecureSandboxWarning(UserWarning):
    """A sandbox backend that does not isolate commands from the host was started."""


class LocalSandbox(Sandbox):
    backend = "local"
    secure = False

    def __init__(self) -> None:
        super().__init__()
        self.root = Path()
        self._tokens: set[str] = set()

    async def _start(self) -> None:
        message = ("the local sandbox backend runs commands as host processes with your privileges: it is NOT "
                   "isolated; use it only for development, never for untrusted agents (use backend 'docker')")
        warnings.warn(message, InsecureSandboxWarning, stacklevel=3)
        log.warning(message)
        self.root = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="envgym-local-"))
        self.id = self.root.name

    async def _stop(self) -> None:
        for token in self._tokens:
            await asyncio.to_thread(incontainer.kill_tree, token)
        if self.root != Path() and self.root.exists():
            await asyncio.to_thread(shutil.rmtree, self.root, True)

    def _path(self, path: str) -> Path:
        norm = posixpath.normpath("/" + path)  # '..' cannot climb above the root
        return self.root / norm.lstrip("/")

    async def _exec(self, cmd: Command, *, timeout: float, max_output: int, cwd: str | None, env: dict[str, str],  # noqa: ASYNC109 - the command's own deadline
                    user: str | None) -> ExecResult:
        if user not in (None, str(os.getuid())):
            raise SandboxError("the local sandbox runs commands as the current user only")
        token = secrets.token_hex(8)
        self._tokens.add(token)
        argv = ["/bin/sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        workdir = self._path(cwd) if cwd else self.root
        workdir.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=workdir, env={**os.environ, "HOME": str(self.root), **env, incontainer.TAG: token},
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True)
        truncated = False

        async def pump(stream: asyncio.StreamReader | None) -> bytes:
            nonlocal truncated
            buf = bytearray()
            if stream is None:
                return b""
            while chunk := await stream.read(65536):
                room = max_output - len(buf)
                truncated |= len(chunk) > room
                buf += chunk[:max(room, 0)]
            return bytes(buf)

        reads = asyncio.gather(pump(proc.stdout), pump(proc.stderr), proc.wait())
        timed_out = False
        try:
            out, err, code = await asyncio.wait_for(asyncio.shield(reads), timeout)
        except TimeoutError:
            timed_out = True
            await asyncio.to_thread(incontainer.kill_tree, token, group=proc.pid)
            out, err, code = await reads
        return ExecResult(exit_code=None if timed_out else (128 - code if code < 0 else code),
                          stdout=out.decode(errors="replace"), stderr=err.decode(errors="replace"),
                          truncated=truncated, timed_out=timed_out,
                          disk_full=any(w in err for w in incontainer.ENOSPC_WORDS),
                          duration_s=time.monotonic() - start)

    def _session(self) -> LocalSandbox:
        return self

    async def open(self) -> None:
        """Session protocol: nothing to open."""

    async def _write(self, path: str, data: bytes, mode: int) -> None:
        def write() -> None:
            target = self._path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            target.chmod(mode)

        await asyncio.to_thread(write)

    async def _read(self, path: str, max_bytes: int) -> bytes:
        def read() -> bytes:
            try:
                with open(self._path(path), "rb") as f:
                    data = f.read(max_bytes + 1)
            except FileNotFoundError as exc:
                raise SandboxFileNotFound(f"{path}: not found in the sandbox") from exc
            if len(data) > max_bytes:
                raise SandboxError(f"{path} is larger than {max_bytes} bytes")
            return data

        return await asyncio.to_thread(read)

    async def _copy_in(self, src: Path, dest: str) -> None:
        def copy() -> None:
            target = self._path(dest) / src.name
            target.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():
                shutil.copytree(src, target, symlinks=True, dirs_exist_ok=True)
            else:
                shutil.copy2(src, target, follow_symlinks=False)

        await asyncio.to_thread(copy)

    async def _copy_out(self, src: str, dest: Path, max_bytes: int) -> None:
        def copy() -> None:  # through an archive, so the same validation applies as for containers
            source = self._path(src)
            if not source.exists() and not source.is_symlink():
                raise SandboxFileNotFound(f"{src}: not found in the sandbox")
            buf = io.BytesIO()
            try:
                with tarfile.open(fileobj=buf, mode="w") as tar:
                    tar.add(source, arcname=source.name or "root")
            except OSError as exc:  # tarfile's "unexpected end of data": a file shrank while it was read
                kind = BrokenArchive if str(exc) == "unexpected end of data" else SandboxError
                raise kind(f"copy-out of {src}: a file changed or could not be read while it was archived "
                           f"({type(exc).__name__}: {exc})") from None
            tarsafe.extract(buf.getvalue(), dest, max_bytes=max_bytes)

        await asyncio.to_thread(copy)
