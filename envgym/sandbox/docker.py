"""The Docker backend: one hardened container per sandbox, driven without blocking the event loop.

* Every Docker SDK call runs on a :class:`DockerEngine`'s own thread pool (``max_concurrency`` threads), so
  concurrency is bounded and the loop never waits on a socket (the engine, :func:`connect` and :func:`remove`
  live in :mod:`envgym.sandbox.dockerengine`, re-exported here). Command output is read from the hijacked
  exec connection with asyncio streams directly: a slow command costs no thread.
* The container is created from :func:`~envgym.sandbox.profile.container_spec` (validated, hardened,
  labelled for the reaper) and removed on ``stop``; nothing is ever pulled: a missing image raises
  :class:`ImageMissing` naming ``envgym sandbox build``.
* ``exec`` is one ``docker exec`` per command; ``session.exec`` goes through the in-container helper
  (:mod:`envgym.sandbox.incontainer`) over one long-lived exec connection (:mod:`envgym.sandbox.dockersession`,
  which reads this sandbox's private state as a friend). File operations use the session. ``channel`` starts
  any JSON-lines program the same way (one ``docker exec`` kept open, its pid spared by timeout kills).
* Timeouts kill every process of the container started since the command began (a PID-namespace sweep by
  start time, :func:`~envgym.sandbox.incontainer.kill_since`; envgym's helpers are spared by pid). The
  container's clock is learnt from a helper's hello (``exec`` opens the session first for it); where no helper
  could start (the pids limit already full), the sweep takes every process but envgym's. A container that
  cannot be reached to do so (paused) raises :class:`ExecTimeout` at the deadline; a container that died
  raises :class:`SandboxCrashed`, then and on every later call, with ``blame="infra"`` when the engine shows an
  outside cause (a kill envgym did not send, the container removed, the engine restarted:
  :mod:`envgym.sandbox.dockerevents`, whose event subscription the engine takes at its first sandbox's start
  and closes with itself) and no blame otherwise (the agent's, after its first action).
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
import secrets
import tarfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import envgym.sandbox.dockerevents as dockerevents
import envgym.sandbox.incontainer as incontainer
import envgym.sandbox.tarsafe as tarsafe
from envgym.sandbox.base import DEFAULT_TIMEOUT, Command, ExecResult, Sandbox, SandboxState
from envgym.sandbox.dockerengine import DockerEngine, connect, remove
from envgym.sandbox.dockersession import HELPER, DockerSession, Helper, close_writer, frames
from envgym.sandbox.errors import (
    ExecTimeout,
    ImageMissing,
    SandboxCrashed,
    SandboxError,
)
from envgym.sandbox.labels import default_run_id, owner_labels
from envgym.sandbox.profile import DEFAULT, SandboxProfile, container_spec

__all__ = ["CLOCK_PINGS", "KILL_GRACE_S", "DockerEngine", "DockerSandbox", "connect", "remove"]

KILL_GRACE_S = 10.0
"""How long a timed-out command's tree kill may take before the sandbox is declared unreachable."""
CLOCK_PINGS = 3
"""Answers asked of the helper before a timeout kill, each a bound of the container's clock (the best is kept)."""


