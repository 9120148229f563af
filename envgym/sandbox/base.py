"""The async sandbox contract every backend fulfils.

A :class:`Sandbox` is one isolated place to run an episode's commands, used once and thrown away::

    async with DockerSandbox("envgym/base:<hash>") as sb:       # start ... stop, always
        r = await sb.exec("make test", timeout=60, max_output=1 << 20, cwd="/work", env={}, user=None)
        r = await sb.session.exec("ls")                          # same result, through a long-lived helper
        await sb.write("/work/a.txt", "hi");  data = await sb.read("/work/a.txt")
        await sb.copy_in(host_dir, "/work");  await sb.copy_out("/work/out", host_dest)

        ch = await sb.channel(["python3", "/opt/x/daemon.py"], user="user", env={"DISPLAY": ":0"})
        reply = await ch.call({"op": "ping"}, timeout=5);  await ch.close()

``exec`` starts a fresh process per call; ``session.exec`` sends the command to a helper that lives as long
as the sandbox, so a round trip costs milliseconds instead of a ``docker exec``. ``channel`` opens the same
kind of long-lived process for any program that speaks its protocol: the program prints ``{"hello": <its
pid>}`` as its first line, then answers every JSON line on stdin with one JSON object line on stdout; replies
come back as written (``{"ok": false, ...}`` included), a process that ended raises :class:`ChannelClosed`.
Channels live until closed or until the sandbox stops; their processes are spared by timeout kills.

A command that overruns its timeout has its whole process tree killed and comes back as a result with
``timed_out=True``; a sandbox that cannot be made to stop it (frozen) raises :class:`ExecTimeout`; one that
died raises :class:`SandboxCrashed`. A command that filled a writable mount comes back with ``disk_full=True``.
Lifecycle: CREATED -> STARTING -> RUNNING -> STOPPED, or FAILED after a crash; every call in FAILED raises
:class:`SandboxCrashed` again, blamed as the first crash was (an agent's ``kill 1`` reads the same on every later
call; a container killed from outside stays ``blame="infra"``), any other call
outside RUNNING raises :class:`SandboxStateError`. :meth:`Sandbox.alive` asks whether a RUNNING sandbox
still runs (pools ask before handing one out). ``stop`` is idempotent and never raises for an already-dead
sandbox.
"""

from __future__ import annotations

import abc
import enum
import posixpath
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict

from envgym.sandbox.errors import SandboxCrashed, SandboxError, SandboxStateError

Command = str | Sequence[str]
"""A shell string (run by ``/bin/sh -c``) or an argv list (run as is)."""

DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_OUTPUT = 1 << 20
DEFAULT_MAX_READ = 64 << 20


class SandboxState(enum.Enum):
    CREATED = "created"
    STARTING = "starting"
    RUNNING = "running"
    STOPPED = "stopped"
    FAILED = "failed"


class ExecResult(BaseModel):
    """What one command did. ``exit_code`` is None when the command was killed at its timeout."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    exit_code: int | None
    stdout: str
    stderr: str
    truncated: bool = False
    """Some output was dropped: each stream keeps its first ``max_output`` bytes."""
    timed_out: bool = False
    oom_killed: bool = False
    """The command was killed by the kernel's OOM killer inside the sandbox's memory limit."""
    disk_full: bool = False
    """After the command a writable mount had no space (or inodes) left, or its stderr said ENOSPC: the
    sandbox's disk bound (:mod:`envgym.sandbox.profile`) was hit."""
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


class Session(Protocol):
    """A long-lived command channel into a running sandbox (cheap round trips)."""

    async def exec(self, cmd: Command, *, timeout: float = DEFAULT_TIMEOUT, max_output: int = DEFAULT_MAX_OUTPUT,  # noqa: ASYNC109 - the command's own deadline
                   cwd: str | None = None, env: Mapping[str, str] | None = None,
                   user: str | None = None) -> ExecResult: ...


class Channel(Protocol):
    """A long-lived JSON-lines process in a running sandbox (:meth:`Sandbox.channel`); requests are serialised."""

    pid: int | None
    """The process's pid inside the sandbox, from its hello (None once closed)."""

    async def call(self, request: Mapping[str, Any], *, timeout: float) -> dict[str, Any]:  # noqa: ASYNC109 - the request's own deadline
        """Send ``request`` (one JSON line) and return the reply object as the process wrote it.

        No reply by ``timeout`` (plus a grace): :class:`ExecTimeout` while the sandbox runs, else
        :class:`SandboxCrashed`; the process ended: :class:`ChannelClosed`.
        """
        ...

    async def close(self) -> None:
        """End the process's stdin and drop the connection; idempotent."""
        ...


