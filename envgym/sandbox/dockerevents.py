"""Whose a dead container was: what the Docker engine saw happen to it, asked after the crash.

A container that died under a command is the agent's doing (``kill 1``, the OOM killer at the container's own
memory limit, its init's child ending) unless something outside it caused the death. The engine can tell:
it logs a ``kill`` event, with the ``signal``, for every signal it sends (``docker kill``, ``docker stop``,
``docker rm -f``, its own shutdown) and none for a signal sent inside the container; an agent cannot remove
its own container; an engine that restarted broke every event stream and lost its in-memory history (moby
keeps only the last :data:`RING` events). :func:`outside_cause` reads that evidence:

* **Live**: one subscription per process and engine address (:class:`Watch`, a daemon thread reading
  ``GET /events`` for this process's containers' ``kill`` and ``die``), taken by the first sandbox an engine
  starts (:func:`subscribe`, keyed by pid: a forked worker starts its own, never reads its
  parent's) and closed with the last engine using it. It keeps the events of the last :data:`KEPT`
  containers. After a crash, up to :data:`WAIT_S` for the container's ``die`` (its kill comes first).
* **History**, when the stream was not up for the container's whole life or the ``die`` did not come: the
  engine's ring since the container's creation (``GET /events?since=&until=``). A kill there counts; a
  ring that is not full and lacks the container's own ``create`` means the engine restarted.
* envgym's own removals (a sandbox's ``stop``, the pool, the reaper) are noted before they are sent
  (:func:`note_removal`): a kill of a container envgym is removing is never from outside.

Outside causes (``blame="infra"``, an ``infra_error`` that resume reruns): a kill envgym did not send, the
container gone, the engine restarted, or a broken stream over a ring too full to tell (or that cannot be read).
Anything else stays the agent's, the container's own OOM (``State.OOMKilled``) included. A host-wide OOM is not
told apart: the kernel reports a global OOM kill of the container's init like the container's own (cgroup v2
counts both in ``oom_kill``; v1 reports neither), so it is blamed on the agent. What guards against it is the
profile: every container's memory limit keeps the episodes from exhausting the host; the host's kernel log
(``Out of memory`` vs ``Memory cgroup out of memory``) is where an operator tells the two apart.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from envgym.sandbox.labels import OWNER_HOST, OWNER_PID

EVENTS = ("kill", "die")
WAIT_S = 2.0
"""How long a crash waits for the container's ``die`` event on the live stream before asking the history."""
KEPT = 2048
"""Containers whose events a :class:`Watch` keeps (the oldest are forgotten first)."""
RING = 256
"""Events the engine keeps in memory (moby's ``eventsLimit``); a history query returning fewer is complete."""
RETRY_S = 1.0
"""Pause before a broken stream is opened again."""


def short(container_id: str) -> str:
    return container_id[:12]


_removing: OrderedDict[str, None] = OrderedDict()
_removing_lock = threading.Lock()


def note_removal(container_id: str) -> None:
    """Record that envgym is about to remove (force-kill) ``container_id``: its kill is not from outside."""
    with _removing_lock:
        _removing[short(container_id)] = None
        while len(_removing) > KEPT:
            _removing.popitem(last=False)


def removed_by_envgym(container_id: str) -> bool:
    with _removing_lock:
        return short(container_id) in _removing


@dataclass
class Seen:
    """What the live stream saw happen to one container."""

    signals: list[str] = field(default_factory=list)
    """Signals of its ``kill`` events, in order."""
    died: bool = False