def _state(info: dict[str, Any] | None) -> str:
    if info is None:
        return "gone"
    return "paused" if info["State"].get("Paused") else str(info["State"]["Status"])


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
        self._channels: list[Helper] = []
        self._created_wall = 0.0

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
        await self.engine.watch()
        self._created_wall = time.time()
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
            for channel in list(self._channels):
                await channel.close()
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
        give_up = time.monotonic() + settle
        while True:
            status = _state(await self._inspect())
            if status != "running" or time.monotonic() >= give_up:
                return status
            await asyncio.sleep(0.1)

    async def _inspect(self) -> dict[str, Any] | None:
        import docker.errors

        try:
            return dict(await self.engine.call("inspect_container", self.id))
        except docker.errors.NotFound:
            return None

    async def _alive(self) -> bool:
        return await self._status() == "running"

    async def _crashed(self, during: str) -> SandboxCrashed:
        """The crash, blamed on the infrastructure when the engine shows an outside cause
        (:func:`~envgym.sandbox.dockerevents.outside_cause`); remembered for every later call."""
        info = await self._inspect()
        self.state = SandboxState.FAILED
        cause = await dockerevents.outside_cause(self.engine, self.id, info, self._created_wall)
        if cause is not None:
            crash = SandboxCrashed(f"container {self.id} {cause} ({during})", blame="infra")
        else:
            state = (info or {}).get("State") or {}
            how = (f"exit code {state.get('ExitCode')}, out of memory at its own limit" if state.get("OOMKilled")
                   else f"exit code {state.get('ExitCode')}")
            crash = SandboxCrashed(f"container {self.id} is {_state(info)} ({how}; no kill from outside) ({during})")
        self.crash_error = crash
        return crash

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
        start = time.monotonic()
        deadline = start + timeout
        if self._clock_offset_ns is None:  # the timeout kill needs the container's clock: a helper's hello
            with contextlib.suppress(ExecTimeout, SandboxError):
                await self._session().open(timeout=timeout)
        if self.state is not SandboxState.RUNNING:
            raise SandboxCrashed(f"container {self.id} died before the command was sent",
                                 blame=self.crash_error.blame if self.crash_error is not None else None)
        sent_ns = time.monotonic_ns()  # the command starts after this, in the container's clock at kill time
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
                await self._kill_since(sent_ns, user or "")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(reading), 2.0)
        finally:
            reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reading
            close_writer(writer)
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

    def _idle_helper(self, user: str) -> Helper | None:
        return self._docker_session.idle_helper(user) if self._docker_session is not None else None

    async def _disk_full(self) -> bool:
        """Whether a watched mount is full, asked of an idle session helper (False when none is idle)."""
        helper = self._idle_helper("")
        if helper is None or self.state is not SandboxState.RUNNING:
            return False
        with contextlib.suppress(SandboxError):
            return bool((await helper.call({"op": "statfs", "paths": self.watched_mounts()}, timeout=10))["full"])
        return False

    def _container_ns(self, host_ns: int) -> int:
        """A host monotonic time in the container's boot clock, never later than it was (0 while unknown:
        then the sweep takes every process but PID 1, the keeper and the helpers)."""
        return 0 if self._clock_offset_ns is None else host_ns + self._clock_offset_ns

    async def _kill_since(self, sent_ns: int, user: str) -> None:
        """The namespace sweep of :func:`~envgym.sandbox.incontainer.kill_since`, as the command's user, of
        what started since ``sent_ns`` (the host's monotonic clock when the command was sent).

        Through that user's idle session helper when there is one (no new process needed: a fork bomb at the
        pids limit cannot starve it), else a fresh ``docker exec``, retried while the pids limit refuses it.
        The container's clock is a lower bound learnt from helpers' answers, early by the time an answer took
        to arrive (a hello on a busy engine: tens of milliseconds and more), and a server an earlier command
        started that moment before this one would die with it: the helper is asked the time a few times first
        (:data:`CLOCK_PINGS` quick answers), and the best bound then converts ``sent_ns``.
        """
        helper = self._idle_helper(user)
        if helper is not None:
            with contextlib.suppress(SandboxError):
                for _ in range(CLOCK_PINGS):
                    await helper.call({"op": "ping"}, timeout=KILL_GRACE_S)
                await helper.call({"op": "kill", "since_ns": self._container_ns(sent_ns),
                                   "keep": sorted(self.helper_pids)}, timeout=KILL_GRACE_S)
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
                    ["python3", "-c", HELPER, "kill", str(self._container_ns(sent_ns)),
                     ",".join(map(str, sorted(self.helper_pids)))],
                    deadline=give_up, user=user)
                reader, writer = await self.engine.hijack(exec_id)
                try:
                    async for _ in frames(reader):
                        pass
                finally:
                    close_writer(writer)
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

    # -- session, channels and files ---------------------------------------------------------------------------
    async def _channel(self, argv: list[str], *, user: str | None, env: dict[str, str], cwd: str | None,
                       timeout: float) -> Helper:  # noqa: ASYNC109 - how long the process may take to say hello
        channel = Helper(self, user or "", argv, env, cwd)
        self._channels.append(channel)
        try:
            await channel.open(timeout)
        except BaseException:
            await channel.close()
            raise
        return channel

    def _forget_channel(self, channel: Helper) -> None:
        if channel in self._channels:
            self._channels.remove(channel)

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
