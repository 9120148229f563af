"""The episode pool on a Ray cluster: one actor per host, each running that host's own pool.

:class:`RayEpisodePool` has :class:`~envgym.vector.pool.EpisodePool`'s interface (``run``, ``run_jobs``,
``run_one``, ``async with``) and spreads the episodes over the hosts of a Ray cluster (``pip install
'envgym[ray]'``)::

    async with RayEpisodePool(OracleConfig(), address="auto") as pool:   # agents built on each host
        async for done in pool.run_jobs(jobs):                            # Finished(job, trajectory)
            done.trajectory.host                                          # where it ran

A *host* is a Ray node that offers the custom resource :data:`HOST_RESOURCE` (``ray start ...
--resources '{"envgym_host": 64}'``); its amount is the host's episode slots. The pool places one async
actor on each such node (all of that resource, no CPU), and the actor runs a local ``EpisodePool`` with
that many slots; the envs, and so their sandboxes and the host's warm container pools, live in the actor's
process and never leave the host. Agents are built on the host from what the pool is given (an
``AgentConfig``, an ``AgentFactory`` that pickles, or a zero-argument callable returning one); a model's
calls go over HTTP to its endpoint or to the recording proxy, exactly as in a local run.

The driver sends each job to the least-loaded live host (fewest episodes in flight per slot, at most
``prefetch`` queued beyond its slots) and streams trajectories back in finishing order, each stamped with
its host's label (``hostname:node-id``); a list of jobs with ``Job.cost_hint`` goes out longest first, as in
the local pool. Guarantees, beyond the local pool's:

- **A lost host costs its in-flight episodes only.** When a host's actor dies (its node removed, the
  actor killed), each of its in-flight jobs is sent again to another host; after ``max_attempts`` sends
  the job ends as an ``infra_error`` trajectory (:class:`HostLost`). Every job still yields exactly one
  trajectory. Nodes that join later (or come back) get an actor and take work (looked for every
  :data:`DISCOVER_EVERY_S` seconds of a run, and at once when a host is lost).
- **A slow host stalls nobody**: it holds only its own slots; the others keep pulling jobs.
- **Cancellation** (Ctrl-C, leaving ``async with``, closing the stream early) cancels every in-flight
  episode on every host; ``aclose`` then closes each host's pool (every env, so every container) and ends
  the actors. If no host is left for ``host_wait_s`` while jobs remain, the run raises :class:`NoHosts`.

:func:`local_cluster` starts a cluster of simulated hosts on this machine (tests, benchmarks, trying it
out), with every Ray address on loopback. The host side (the actor) is :mod:`envgym.vector.rayhost`, the local
cluster :mod:`envgym.vector.raycluster`; both names are importable from here.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import itertools
import logging
import socket
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from envgym.compose import make
from envgym.env import Env
from envgym.errors import EnvgymError, SpecError
from envgym.task import TaskSpec
from envgym.trajectory import Trajectory
from envgym.vector.pool import Finished, Job, Jobs, _Source, failed_trajectory
from envgym.vector.raycluster import LocalCluster, local_cluster
from envgym.vector.rayhost import HOST_RESOURCE, AgentSource, _Host, _ray

log = logging.getLogger(__name__)

__all__ = ["DISCOVER_EVERY_S", "HOST_RESOURCE", "HostLost", "LocalCluster", "NoHosts", "RayEpisodePool",
           "local_cluster"]

PROBE_TIMEOUT_S = 5.0
"""How long an explicit address may take to accept a connection before the pool gives up (NoHosts)."""
COLLECT_WAIT_S = 1.0
"""The longest a host holds a collect call that has nothing to return (then the driver asks again)."""
DISCOVER_EVERY_S = 10.0
"""How often a run looks for nodes that joined (a lost host triggers a look at once)."""

class HostLost(EnvgymError, ConnectionError):
    """A Ray host died (node removed, actor killed) while it ran the episode, on every attempt."""

    blame = "infra"


class NoHosts(HostLost):
    """The cluster has no live envgym host (no node offers the ``envgym_host`` resource)."""


def _probe(address: str) -> None:
    """NoHosts unless something listens at ``address`` (HOST:PORT), within a few seconds."""
    host, _, port = address.rpartition(":")
    if not port.isdigit():
        raise NoHosts(f"a Ray address is HOST:PORT or auto, not {address!r}")
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=PROBE_TIMEOUT_S).close()
    except OSError as exc:
        raise NoHosts(f"no Ray cluster answers at {address} ({exc.strerror or exc}); start one with "
                      "ray start --head, or pass --ray auto on its head node") from None


class _Lost(Exception):  # internal: a job future's exception, caught in this module (HostLost leaves it)
    """An in-flight job's host died (its future's exception; the job goes to another host)."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(type(cause).__name__)
        self.cause = cause


