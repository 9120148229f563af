"""The Docker backend: one hardened container per sandbox, driven without blocking the event loop.

* Every Docker SDK call runs on a :class:`DockerEngine`'s own thread pool (``max_concurrency`` threads), so
  concurrency is bounded and the loop never waits on a socket. Command output is read from the hijacked
  exec connection with asyncio streams directly: a slow command costs no thread.
* The container is created from :func:`~envgym.sandbox.profile.container_spec` (validated, hardened,
  labelled for the reaper) and removed on ``stop``; nothing is ever pulled: a missing image raises
  :class:`ImageMissing` naming ``envgym sandbox build``.
* ``exec`` is one ``docker exec`` per command; ``session.exec`` goes through the in-container helper
  (:mod:`envgym.sandbox.incontainer`) over one long-lived exec connection. File operations use the session.
* Timeouts kill every process of the container started since the command began (a PID-namespace sweep by
  start time, :func:`~envgym.sandbox.incontainer.kill_since`; envgym's helpers are spared by pid); a container
  that cannot be reached to do so (paused) raises :class:`ExecTimeout` at the deadline; a container that died
  raises :class:`SandboxCrashed`, then and on every later call.
* Disk is bounded (:mod:`~envgym.sandbox.profile`): a writable root gets the storage driver's size limit,
  probed once per engine (:meth:`DockerEngine.disk_quota`), and is refused where there is none; a full
  writable mount after a command sets ``ExecResult.disk_full``.
* A daemon that does not answer raises :class:`DaemonUnavailable` with how to start one.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import json
import secrets
import socket
import struct
import tarfile
import time
from collections.abc import AsyncIterator, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

from envgym.sandbox import incontainer, tarsafe
from envgym.sandbox.base import DEFAULT_MAX_OUTPUT, DEFAULT_TIMEOUT, Command, ExecResult, Sandbox, SandboxState
from envgym.sandbox.errors import (
    START_DOCKER_HINT,
    DaemonUnavailable,
    ExecTimeout,
    ImageMissing,
    SandboxCrashed,
    SandboxError,
    SandboxFileNotFound,
)
from envgym.sandbox.profile import DEFAULT, SandboxProfile, container_spec
from envgym.sandbox.reaper import default_run_id, owner_labels

HELPER = Path(incontainer.__file__).read_text()
KILL_GRACE_S = 10.0
"""How long a timed-out command's tree kill may take before the sandbox is declared unreachable."""
SESSION_GRACE_S = 5.0


def connect(base_url: str | None = None, **kwargs: Any) -> Any:
    """A ``docker.APIClient`` speaking the daemon's API version, or :class:`DaemonUnavailable`."""
    try:
        import docker
    except ImportError as exc:
        raise DaemonUnavailable("the docker backend needs the Docker SDK: pip install 'envgym[docker]'") from exc
    params = docker.utils.kwargs_from_env()
    if base_url:
        params["base_url"] = base_url
    url = params.get("base_url") or "unix:///var/run/docker.sock"
    if url.startswith(("unix://", "/")):  # probe first: the SDK leaks the socket of a failed unix connect
        path = url.removeprefix("unix://")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(path)
            except OSError as exc:
                raise DaemonUnavailable(f"no Docker engine answers at {path} ({exc.strerror}); "
                                        f"{START_DOCKER_HINT}") from None
    api = docker.APIClient(**params, version=docker.constants.DEFAULT_DOCKER_API_VERSION, **kwargs)
    try:
        # What version="auto" does, but closing the client when the daemon is not there (the SDK leaks it).
        api._version = api.version(api_version=False)["ApiVersion"]
    except Exception as exc:
        api.close()
        raise DaemonUnavailable(f"no Docker engine answers ({exc}); {START_DOCKER_HINT}") from None
    return api


async def remove(engine: DockerEngine, container_id: str) -> bool:
    """Force-remove a container, paused or not; False when it was already gone or being removed."""
    import docker.errors

    try:
        # A frozen container cannot take the SIGKILL of a forced removal (the call hangs): thaw it first.
        if (await engine.call("inspect_container", container_id))["State"].get("Paused"):
            with contextlib.suppress(docker.errors.APIError):
                await engine.call("unpause", container_id)
        await engine.call("remove_container", container_id, force=True, v=True)
    except docker.errors.NotFound:
        return False
    except docker.errors.APIError as exc:
        if exc.status_code != 409:  # 409: removal already in progress
            raise
        return False
    return True