class Watch:
    """One process's live subscription to one engine's events about its own containers (module docstring)."""

    def __init__(self, connect: Callable[[], Any]) -> None:
        self.pid = os.getpid()
        self.users = 0
        self.up_since: float | None = None
        """Wall time the current stream opened (every later event reaches :meth:`seen`); None while down."""
        self._connect = connect
        self._seen: OrderedDict[str, Seen] = OrderedDict()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.tried = threading.Event()
        """Set once the first attempt to open the stream has ended (open or failed)."""
        self._stream: Any = None
        self._thread = threading.Thread(target=self._run, name="envgym-docker-events", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def seen(self, container_id: str) -> Seen | None:
        with self._lock:
            found = self._seen.get(short(container_id))
            return None if found is None else Seen(list(found.signals), found.died)

    def up_before(self, wall: float) -> bool:
        """Whether the current stream has been open since ``wall`` (it saw everything after it)."""
        up = self.up_since
        return up is not None and up <= wall

    def _run(self) -> None:
        filters = {"type": "container", "event": list(EVENTS),
                   "label": [f"{OWNER_PID}={self.pid}", f"{OWNER_HOST}={socket.gethostname()}"]}
        while not self._stopping.is_set():
            api = None
            try:
                api = self._connect()
                stream = api.events(decode=True, filters=filters)
                with self._lock:
                    if self._stopping.is_set():
                        stream.close()
                        break
                    self._stream, self.up_since = stream, time.time()
                self.tried.set()
                for event in stream:
                    self._note(event)
            except Exception:  # the engine is down or restarting: the stream is opened again
                pass
            finally:
                with self._lock:
                    stream, self._stream, self.up_since = self._stream, None, None
                if stream is not None:
                    with contextlib.suppress(Exception):
                        stream.close()
                if api is not None:
                    api.close()
                self.tried.set()
            self._stopping.wait(RETRY_S)

    def _note(self, event: dict[str, Any]) -> None:
        cid, action, attributes = _actor(event)
        with self._lock:
            seen = self._seen.get(cid)
            if seen is None:
                seen = self._seen[cid] = Seen()
                while len(self._seen) > KEPT:
                    self._seen.popitem(last=False)
            if action == "kill":
                seen.signals.append(str(attributes.get("signal", "?")))
            elif action == "die":
                seen.died = True

    def close(self) -> None:
        """Stop the thread and its connection (blocking: call it off the event loop)."""
        with self._lock:
            self._stopping.set()
            stream = self._stream
        if stream is not None:
            with contextlib.suppress(Exception):
                stream.close()
        self._thread.join(timeout=10)


class Engine(Protocol):
    """What reading the evidence needs of an engine (:class:`~envgym.sandbox.dockerengine.DockerEngine`,
    which itself holds a :class:`Watch` of this module: hence a protocol, not an import)."""

    @property
    def watching(self) -> Watch | None: ...

    async def api(self) -> Any: ...

    async def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any: ...


_watches: dict[tuple[int, str], Watch] = {}
_watches_lock = threading.Lock()


def subscribe(address: str, connect: Callable[[], Any]) -> Watch:
    """This process's :class:`Watch` of the engine at ``address`` (started on first use); give it back with
    :func:`unsubscribe`."""
    key = (os.getpid(), address)
    with _watches_lock:
        watch = _watches.get(key)
        if watch is None:
            watch = _watches[key] = Watch(connect)
            watch.start()
        watch.users += 1
        return watch


def unsubscribe(address: str, watch: Watch) -> None:
    """Drop one use of ``watch``; the last closes it (blocking: call it off the event loop)."""
    if watch.pid != os.getpid():
        return  # a parent's, inherited through fork: its thread is not here and its socket is the parent's
    with _watches_lock:
        watch.users -= 1
        if watch.users > 0:
            return
        if _watches.get((watch.pid, address)) is watch:
            del _watches[(watch.pid, address)]
    watch.close()


_CREATED = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$")


def created_ns(created: str) -> int | None:
    """The engine's RFC 3339 ``Created`` time (nanoseconds, ``Z`` or an offset) in nanoseconds since the epoch."""
    import datetime as dt

    match = _CREATED.match(created or "")
    if match is None:
        return None
    base, fraction, zone = match.groups()
    stamp = dt.datetime.fromisoformat(base + ("+00:00" if zone == "Z" else zone))
    return int(stamp.timestamp()) * 1_000_000_000 + int((fraction or "0")[:9].ljust(9, "0"))


def _stamp(ns: int) -> str:
    return f"{ns // 1_000_000_000}.{ns % 1_000_000_000:09d}"


async def history(engine: Engine, since_ns: int) -> list[dict[str, Any]]:
    """Every event the engine still holds since ``since_ns`` (at most :data:`RING`)."""
    api = await engine.api()
    since, until = _stamp(since_ns), _stamp(time.time_ns())
    return await engine.run(lambda: list(api.events(since=since, until=until, decode=True)))


def _actor(event: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """(short container id, action, attributes) of an event."""
    actor = event.get("Actor") or {}
    return (short(str(actor.get("ID") or event.get("id") or "")), str(event.get("Action") or event.get("status")),
            actor.get("Attributes") or {})


async def outside_cause(engine: Engine, container_id: str, info: dict[str, Any] | None,
                        started_wall: float) -> str | None:
    """Why the dead container ``container_id`` was not the agent's doing, or None when nothing outside shows.

    ``info``: its ``inspect`` (None: it is gone); ``started_wall``: host wall time before it was created.
    """
    if info is None:
        return "removed by envgym while in use" if removed_by_envgym(container_id) else "removed from outside"
    ours = removed_by_envgym(container_id)
    watch = engine.watching
    give_up = time.monotonic() + WAIT_S
    while watch is not None and watch.up_before(started_wall):
        seen = watch.seen(container_id) or Seen()
        if seen.signals and not ours:
            return f"killed from outside (signal {seen.signals[0]})"
        if seen.died:
            return None
        if time.monotonic() >= give_up:
            break
        await asyncio.sleep(0.05)
    import docker.errors

    created = created_ns(str(info.get("Created", "")))
    try:
        events = await history(engine, created - 1_000_000_000 if created else int((started_wall - 5) * 1e9))
    except docker.errors.APIError as exc:
        return f"died and the engine's event history could not be read ({exc.explanation or exc})"
    own = [(action, attrs) for cid, action, attrs in map(_actor, events) if cid == short(container_id)]
    signals = [str(attrs.get("signal", "?")) for action, attrs in own if action == "kill"]
    if signals and not ours:
        return f"killed from outside (signal {signals[0]})"
    if len(events) < RING:  # the whole history since its creation: no kill in it
        if not any(action in ("create", "start") for action, _ in own):
            return "engine restarted (its event history no longer holds the container's creation)"
        return None
    if watch is not None and watch.up_before(started_wall):
        return None  # the stream saw its whole life; the die was only slow to come
    return "the engine's event stream was down while it ran and its history is too busy to tell"