@dataclasses.dataclass(eq=False)
class _HostState:
    actor: Any
    label: str
    slots: int
    node_id: str
    pid: int
    in_flight: int = 0
    alive: bool = True
    sent: int = 0
    waiting: dict[int, asyncio.Future[Trajectory]] = dataclasses.field(default_factory=dict)
    outbox: list[tuple[int, Job]] = dataclasses.field(default_factory=list)
    collector: asyncio.Task[None] | None = None


@dataclasses.dataclass(eq=False)
class _Item:
    job: Job
    attempt: int
    host: _HostState | None = None
    jid: int = -1


class RayEpisodePool:
    """:class:`EpisodePool`'s interface over the hosts of a Ray cluster; see the module docstring."""

    def __init__(self, agents: AgentSource = None, *, address: str | None = None, concurrency: int | None = None,
                 make_env: Callable[[str], Env] = make, max_attempts: int = 3, prefetch: int = 2,
                 grace_s: float = 60.0, close_timeout_s: float = 30.0, host_wait_s: float = 60.0,
                 shutdown_timeout_s: float = 120.0, resource: str = HOST_RESOURCE) -> None:
        if max_attempts < 1:
            raise SpecError("max_attempts must be at least 1", field="max_attempts")
        if concurrency is not None and concurrency < 1:
            raise SpecError("concurrency (per host) must be at least 1", field="concurrency")
        self.agents = agents
        self.address = address
        self.concurrency = concurrency
        self.make_env = make_env
        self.max_attempts = max_attempts
        self.prefetch = max(0, prefetch)
        self.grace_s, self.close_timeout_s = grace_s, close_timeout_s
        self.host_wait_s, self.shutdown_timeout_s = host_wait_s, shutdown_timeout_s
        self.resource = resource
        self.hosts: dict[str, _HostState] = {}  # node id -> host (live or lost)
        self.redispatched = 0
        """Jobs sent again because their host was lost."""
        self.lost: list[str] = []
        """Labels of the hosts lost so far, in order."""
        self._started = False
        self._owns_ray = False
        self._discovering: asyncio.Task[None] | None = None
        self._starting: set[Any] = set()  # actors created, not yet answering (killed by aclose too)
        self._changed = asyncio.Event()
        self._jids = itertools.count()
        self._closing = False
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- hosts ----------------------------------------------------------------------------------------------

    @property
    def live_hosts(self) -> list[_HostState]:
        return [h for h in self.hosts.values() if h.alive]

    @property
    def in_flight(self) -> int:
        return sum(h.in_flight for h in self.hosts.values())

    @property
    def slots(self) -> int:
        """Episode slots of the live hosts together."""
        return sum(h.slots for h in self.live_hosts)

    async def start(self) -> None:
        """Connect to Ray (unless connected) and start an actor on every host; NoHosts when there is none."""
        if self._started:
            return
        ray = _ray()
        if not ray.is_initialized():
            if self.address and "://" not in self.address and self.address != "auto":
                await asyncio.to_thread(_probe, self.address)  # Ray itself retries a wrong address for minutes
            try:
                await asyncio.to_thread(ray.init, address=self.address or "auto", logging_level=logging.WARNING,
                                        configure_logging=False)
            except (ConnectionError, ValueError, RuntimeError) as exc:
                raise NoHosts(f"cannot join the Ray cluster at {self.address or 'auto'}: {exc}") from exc
            self._owns_ray = True
        self._started = True
        await self._discover()
        if not self.live_hosts:
            raise NoHosts(f"no Ray node offers the {self.resource!r} resource: start each host with "
                          f"ray start --address HEAD:6379 --resources '{{\"{self.resource}\": SLOTS}}'")

    async def _discover(self) -> None:
        """Start an actor on every live node offering the resource that has none yet."""
        ray = _ray()
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        nodes = await asyncio.to_thread(ray.nodes)
        new: list[tuple[str, Any, int]] = []
        for node in nodes:
            amount = node.get("Resources", {}).get(self.resource, 0)
            node_id = node["NodeID"]
            known = self.hosts.get(node_id)
            if not node.get("Alive") or amount < 1 or (known is not None and known.alive):
                continue  # a node whose actor died while the node lives gets a new one
            slots = self.concurrency or int(amount)
            actor = ray.remote(_Host).options(
                num_cpus=0, resources={self.resource: amount}, max_restarts=0, max_concurrency=4 * slots + 64,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
            ).remote(self.agents, self.make_env, slots, self.grace_s, self.close_timeout_s)
            new.append((node_id, actor, slots))
            self._starting.add(actor)
        for node_id, actor, slots in new:
            try:
                info = await asyncio.wait_for(asyncio.wrap_future(actor.info.remote().future()), self.host_wait_s)
            except Exception as exc:  # the node went away meanwhile, or the actor cannot start there
                log.warning("no envgym host on node %s: %r", node_id[:8], exc)
                with contextlib.suppress(Exception):
                    ray.kill(actor)
                continue
            finally:
                self._starting.discard(actor)
            self.hosts[node_id] = _HostState(actor, info["label"], slots, node_id, info["pid"])
            log.info("envgym host %s: %d slots", info["label"], slots)
        self._changed.set()

    def _rediscover(self) -> None:
        if self._closing:
            return
        if self._discovering is None or self._discovering.done():
            self._discovering = asyncio.ensure_future(self._discover())

    def _least_loaded(self) -> _HostState | None:
        best, load = None, float("inf")
        for host in self.hosts.values():
            if host.alive and host.in_flight < host.slots + self.prefetch and host.in_flight / host.slots < load:
                best, load = host, host.in_flight / host.slots
        return best

    def _lose(self, host: _HostState, exc: BaseException) -> None:
        if host.alive and not self._closing:
            host.alive = False
            self.lost.append(host.label)
            log.warning("envgym host %s lost (%s); its in-flight episodes go to other hosts", host.label,
                        type(exc).__name__)
            with contextlib.suppress(Exception):  # an actor only unreachable for a while must not run on unseen
                _ray().kill(host.actor)
            self._rediscover()
        waiting, host.waiting = host.waiting, {}
        for future in waiting.values():
            if not future.done():
                future.set_exception(_Lost(exc))

    # -- running --------------------------------------------------------------------------------------------

    def _send(self, host: _HostState, item: _Item) -> asyncio.Future[Trajectory]:
        """Queue the job for ``host``: the jobs queued in one pass of the event loop go in one ``push``."""
        item.jid, item.host = next(self._jids), host
        future: asyncio.Future[Trajectory] = asyncio.get_running_loop().create_future()
        host.waiting[item.jid] = future
        if not host.outbox:
            asyncio.get_running_loop().call_soon(self._flush, host)
        host.outbox.append((item.jid, dataclasses.replace(item.job, key=None)))  # the caller's key stays here
        host.in_flight += 1
        host.sent += 1
        if host.collector is None:
            host.collector = asyncio.ensure_future(self._collect(host))
        return future

    def _flush(self, host: _HostState) -> None:
        batch, host.outbox = host.outbox, []
        if not batch or not host.alive:
            return
        try:
            ref = host.actor.push.remote(batch)
        except Exception as exc:  # a job (its agent) does not pickle: a caller's mistake, not an episode's
            error = SpecError(f"a job cannot be sent to a Ray host ({exc}); give the pool an agent factory "
                              "(or config) instead of unpicklable per-job agents")
            for jid, _ in batch:
                future = host.waiting.pop(jid, None)
                if future is not None and not future.done():
                    future.set_exception(error)
            return
        ref.future().add_done_callback(lambda done: self._pushed(host, done))

    def _pushed(self, host: _HostState, done: Any) -> None:
        if done.exception() is not None and self._loop is not None:  # called from Ray's thread
            with contextlib.suppress(RuntimeError):  # the loop is already closed: nothing left to tell
                self._loop.call_soon_threadsafe(self._lose, host, done.exception())

    async def _collect(self, host: _HostState) -> None:
        """Long-poll ``host`` for finished trajectories while it has jobs; a failed call means it is lost."""
        ray = _ray()
        try:
            while host.alive and host.waiting:
                try:
                    done = await asyncio.wrap_future(host.actor.collect.remote(COLLECT_WAIT_S).future())
                except ray.exceptions.RayError as exc:
                    self._lose(host, exc)
                    break
                for jid, trajectory in done:
                    future = host.waiting.pop(jid, None)
                    if future is not None and not future.done():
                        future.set_result(trajectory)
        finally:
            host.collector = None

    async def run(self, tasks: Jobs) -> AsyncIterator[Trajectory]:
        """Run every task; yield each trajectory as its episode ends."""
        async with contextlib.aclosing(self.run_jobs(tasks)) as stream:
            async for done in stream:
                yield done.trajectory

    async def run_one(self, job: TaskSpec | Job) -> Trajectory:
        """Run one job on the least-loaded host and return its trajectory."""
        async with contextlib.aclosing(self.run_jobs([job])) as stream:
            async for done in stream:
                return done.trajectory
        raise RuntimeError("the Ray pool yielded nothing for a job")  # it promises one result per job

    async def run_jobs(self, jobs: Jobs) -> AsyncIterator[Finished]:
        """Run every job; yield ``Finished(job, trajectory)`` as each episode ends, on whichever host."""
        await self.start()
        self._loop = asyncio.get_running_loop()
        source = _Source(jobs)
        retry: collections.deque[_Item] = collections.deque()
        flying: dict[asyncio.Future[Any], _Item] = {}
        pull: asyncio.Task[Job | None] | None = None
        exhausted = False
        hostless_since: float | None = None
        discovered = time.monotonic()
        try:
            while True:
                if time.monotonic() - discovered > DISCOVER_EVERY_S:  # nodes that joined since take work
                    discovered = time.monotonic()
                    self._rediscover()
                # Fill every free slot: lost jobs first, then new ones (a pending pull is waited on below).
                while pull is None and (host := self._least_loaded()) is not None:
                    if retry:
                        item = retry.popleft()
                    elif exhausted:
                        break
                    elif source._sync is not None:
                        job = await source.next()
                        if job is None:
                            exhausted = True
                            break
                        item = _Item(job, 1)
                    else:
                        pull = asyncio.ensure_future(source.next())
                        break
                    flying[self._send(host, item)] = item
                if not flying and pull is None:
                    if exhausted and not retry:
                        return
                    # jobs are left but no host is: wait for one to join, for a while
                    hostless_since = hostless_since or time.monotonic()
                    if time.monotonic() - hostless_since > self.host_wait_s:
                        for item in retry:
                            yield Finished(item.job, self._failed(item, "no live host was left to run it"))
                        raise NoHosts(f"every envgym host was lost ({', '.join(self.lost)}) and none joined "
                                      f"within {self.host_wait_s:g}s")
                    self._rediscover()
                    self._changed.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._changed.wait(), 1.0)
                    continue
                hostless_since = None
                waiting: set[asyncio.Future[Any]] = set(flying)
                if pull is not None:
                    waiting.add(pull)
                done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                if pull is not None and pull in done:
                    job = pull.result()
                    pull = None
                    if job is None:
                        exhausted = True
                    else:
                        retry.appendleft(_Item(job, 1))  # sent at the top of the loop, before other new jobs
                for future in done:
                    item = flying.pop(future, None)
                    if item is None:
                        continue
                    finished = self._settle(item, future, retry)
                    if finished is not None:
                        yield finished
        finally:
            if pull is not None:
                pull.cancel()
                await asyncio.gather(pull, return_exceptions=True)
            await self._cancel(flying)

    def _settle(self, item: _Item, future: asyncio.Future[Any], retry: collections.deque[_Item]) -> Finished | None:
        host = item.host
        assert host is not None
        host.in_flight -= 1
        try:
            return Finished(item.job, future.result())
        except _Lost as lost:  # the actor or its node died
            if item.attempt < self.max_attempts:
                self.redispatched += 1
                retry.append(_Item(item.job, item.attempt + 1))
                return None
            why = f"its host {host.label} was lost ({type(lost.cause).__name__})"
            return Finished(item.job, self._failed(item, why))

    def _failed(self, item: _Item, why: str) -> Trajectory:
        error = HostLost(f"{why}; {item.attempt} attempt(s) of at most {self.max_attempts}")
        return failed_trajectory(item.job, error).model_copy(update={"host": item.host.label if item.host else None})

    async def _cancel(self, flying: dict[asyncio.Future[Any], _Item]) -> None:
        """Cancel the in-flight episodes on their hosts and wait (bounded) until each has stopped."""
        if not flying:
            return
        by_host: dict[_HostState, list[int]] = {}
        for item in flying.values():
            assert item.host is not None
            item.host.in_flight -= 1
            item.host.waiting.pop(item.jid, None)
            by_host.setdefault(item.host, []).append(item.jid)
        for host in by_host:  # jobs still in an outbox never leave it
            host.outbox = [(jid, job) for jid, job in host.outbox if jid not in by_host[host]]
        calls = [asyncio.wrap_future(host.actor.cancel.remote(jids).future())
                 for host, jids in by_host.items() if host.alive]
        for future in flying:
            future.cancel()
        if calls:
            waited = asyncio.ensure_future(asyncio.wait(calls, timeout=self.shutdown_timeout_s))
            while not waited.done():
                try:
                    await asyncio.shield(waited)
                except asyncio.CancelledError:  # a second Ctrl-C: the episodes are being cancelled; still wait
                    continue
            for call in calls:
                if call.done() and not call.cancelled():
                    call.exception()

    # -- lifecycle ------------------------------------------------------------------------------------------

    async def host_stats(self) -> dict[str, dict[str, Any]]:
        """Per live host label: episodes in flight, envs open, episodes run (for tests and diagnosis)."""
        hosts = self.live_hosts
        stats = await asyncio.gather(*(asyncio.wrap_future(h.actor.stats.remote().future()) for h in hosts),
                                     return_exceptions=True)
        return {h.label: s for h, s in zip(hosts, stats, strict=True) if isinstance(s, dict)}

    async def aclose(self) -> dict[str, dict[str, Any]]:
        """Close every host's pool (every env and container), end the actors; returns each host's final
        counts (``open_envs`` is 0 when everything closed). Idempotent; the pool can be started again."""
        if not self._started:
            return {}
        ray = _ray()
        self._closing = True
        collectors = [h.collector for h in self.hosts.values() if h.collector is not None]
        for task in [*collectors, *([self._discovering] if self._discovering is not None else [])]:
            task.cancel()
        await asyncio.gather(*collectors, *([self._discovering] if self._discovering else []),
                             return_exceptions=True)
        hosts = self.live_hosts
        calls = [asyncio.wrap_future(h.actor.shutdown.remote().future()) for h in hosts]
        waited = asyncio.ensure_future(asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True),
                                                        self.shutdown_timeout_s))
        interrupted = False
        while not waited.done():
            try:
                await asyncio.shield(waited)
            except asyncio.CancelledError:
                interrupted = True
        try:
            results = waited.result()
        except TimeoutError:
            results = [TimeoutError("shutdown timed out")] * len(hosts)
        final = {}
        for host, result in zip(hosts, results, strict=True):
            if isinstance(result, BaseException):
                log.warning("closing envgym host %s failed: %r", host.label, result)
            else:
                final[host.label] = result
        for actor in [*(h.actor for h in self.hosts.values()), *self._starting]:
            with contextlib.suppress(Exception):
                ray.kill(actor)
        self._starting.clear()
        self.hosts.clear()
        self._started = self._closing = False
        if self._owns_ray:
            await asyncio.to_thread(ray.shutdown)
            self._owns_ray = False
        if interrupted:
            raise asyncio.CancelledError
        return final

    async def __aenter__(self) -> RayEpisodePool:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