class DockerEngine:
    """A Docker API client with a bounded thread pool; ``async with`` closes both."""

    def __init__(self, base_url: str | None = None, *, max_concurrency: int = 8, timeout: float = 120) -> None:
        self._base_url, self._timeout = base_url, timeout
        self._executor = ThreadPoolExecutor(max_workers=max_concurrency, thread_name_prefix="envgym-docker")
        self._max = max_concurrency
        self._api: Any = None
        self._connecting: asyncio.Lock | None = None
        self._quota: bool | None = None
        self._probing: asyncio.Lock | None = None

    async def api(self) -> Any:
        if self._api is None:
            self._connecting = self._connecting or asyncio.Lock()
            async with self._connecting:
                if self._api is None:
                    self._api = await asyncio.get_running_loop().run_in_executor(self._executor, self._connect)
        return self._api

    def _connect(self) -> Any:
        return connect(self._base_url, timeout=self._timeout, max_pool_size=self._max)


    async def disk_quota(self, image: str) -> bool:
        """Whether the engine's storage driver takes a size limit (``--storage-opt size``); probed once.

        overlay2 does only on xfs mounted with ``pquota``; devicemapper, btrfs and zfs do. The probe creates
        (never starts) a container of ``image`` with the option and removes it: the engine's own answer.
        """
        if self._quota is None:
            self._probing = self._probing or asyncio.Lock()
            async with self._probing:
                if self._quota is None:
                    self._quota = await self._probe_quota(image)
        return self._quota

    async def _probe_quota(self, image: str) -> bool:
        import docker.errors

        api = await self.api()
        spec = {"Image": image, "Cmd": ["true"], "Entrypoint": [], "NetworkDisabled": True,
                "Labels": owner_labels(default_run_id(), 60),
                "HostConfig": {"StorageOpt": {"size": "64m"}, "NetworkMode": "none"}}
        try:
            created = await self.run(lambda: api._result(api._post_json(api._url("/containers/create"),
                                                                        data=spec), True))
        except docker.errors.APIError:
            return False  # "--storage-opt is supported only for overlay over xfs with 'pquota' mount option"
        await remove(self, created["Id"])
        return True

    async def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """``APIClient.<method>(*args, **kwargs)`` on the engine's thread pool."""
        api = await self.api()
        return await self.run(getattr(api, method), *args, **kwargs)

    async def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        import requests

        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, partial(fn, *args, **kwargs))
        except requests.exceptions.ConnectionError as exc:
            raise DaemonUnavailable(f"the Docker engine stopped answering ({exc}); {START_DOCKER_HINT}") from None

    async def hijack(self, exec_id: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Start an exec and return its raw, multiplexed stdio connection as asyncio streams."""
        api = await self.api()

        def start() -> Any:
            res = api._post_json(api._url("/exec/{0}/start", exec_id), stream=True,
                                 headers={"Connection": "Upgrade", "Upgrade": "tcp"},
                                 data={"Tty": False, "Detach": False})
            api._raise_for_status(res)
            buffered = res.raw._fp.fp  # http.client read the 101 headers through it: output may sit there
            sock = buffered.raw._sock
            sock.setblocking(False)
            prefix = buffered.peek(1 << 16)  # non-blocking: only what is already buffered
            dup = sock.dup()
            res.close()
            sock.close()
            return dup, prefix

        sock, prefix = await self.run(start)
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 20, loop=loop)
        reader.feed_data(prefix)
        protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
        transport, _ = await loop.create_connection(lambda: protocol, sock=sock)
        return reader, asyncio.StreamWriter(transport, protocol, reader, loop)

    async def close(self) -> None:
        if self._api is not None:
            self._api.close()
            self._api = None
        await asyncio.to_thread(self._executor.shutdown)

    async def __aenter__(self) -> DockerEngine:
        await self.api()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


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


def _close(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(Exception):
        writer.close()


class DockerSandbox(Sandbox):
    """A container started from ``image`` under ``profile``; see the module docstring."""

    backend = "docker"

    def __init__(self, image: str, profile: SandboxProfile = DEFAULT, *, engine: DockerEngine | None = None,
                 run_id: str | None = None, labels: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self.image, self.profile = image, profile
        self.run_id = run_id or default_run_id()
        self._own_engine = engine is None
        self.engine = engine or DockerEngine()
        self._labels = dict(labels or {})
        self._docker_session: DockerSession | None = None
        self._oom_seen = 0
        self._clock_offset_ns: int | None = None
        """Container CLOCK_BOOTTIME minus host monotonic, a lower bound learnt from a helper's hello."""
        self.helper_pids: set[int] = set()
        """envgym's own helper processes in the container, spared by the timeout kill."""

    async def _start(self) -> None:
        import docker.errors

        try:
            await self.engine.call("inspect_image", self.image)
        except docker.errors.ImageNotFound:
            raise ImageMissing(f"image {self.image!r} is not built here (nothing is pulled); build it with "
                               "`envgym sandbox build NAME` (sandboxes/NAME)") from None
        labels = {**self._labels, **owner_labels(self.run_id, self.profile.lifetime_s)}
        quota = not self.profile.read_only_root and await self.engine.disk_quota(self.image)
        spec = container_spec(self.profile, self.image, labels, disk_quota=quota)
        api = await self.engine.api()
        create = asyncio.ensure_future(self.engine.run(
            lambda: api._result(api._post_json(api._url("/containers/create"), data=spec), True)))
        try:
            created = await asyncio.shield(create)
        except asyncio.CancelledError:  # the thread finishes anyway: learn the id so that stop removes it
            with contextlib.suppress(Exception):
                self.id = (await create)["Id"][:12]
            raise
        self.id = created["Id"][:12]
        await self.engine.call("start", self.id)

    async def _stop(self) -> None:

        try:
            if self._docker_session is not None:
                await self._docker_session.close()
            if self.id:
                await remove(self.engine, self.id)
        finally:
            if self._own_engine:
                await self.engine.close()

    # -- faults ------------------------------------------------------------------------------------------------
    async def _status(self, *, settle: float = 0.0) -> str:
        """The container's state: running, paused, exited, dead ... or 'gone'.

        ``settle``: keep asking this long while it says running: right after a kill, the daemon still
        reports the container running for a moment although its processes are gone.
        """
        import docker.errors

        give_up = time.monotonic() + settle
        while True:
            try:
                info = await self.engine.call("inspect_container", self.id)
            except docker.errors.NotFound:
                return "gone"
            status = "paused" if info["State"].get("Paused") else info["State"]["Status"]
            if status != "running" or time.monotonic() >= give_up:
                return status
            await asyncio.sleep(0.1)

    async def _alive(self) -> bool:
        return await self._status() == "running"

    async def _crashed(self, during: str) -> SandboxCrashed:
        status = await self._status()
        self.state = SandboxState.FAILED
        return SandboxCrashed(f"container {self.id} is {status} ({during})")

    async def _create_exec(self, argv: list[str], *, deadline: float, stdin: bool = False, **kwargs: Any) -> str:
        import docker.errors

        while True:
            try:
                return (await self.engine.call("exec_create", self.id, argv, stdin=stdin, stdout=True, stderr=True,
                                               **kwargs))["Id"]
            except docker.errors.NotFound:
                raise await self._crashed("gone when a command was sent") from None
            except docker.errors.APIError as exc:
                if exc.status_code != 409:
                    raise SandboxError(f"docker exec failed: {exc.explanation}") from None
                if "paused" not in str(exc.explanation):
                    raise await self._crashed("not running when a command was sent") from None
            if time.monotonic() >= deadline:  # frozen from the start: the deadline passes, then it's a timeout
                raise ExecTimeout(f"container {self.id} is paused (frozen); the command never started")
            await asyncio.sleep(0.2)

    # -- exec --------------------------------------------------------------------------------------------------
    async def _exec(self, cmd: Command, *, timeout: float, max_output: int, cwd: str | None, env: dict[str, str],  # noqa: ASYNC109 - the command's own deadline
                    user: str | None) -> ExecResult:
        token = secrets.token_hex(8)
        argv = ["/bin/sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        if self._clock_offset_ns is None:  # the timeout kill needs the container's clock: a helper's hello
            with contextlib.suppress(ExecTimeout, SandboxError):
                await self._session().open(timeout=timeout)
        if self.state is not SandboxState.RUNNING:
            raise SandboxCrashed(f"container {self.id} died before the command was sent")
        start = time.monotonic()
        since_ns = 0 if self._clock_offset_ns is None else time.monotonic_ns() + self._clock_offset_ns
        deadline = start + timeout
        exec_id = await self._create_exec(argv, deadline=deadline, workdir=cwd or self.profile.workdir,
                                          user=user or "",
                                          environment=[*(f"{k}={v}" for k, v in env.items()),
                                                       f"{incontainer.TAG}={token}"])
        reader, writer = await self.engine.hijack(exec_id)
        out = {1: bytearray(), 2: bytearray()}
        truncated = timed_out = False

        async def collect() -> None:
            nonlocal truncated
            async for stream, data in frames(reader):
                buf = out.get(stream)
                if buf is None:
                    continue
                room = max_output - len(buf)
                truncated |= len(data) > room
                buf += data[:max(room, 0)]

        reading = asyncio.ensure_future(collect())
        try:
            try:
                await asyncio.wait_for(asyncio.shield(reading), max(deadline - time.monotonic(), 0))
            except TimeoutError:
                timed_out = True
                await self._kill_since(since_ns, user or "")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(reading), 2.0)
        finally:
            reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reading
            _close(writer)
        info = await self.engine.call("exec_inspect", exec_id)
        code = info.get("ExitCode")
        if not timed_out and code in (None, -1) and await self._status(settle=2.0) != "running":
            raise await self._crashed("died during the command")
        oom = False
        if code == 137 and not timed_out:  # SIGKILL: the OOM killer, or the container dying (this call raises)
            counter = await self._oom_counter()
            oom, self._oom_seen = counter > self._oom_seen, counter
        disk_full = any(w in out[2] for w in incontainer.ENOSPC_WORDS) or await self._disk_full()
        return ExecResult(exit_code=None if timed_out else code, stdout=out[1].decode(errors="replace"),
                          stderr=out[2].decode(errors="replace"), truncated=truncated, timed_out=timed_out,
                          oom_killed=oom, disk_full=disk_full, duration_s=time.monotonic() - start)

    def watched_mounts(self) -> list[str]:
        """The writable mounts whose filling up is reported as ``disk_full``."""
        return [*self.profile.tmpfs, "/dev/shm", *([] if self.profile.read_only_root else ["/"])]

    def _idle_helper(self, user: str) -> _Helper | None:
        helper = self._docker_session._helpers.get(user) if self._docker_session is not None else None
        return helper if helper is not None and helper.is_open and not helper.busy else None

    async def _disk_full(self) -> bool:
        """Whether a watched mount is full, asked of an idle session helper (False when none is idle)."""
        helper = self._idle_helper("")
        if helper is None or self.state is not SandboxState.RUNNING:
            return False
        with contextlib.suppress(SandboxError):
            return bool((await helper.call({"op": "statfs", "paths": self.watched_mounts()}, timeout=10))["full"])
        return False

    async def _kill_since(self, since_ns: int, user: str) -> None:
        """The namespace sweep of :func:`~envgym.sandbox.incontainer.kill_since`, as the command's user.

        Through that user's idle session helper when there is one (no new process needed: a fork bomb at the
        pids limit cannot starve it), else a fresh ``docker exec``, retried while the pids limit refuses it.
        """
        helper = self._idle_helper(user)
        if helper is not None:
            with contextlib.suppress(SandboxError):
                await helper.call({"op": "kill", "since_ns": since_ns, "keep": sorted(self.helper_pids)},
                                  timeout=KILL_GRACE_S)
                return
        give_up = time.monotonic() + KILL_GRACE_S
        last = ""
        while time.monotonic() < give_up:
            status = await self._status()
            if status == "paused":
                raise ExecTimeout(f"container {self.id} is paused (frozen): the command could not be stopped")
            if status != "running":
                raise await self._crashed("died during the command")
            try:
                exec_id = await self._create_exec(
                    ["python3", "-c", HELPER, "kill", str(since_ns), ",".join(map(str, sorted(self.helper_pids)))],
                    deadline=give_up, user=user)
                reader, writer = await self.engine.hijack(exec_id)
                try:
                    async for _ in frames(reader):
                        pass
                finally:
                    _close(writer)
                if (await self.engine.call("exec_inspect", exec_id)).get("ExitCode") == 0:
                    return
                last = "the kill helper failed"
            except SandboxError as exc:
                last = str(exc)
            await asyncio.sleep(0.2)
        self.state = SandboxState.FAILED
        raise ExecTimeout(f"container {self.id}: the timed-out command could not be stopped ({last})")

    async def _oom_counter(self) -> int:
        return int((await self._session().call({"op": "oom"}, timeout=10)).get("count", self._oom_seen))

    # -- session and files -------------------------------------------------------------------------------------
    def _session(self) -> DockerSession:
        if self._docker_session is None:
            self._docker_session = DockerSession(self)
        return self._docker_session

    async def _write(self, path: str, data: bytes, mode: int) -> None:
        await self._session().call({"op": "write", "path": path, "mode": mode,
                                    "data": base64.b64encode(data).decode()}, timeout=DEFAULT_TIMEOUT)

    async def _read(self, path: str, max_bytes: int) -> bytes:
        reply = await self._session().call({"op": "read", "path": path, "max_bytes": max_bytes},
                                           timeout=DEFAULT_TIMEOUT)
        return base64.b64decode(reply["data"])

    async def _copy_in(self, src: Path, dest: str) -> None:
        def pack() -> bytes:
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w") as tar:
                tar.add(src, arcname=src.name)
            return buf.getvalue()

        data = await asyncio.to_thread(pack)
        await self._session().call({"op": "tar_in", "dest": dest, "data": base64.b64encode(data).decode()},
                                   timeout=DEFAULT_TIMEOUT)

    async def _copy_out(self, src: str, dest: Path, max_bytes: int) -> None:
        reply = await self._session().call({"op": "tar_out", "path": src, "max_bytes": max_bytes},
                                           timeout=DEFAULT_TIMEOUT)
        await asyncio.to_thread(tarsafe.extract, base64.b64decode(reply["data"]), dest, max_bytes=max_bytes)


class DockerSession:
    """The persistent session: one helper per user (``docker exec -u``; with all capabilities dropped a
    helper cannot switch users itself), each started on first use and kept for the sandbox's life."""

    def __init__(self, sandbox: DockerSandbox) -> None:
        self._sb = sandbox
        self._helpers: dict[str, _Helper] = {}

    def _helper(self, user: str | None) -> _Helper:
        key = user or ""
        if key not in self._helpers:
            self._helpers[key] = _Helper(self._sb, key)
        return self._helpers[key]

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


class _Helper:
    """One helper process in the container, spoken to in JSON lines; its requests are serialised."""

    def __init__(self, sandbox: DockerSandbox, user: str) -> None:
        self._sb, self._user = sandbox, user
        self._lock = asyncio.Lock()
        self._conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._lines: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._pump: asyncio.Task[None] | None = None
        self._stderr = bytearray()
        self.pid: int | None = None

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
        exec_id = await self._sb._create_exec(["python3", "-u", "-c", HELPER, "serve"], deadline=deadline,
                                              stdin=True, user=self._user)
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
        sent = time.monotonic_ns()
        hello = await self._reply(await self._answer(deadline))
        received = time.monotonic_ns()
        if "hello" not in hello:
            await self._drop()
            raise SandboxError(f"{self._sb.id}: the session helper did not say hello: {hello}")
        self.pid = int(hello["hello"])
        self._sb.helper_pids.add(self.pid)
        if hello.get("boottime_ns") and received - sent < 5_000_000_000:
            offset = int(hello["boottime_ns"]) - received  # read before it arrived: a lower bound, errs early
            known = self._sb._clock_offset_ns
            self._sb._clock_offset_ns = offset if known is None else max(known, offset)
        return writer

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
                    lines.put_nowait(line)
        finally:
            lines.put_nowait(None)

    async def _drop(self) -> None:
        if self._pump is not None:
            self._pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pump
        if self._conn is not None:
            _close(self._conn[1])
        self._conn = self._pump = None
        if self.pid is not None:
            self._sb.helper_pids.discard(self.pid)
            self.pid = None

    async def close(self) -> None:
        await self._drop()

    async def call(self, request: dict[str, Any], *, timeout: float) -> dict[str, Any]:  # noqa: ASYNC109 - the command's own deadline
        """Send one request; its answer is due by ``timeout`` (+ a grace for the helper's own work)."""
        deadline = time.monotonic() + timeout
        async with self._lock:
            self._sb._check()
            writer = await self._ensure(deadline)
            writer.write(json.dumps(request).encode() + b"\n")
            reply = await self._reply(await self._answer(deadline))
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
                return reply
        await self._drop()
        if await self._sb._status(settle=2.0) != "running":
            raise await self._sb._crashed("died while the session started")
        raise SandboxError(f"{self._sb.id}: the session helper answered garbage: {line[:200]!r}")

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
                raise SandboxError(f"{self._sb.id}: the session helper ended (was it killed from inside?): "
                                   f"{self._stderr.decode(errors='replace')[-500:]}")
            return line
