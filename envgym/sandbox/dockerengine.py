"""The Docker engine as envgym drives it: a client on its own bounded thread pool, never blocking the loop.

:func:`connect` makes a ``docker.APIClient`` speaking the daemon's version (or raises
:class:`~envgym.sandbox.errors.DaemonUnavailable` saying how to start one); :class:`DockerEngine` runs every SDK
call on its own ``max_concurrency`` threads, hijacks an exec's stdio as asyncio streams, probes once whether the
storage driver takes a disk quota, and holds this process's subscription to the engine's container events
(:mod:`envgym.sandbox.dockerevents`); :func:`remove` force-removes a container, noting first that its kill is
envgym's own. The sandbox built on it is :class:`~envgym.sandbox.docker.DockerSandbox`; the reaper
(:mod:`envgym.sandbox.reaper`) uses it too. The Docker SDK is imported on first use (the ``docker`` extra).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import envgym.sandbox.dockerevents as dockerevents
from envgym.sandbox.errors import START_DOCKER_HINT, DaemonUnavailable
from envgym.sandbox.labels import default_run_id, owner_labels

__all__ = ["DockerEngine", "connect", "remove"]


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

    dockerevents.note_removal(container_id)  # the engine's kill for it is envgym's, not from outside
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
        self._watch: dockerevents.Watch | None = None

    async def api(self) -> Any:
        if self._api is None:
            self._connecting = self._connecting or asyncio.Lock()
            async with self._connecting:
                if self._api is None:
                    self._api = await asyncio.get_running_loop().run_in_executor(self._executor, self._connect)
        return self._api

    def _connect(self) -> Any:
        return connect(self._base_url, timeout=self._timeout, max_pool_size=self._max)

    @property
    def watching(self) -> dockerevents.Watch | None:
        """This process's subscription to the engine's container events, once a sandbox started here."""
        watch = self._watch
        return watch if watch is not None and watch.pid == os.getpid() else None

    async def watch(self) -> None:
        """Take this process's event subscription (:mod:`~envgym.sandbox.dockerevents`) if not held yet; the
        first one waits (up to :data:`~envgym.sandbox.dockerevents.WAIT_S`) for its stream to open."""
        if self.watching is not None:
            return
        watch = self._watch = dockerevents.subscribe(self._base_url or "", partial(connect, self._base_url))
        if not watch.tried.is_set():
            await self.run(watch.tried.wait, dockerevents.WAIT_S)

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
        watch, self._watch = self._watch, None
        if watch is not None:
            await asyncio.to_thread(dockerevents.unsubscribe, self._base_url or "", watch)
        if self._api is not None:
            self._api.close()
            self._api = None
        await asyncio.to_thread(self._executor.shutdown)

    async def __aenter__(self) -> DockerEngine:
        await self.api()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