class Sandbox(abc.ABC):
    """Base of every backend: the lifecycle and its checks live here, the work in the ``_`` methods."""

    backend: ClassVar[str]
    secure: ClassVar[bool] = True
    """False for backends that do not isolate the command from the host (``local``)."""

    def __init__(self) -> None:
        self.state = SandboxState.CREATED
        self.id = ""
        self.crash_error: SandboxCrashed | None = None
        """The crash that made the sandbox FAILED, where a backend knows it (its blame holds for later calls)."""

    # -- lifecycle ---------------------------------------------------------------------------------------------
    async def start(self) -> None:
        if self.state is not SandboxState.CREATED:
            raise SandboxStateError(f"{self.backend} sandbox cannot start from state {self.state.value}")
        self.state = SandboxState.STARTING
        try:
            await self._start()
        except BaseException:
            self.state = SandboxState.FAILED
            await self._stop()
            raise
        self.state = SandboxState.RUNNING

    async def stop(self) -> None:
        if self.state is SandboxState.STOPPED:
            return
        self.state = SandboxState.STOPPED
        await self._stop()

    async def __aenter__(self) -> Sandbox:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def alive(self) -> bool:
        """Whether the sandbox is RUNNING and still runs; one found dead turns FAILED."""
        if self.state is not SandboxState.RUNNING:
            return False
        if not await self._alive():
            self.state = SandboxState.FAILED
            return False
        return True

    async def _alive(self) -> bool:
        """Backends that can die under their owner check here; the default trusts the state."""
        return True

    def _check(self) -> None:
        if self.state is SandboxState.FAILED:
            raise SandboxCrashed(f"{self.backend} sandbox {self.id or '(unstarted)'} is failed: it died earlier "
                                 f"or never started{f' ({self.crash_error})' if self.crash_error else ''}",
                                 blame=self.crash_error.blame if self.crash_error else None)
        if self.state is not SandboxState.RUNNING:
            raise SandboxStateError(f"{self.backend} sandbox {self.id or '(unstarted)'} is {self.state.value}, "
                                    "not running")

    # -- operations --------------------------------------------------------------------------------------------
    async def exec(self, cmd: Command, *, timeout: float = DEFAULT_TIMEOUT, max_output: int = DEFAULT_MAX_OUTPUT,  # noqa: ASYNC109 - the command's own deadline
                   cwd: str | None = None, env: Mapping[str, str] | None = None,
                   user: str | None = None) -> ExecResult:
        """Run ``cmd`` in a fresh process; see the module docstring for timeouts and faults."""
        self._check()
        return await self._exec(cmd, timeout=timeout, max_output=max_output, cwd=cwd, env=dict(env or {}),
                                user=user)

    @property
    def session(self) -> Session:
        self._check()
        return self._session()

    async def channel(self, argv: Sequence[str], *, user: str | None = None, env: Mapping[str, str] | None = None,
                      cwd: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> Channel:  # noqa: ASYNC109 - how long the process may take to say hello
        """Start ``argv`` as ``user`` and wait (up to ``timeout``) for its hello; see the module docstring."""
        self._check()
        if isinstance(argv, str) or not argv:
            raise ValueError("channel argv must be a non-empty list of strings")
        return await self._channel(list(argv), user=user, env=dict(env or {}), cwd=cwd, timeout=timeout)

    async def _channel(self, argv: list[str], *, user: str | None, env: dict[str, str], cwd: str | None,
                       timeout: float) -> Channel:  # noqa: ASYNC109 - how long the process may take to say hello
        raise SandboxError(f"the {self.backend} backend has no channels")

    async def write(self, path: str, data: bytes | str, *, mode: int = 0o644) -> None:
        """Create or replace the file ``path`` (parents are created)."""
        self._check()
        await self._write(path, data.encode() if isinstance(data, str) else data, mode)

    async def read(self, path: str, *, max_bytes: int = DEFAULT_MAX_READ) -> bytes:
        self._check()
        return await self._read(path, max_bytes)

    async def copy_in(self, src: str | Path, dest: str) -> None:
        """Copy the host file or directory ``src`` to ``dest/<name of src>`` in the sandbox."""
        self._check()
        await self._copy_in(Path(src), dest)

    async def copy_out(self, src: str, dest: str | Path, *, max_bytes: int = DEFAULT_MAX_READ) -> Path:
        """Copy the sandbox's file or directory ``src`` to the host path ``dest`` (which must not exist).

        Every archive member is validated first (:mod:`envgym.sandbox.tarsafe`); links are copied as links
        and never followed. Returns ``dest``.
        """
        self._check()
        dest = Path(dest)
        if dest.exists() or dest.is_symlink():
            raise FileExistsError(f"copy_out destination {dest} exists")
        await self._copy_out(posixpath.normpath(src), dest, max_bytes)
        return dest

    @abc.abstractmethod
    async def _start(self) -> None: ...

    @abc.abstractmethod
    async def _stop(self) -> None:
        """Release everything; must tolerate a half-started or already-dead sandbox."""

    @abc.abstractmethod
    async def _exec(self, cmd: Command, *, timeout: float, max_output: int, cwd: str | None, env: dict[str, str],  # noqa: ASYNC109 - the command's own deadline
                    user: str | None) -> ExecResult: ...

    @abc.abstractmethod
    def _session(self) -> Session: ...

    @abc.abstractmethod
    async def _write(self, path: str, data: bytes, mode: int) -> None: ...

    @abc.abstractmethod
    async def _read(self, path: str, max_bytes: int) -> bytes: ...

    @abc.abstractmethod
    async def _copy_in(self, src: Path, dest: str) -> None: ...

    @abc.abstractmethod
    async def _copy_out(self, src: str, dest: Path, max_bytes: int) -> None: ...
