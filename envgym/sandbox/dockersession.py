"""The persistent session of a Docker sandbox and its channels: long-lived processes spoken to in JSON lines.

Each helper (:mod:`envgym.sandbox.incontainer` ``serve``) is a ``docker exec -u USER`` kept open for the
sandbox's life (with all capabilities dropped a helper cannot switch users itself) and started on first
use. Its first line is a hello naming its pid (spared by timeout kills); every line carries the container's
boot clock, from which the sandbox keeps a lower bound of its offset to the host's monotonic clock.
Requests to one helper are serialised; an answer is due by the request's timeout plus
:data:`SESSION_GRACE_S`, after which a running container means :class:`ExecTimeout` and a dead one
:class:`SandboxCrashed`. No reply is trusted to carry a key: a missing one reads as its default, never as a
``KeyError``.

A *channel* (:meth:`~envgym.sandbox.base.Sandbox.channel`) is the same machinery for any program that speaks
the protocol (hello first, then one JSON line answered per JSON line): a :class:`Helper` started with the
caller's argv, user and environment, whose replies are returned as they are (``ok`` or not), its pid spared by
timeout kills like the session's.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import secrets
import struct
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, Protocol

import envgym.sandbox.incontainer as incontainer
from envgym.sandbox.base import DEFAULT_MAX_OUTPUT, DEFAULT_TIMEOUT, Command, ExecResult
from envgym.sandbox.dockerengine import DockerEngine
from envgym.sandbox.errors import ChannelClosed, ExecTimeout, SandboxCrashed, SandboxError, SandboxFileNotFound
from envgym.sandbox.profile import SandboxProfile

HELPER = Path(incontainer.__file__).read_text()
SESSION_GRACE_S = 5.0


async def frames(reader: asyncio.StreamReader) -> AsyncIterator[tuple[int, bytes]]:
    """Demultiplex Docker's stdio stream: (1 = stdout | 2 = stderr, bytes) until EOF."""
    while True:
        try:
            header = await reader.readexactly(8)
        except asyncio.IncompleteReadError:
            return
        stream, size = struct.unpack(">BxxxL", header)
        try:
            yield stream, await reader.readexactly(size)
        except asyncio.IncompleteReadError as exc:
            yield stream, exc.partial
            return


def close_writer(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(Exception):
        writer.close()


class DockerHost(Protocol):
    """What a session reads and sets of its sandbox, a :class:`~envgym.sandbox.docker.DockerSandbox` (which
    builds its session, so this module names the friend's state it shares rather than importing it)."""

    id: str
    profile: SandboxProfile
    engine: DockerEngine
    helper_pids: set[int]
    _oom_seen: int
    _clock_offset_ns: int | None

    def watched_mounts(self) -> list[str]: ...

    def _check(self) -> None: ...

    def _forget_channel(self, channel: Helper) -> None: ...

    async def _status(self, *, settle: float = 0.0) -> str: ...

    async def _crashed(self, during: str) -> SandboxCrashed: ...

    async def _create_exec(self, argv: list[str], *, deadline: float, stdin: bool = False, **kwargs: Any) -> str: ...


class DockerSession:
    """The persistent session: one helper per user (``docker exec -u``; with all capabilities dropped a
    helper cannot switch users itself), each started on first use and kept for the sandbox's life."""

    def __init__(self, sandbox: DockerHost) -> None:
        self._sb = sandbox
        self._helpers: dict[str, Helper] = {}

    def _helper(self, user: str | None) -> Helper:
        key = user or ""
        if key not in self._helpers:
            self._helpers[key] = Helper(self._sb, key)
        return self._helpers[key]

    def idle_helper(self, user: str) -> Helper | None:
        """``user``'s helper when it is open and not answering a request (usable at once)."""
        helper = self._helpers.get(user)
        return helper if helper is not None and helper.is_open and not helper.busy else None

    async def open(self, timeout: float = 60) -> None:  # noqa: ASYNC109 - how long the helper may take to start
        """Start the default user's helper now (a pool does this before handing a sandbox out)."""
        await self._helper(None).open(timeout)

    async def close(self) -> None:
        for helper in self._helpers.values():
            await helper.close()

    async def call(self, request: dict[str, Any], *, timeout: float, user: str | None = None) -> dict[str, Any]:  # noqa: ASYNC109 - the command's own deadline
        return await self._helper(user).call(request, timeout=timeout)

    async def exec(self, cmd: Command, *, timeout: float = DEFAULT_TIMEOUT, max_output: int = DEFAULT_MAX_OUTPUT,  # noqa: ASYNC109 - the command's own deadline
                   cwd: str | None = None, env: Mapping[str, str] | None = None,
                   user: str | None = None) -> ExecResult:
        start = time.monotonic()
        reply = await self.call({"op": "run", "cmd": cmd if isinstance(cmd, str) else list(cmd),
                                 "token": secrets.token_hex(8), "timeout": timeout, "max_output": max_output,
                                 "cwd": cwd or self._sb.profile.workdir, "env": dict(env or {}),
                                 "keep": sorted(self._sb.helper_pids), "watch": self._sb.watched_mounts()},
                                timeout=timeout, user=user)
        # .get: a reply from a helper of an older envgym, or one cut short, must not KeyError the host
        self._sb._oom_seen = max(self._sb._oom_seen, int(reply.get("oom_count") or 0))
        return ExecResult(exit_code=reply.get("exit_code"),
                          stdout=base64.b64decode(reply.get("stdout", "")).decode(errors="replace"),
                          stderr=base64.b64decode(reply.get("stderr", "")).decode(errors="replace"),
                          truncated=bool(reply.get("truncated")), timed_out=bool(reply.get("timed_out")),
                          oom_killed=bool(reply.get("oom_killed")), disk_full=bool(reply.get("disk_full")),
                          duration_s=time.monotonic() - start)


class Helper:
    """One helper process in the container, spoken to in JSON lines; its requests are serialised.

    ``argv`` (default: the session helper) is started as ``user`` with ``env`` added to the container's
    environment; it must print ``{"hello": <pid>}`` first. A channel (``argv`` given) returns every reply as
    it is and raises :class:`ChannelClosed` when its process has ended while the container runs, then on every
    later call (a channel is never restarted behind its caller's back; the session helper is).
    """

    def __init__(self, sandbox: DockerHost, user: str, argv: list[str] | None = None,
                 env: Mapping[str, str] | None = None, cwd: str | None = None) -> None:
        self._sb, self._user = sandbox, user
        self._argv = argv or ["python3", "-u", "-c", HELPER, "serve"]
        self._is_channel = argv is not None
        self._env = dict(env or {})
        self._cwd = cwd
        self._closed = False
        self._lock = asyncio.Lock()
        self._conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._lines: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._pump: asyncio.Task[None] | None = None
        self._stderr = bytearray()
        self.pid: int | None = None
        self._arrived_ns = 0

    @property
    def is_open(self) -> bool:
        return self._conn is not None

    @property
    def busy(self) -> bool:
        return self._lock.locked()

    async def open(self, timeout: float = 60) -> None:  # noqa: ASYNC109 - how long the helper may take to start
        async with self._lock:
            await self._ensure(time.monotonic() + timeout)

    async def _ensure(self, deadline: float) -> asyncio.StreamWriter:
        if self._conn is not None:
            return self._conn[1]
        if self._closed:
            raise ChannelClosed(f"{self._sb.id}: channel {self._argv[:3]} was closed")
        extra: dict[str, Any] = {}
        if self._env:
            extra["environment"] = [f"{k}={v}" for k, v in self._env.items()]
        if self._cwd:
            extra["workdir"] = self._cwd
        exec_id = await self._sb._create_exec(self._argv, deadline=deadline, stdin=True, user=self._user, **extra)
        import docker.errors

        try:
            reader, writer = await self._sb.engine.hijack(exec_id)
        except docker.errors.APIError as exc:  # created while running, dead before it could start
            if "is not running" not in str(exc.explanation):
                raise SandboxError(f"docker exec start failed: {exc.explanation}") from None
            raise await self._sb._crashed("died before the session could start") from None
        self._conn = (reader, writer)
        self._lines = asyncio.Queue()
        self._pump = asyncio.ensure_future(self._read_lines(reader, self._lines))
        hello = await self._reply(await self._answer(deadline))
        if not isinstance(hello.get("hello"), int):
            await self._drop()
            raise SandboxError(f"{self._sb.id}: {self._argv[:3]} did not say hello: {str(hello)[:300]}")
        self.pid = int(hello["hello"])
        self._sb.helper_pids.add(self.pid)
        return writer

    def _learn_clock(self, reply: dict[str, Any]) -> None:
        """Every reply carries the container's boot clock as it was written: read before the line arrived, so
        clock minus arrival is a lower bound of the offset (errs early: the timeout kill may take a process
        started a moment before the command, never spare one of the command's); the best bound is kept."""
        if isinstance(reply.get("boottime_ns"), int):
            offset = reply["boottime_ns"] - self._arrived_ns
            known = self._sb._clock_offset_ns
            self._sb._clock_offset_ns = offset if known is None else max(known, offset)

    async def _read_lines(self, reader: asyncio.StreamReader, lines: asyncio.Queue[bytes | None]) -> None:
        pending = b""
        try:
            async for stream, data in frames(reader):
                if stream == 2:
                    self._stderr = (self._stderr + data)[-4096:]
                if stream != 1:
                    continue
                pending += data
                *complete, pending = pending.split(b"\n")
                for line in complete:
                    self._arrived_ns = time.monotonic_ns()
                    lines.put_nowait(line)
        finally:
            lines.put_nowait(None)

    async def _drop(self) -> None:
        self._closed = self._is_channel  # a channel is one process: once its connection is gone, it stays gone
        if self._pump is not None:
            self._pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pump
        if self._conn is not None:
            close_writer(self._conn[1])
        self._conn = self._pump = None
        if self.pid is not None:
            self._sb.helper_pids.discard(self.pid)
            self.pid = None

    async def close(self) -> None:
        """End the connection (the process sees EOF on stdin); a closed channel is not reopened."""
        await self._drop()
        self._sb._forget_channel(self)

    async def request(self, request: Mapping[str, Any], *, timeout: float) -> dict[str, Any]:  # noqa: ASYNC109 - the request's own deadline
        """Send one request and return its reply as the process wrote it (``ok`` true or not)."""
        deadline = time.monotonic() + timeout
        async with self._lock:
            self._sb._check()
            writer = await self._ensure(deadline)
            writer.write(json.dumps(request).encode() + b"\n")
            return await self._reply(await self._answer(deadline))

    async def call(self, request: dict[str, Any], *, timeout: float) -> dict[str, Any]:  # noqa: ASYNC109 - the command's own deadline
        """Send one request; its answer is due by ``timeout`` (+ a grace for the helper's own work).

        For a channel this is :meth:`request`; for the session helper a reply that is not ``ok`` raises.
        """
        reply = await self.request(request, timeout=timeout)
        if self._is_channel:
            return reply
        if not reply.get("ok"):
            kind, message = reply.get("kind", "?"), reply.get("error", str(reply)[:200])
            if kind in ("FileNotFoundError", "NotADirectoryError"):
                raise SandboxFileNotFound(f"{self._sb.id}: {message}")
            raise SandboxError(f"{self._sb.id}: {request['op']} failed: {kind}: {message}")
        return reply

    async def _reply(self, line: bytes) -> dict[str, Any]:
        """The JSON object in ``line``; anything else ends the helper (it may be the engine's dying words)."""
        with contextlib.suppress(ValueError):
            reply = json.loads(line)
            if isinstance(reply, dict):
                self._learn_clock(reply)
                return reply
        await self._drop()
        if await self._sb._status(settle=2.0) != "running":
            raise await self._sb._crashed("died while the session started")
        raise SandboxError(f"{self._sb.id}: {self._argv[:3]} answered garbage: {line[:200]!r} "
                           f"{self._stderr.decode(errors='replace')[-500:]}")

    async def _answer(self, deadline: float) -> bytes:
        grace_end = deadline + SESSION_GRACE_S
        checked = False
        while True:
            wait = (deadline + 0.5 if not checked else grace_end) - time.monotonic()
            try:
                line = await asyncio.wait_for(self._lines.get(), max(wait, 0))
            except TimeoutError:
                status = await self._sb._status()
                if status not in ("running", "paused"):
                    await self._drop()
                    raise await self._sb._crashed("died during a session command") from None
                if status == "paused" or checked:
                    await self._drop()  # the helper may answer late; that answer must not pair with a new request
                    raise ExecTimeout(f"container {self._sb.id} is {status}: no answer by the deadline") from None
                checked = True
                continue
            if line is None:
                await self._drop()
                if await self._sb._status(settle=2.0) != "running":
                    raise await self._sb._crashed("died during a session command")
                kind = ChannelClosed if self._is_channel else SandboxError
                raise kind(f"{self._sb.id}: {self._argv[:3]} ended (was it killed from inside?): "
                           f"{self._stderr.decode(errors='replace')[-500:]}")
            return line
