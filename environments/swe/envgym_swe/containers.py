"""Containers of repository images: one fresh container per episode and per grading, from a warm pool.

``lease(image)`` hands out a started container that nobody used before, from a
:mod:`envgym.sandbox.leases` pool shared by every SWE env (and ``envgym swe grade``) on the running
event loop for that image; ``release`` stops it (in the background: the caller does not wait for the
removal). An env also ``hold``s the image's pool from its first reset to its close, so the pool stays warm
between its episodes; the last ``unhold`` / ``release`` of an image waits for the removals and closes the
pool. Nothing is ever handed out twice: an episode starts in a container no earlier episode touched, and
grading runs in another one.

Why fresh rather than "proven clean": proving a used container clean means showing that no process of the
agent survives (``setsid``, double forks, a process waiting to act later) and that nothing it wrote anywhere
remains (``/dev/shm``, IPC objects, caches); a new container is clean by construction, and its start is paid
in the background: the pool keeps :data:`SPARE_PER_USER` started spares per env holding the image (one for
its next episode, one for its next grading), capped at :data:`MAX_SPARE`, so a reset costs only the git
reset below (``benchmarks/swe_latency.py`` measures it).

Disk is bounded although the host's storage driver cannot cap a container's writable layer: the root
filesystem is read-only and every writable path is a size-capped tmpfs (:data:`DISK`). ``/testbed`` is
filled at container start (part of the pool's background start) from the pristine copy every repository
image keeps at :data:`PRISTINE` (:mod:`envgym_swe.images`); the editable install and ``git`` work there as
in the image. Site-packages, the interpreter and git's system config cannot be changed by anyone.

:func:`reset_repo` checks out the base commit's tree as a parentless commit on branch ``main`` (the
container is fresh: nothing untracked is there but the editable install's ``*.egg-info``) and deletes every
other ref: ``git log`` shows one commit, so neither the parent (the clean code of an
injected bug) nor other tasks' commits are a ``git log --all`` away. Containers always run with network
``none`` (networking disabled, so Docker writes no ``/etc/hosts``, and the image's is shadowed by an empty one):
a read-only bind mount of :data:`HOSTS_FILE` gives them one, so ``localhost`` resolves (to the container's
own loopback) for tests that start a local server.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import threading
from pathlib import Path

from envgym.plugin.sandbox import DEFAULT, DockerSandbox, Sandbox, SandboxError, SandboxProfile, leases

WORKDIR = "/testbed"
PRISTINE = "/opt/envgym/testbed"
"""Where every repository image keeps the repository as built; copied into the ``/testbed`` tmpfs at start."""
DISK = {"/testbed": "768m", "/tmp": "256m", "/root": "64m", "/var/tmp": "64m", "/run": "16m"}
"""The writable paths (tmpfs) and their caps; everything else is read-only. ``HOME`` is ``/root``."""
_MODES = {"/tmp": "1777", "/var/tmp": "1777", "/root": "0700"}
HOSTS = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
HOSTS_FILE = Path.home() / ".cache" / "envgym" / "swe" / "hosts"
"""The host file mounted read-only as every SWE container's ``/etc/hosts`` (written with :data:`HOSTS` when
missing or different, before a container starts)."""
_PROFILE = {
    "name": "swe", "workdir": WORKDIR, "memory": "2g", "pids_limit": 512, "lifetime_s": 6 * 3600,
    "read_only_root": True, "environment": {"HOME": "/root"}, "allow": frozenset({"binds"}),
    "extra_host_config": {"Mounts": [{"Type": "bind", "Source": str(HOSTS_FILE), "Target": "/etc/hosts",
                                      "ReadOnly": True}]},
    "tmpfs": {path: f"rw,exec,nosuid,nodev,size={size},mode={_MODES.get(path, '0755')}" for path, size in DISK.items()},
    "disk": "1168m",  # the total the sandbox layer checks the tmpfs sizes against
}
PROFILE = DEFAULT.model_copy(update=_PROFILE)
"""DEFAULT's hardening (network none, capabilities dropped, limits), a read-only root and the tmpfs of DISK
(1168 MiB in all, well below the 2 GiB of memory their pages are charged to), and :data:`HOSTS_FILE` read-only
at ``/etc/hosts`` (the one bind mount it opts in to)."""
_COMMIT_ENV = ("GIT_AUTHOR_NAME=envgym GIT_AUTHOR_EMAIL=envgym@localhost GIT_AUTHOR_DATE='2000-01-01T00:00:00Z' "
               "GIT_COMMITTER_NAME=envgym GIT_COMMITTER_EMAIL=envgym@localhost "
               "GIT_COMMITTER_DATE='2000-01-01T00:00:00Z'")

SPARE_PER_USER = 2
"""Started spares per env holding the image's pool: one for its next episode, one for its next grading (capped
at :data:`envgym.sandbox.leases.MAX_SPARE`; a given-back container is stopped
:data:`~envgym.sandbox.leases.STOP_DELAY_S` later, since a submit is usually followed at once by the next reset,
whose p50 doubled with the removal's work on the engine)."""
_POPULATE = (f"[ -d {PRISTINE}/.git ] || {{ echo 'this image has no {PRISTINE}: rebuild it with "
             f"`envgym swe build`'; exit 3; }}; cp -a {PRISTINE}/. {WORKDIR}/ && cd {WORKDIR} && "
             # the copy has new inodes and ctimes: refresh the index now, not in the reset's checkout
             "{ git update-index -q --refresh >/dev/null 2>&1 || true; }")


def write_hosts_file() -> Path:
    """:data:`HOSTS_FILE` with :data:`HOSTS` in it (written only when it differs)."""
    try:
        if HOSTS_FILE.read_text() == HOSTS:
            return HOSTS_FILE
    except OSError:
        pass
    HOSTS_FILE.parent.mkdir(parents=True, exist_ok=True)
    # one temp name per writer: two sandboxes of one process start at once in two threads
    tmp = HOSTS_FILE.with_name(f"hosts.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(HOSTS)
    tmp.chmod(0o644)
    tmp.replace(HOSTS_FILE)
    return HOSTS_FILE


class SweSandbox(DockerSandbox):
    """A Docker sandbox whose ``/testbed`` tmpfs is filled from the image's pristine copy as it starts."""

    async def start(self) -> None:
        await asyncio.to_thread(write_hosts_file)
        await super().start()
        if WORKDIR not in self.profile.tmpfs:
            return
        try:
            result = await self.session.exec(["sh", "-c", _POPULATE], timeout=120, max_output=1 << 14, cwd="/")
            if result.exit_code != 0:
                raise SandboxError(f"filling {WORKDIR} in {self.id} failed (exit {result.exit_code}): "
                                   f"{(result.stdout + result.stderr).strip()[-500:]}")
        except BaseException:
            await self.stop()
            raise


def _factory(image: str, profile: SandboxProfile) -> leases.Factory:
    return lambda engine: SweSandbox(image, profile, engine=engine)


async def hold(image: str, *, profile: SandboxProfile = PROFILE) -> None:
    """Keep ``image``'s pool open and sized for one more env until :func:`unhold`."""
    await leases.hold(image, _factory(image, profile), spare=SPARE_PER_USER)


async def unhold(image: str) -> None:
    await leases.unhold(image, spare=SPARE_PER_USER)


async def lease(image: str, *, profile: SandboxProfile = PROFILE) -> Sandbox:
    """A started container of ``image`` that nobody used, from the loop's shared pool; give it back with
    :func:`release`."""
    return await leases.lease(image, _factory(image, profile))


async def release(image: str, sandbox: Sandbox | None) -> None:
    """Stop ``sandbox`` (never reused; the removal runs in the background) and drop one use of the image's
    pool; the last use waits for every removal and closes the pool."""
    await leases.release(image, sandbox)


def leased(image: str, *, profile: SandboxProfile = PROFILE) -> contextlib.AbstractAsyncContextManager[Sandbox]:
    """``lease`` ... ``release`` as a block: the grading container's life."""
    return leases.leased(image, _factory(image, profile))


def reset_script(base_commit: str, message: str) -> str:
    """Two git processes on the critical path: the container is fresh, so nothing untracked needs cleaning
    (the image's copy was cleaned at build, ``*.egg-info`` aside)."""
    base = shlex.quote(base_commit)
    return "\n".join([
        "set -e",
        f"cd {WORKDIR}",
        f"c=$({_COMMIT_ENV} git commit-tree {base}^{{tree}} -m {shlex.quote(message)})",
        'git checkout -qf -B main "$c"',
        "git for-each-ref --format='%(refname)' | grep -vx refs/heads/main | "
        "while read -r ref; do git update-ref -d \"$ref\"; done",
        "rm -rf .git/logs",
    ])


async def reset_repo(sandbox: Sandbox, base_commit: str, message: str) -> None:
    """Put ``/testbed`` at ``base_commit`` (see the module docstring); SandboxError when git fails."""
    result = await sandbox.session.exec(["bash", "-c", reset_script(base_commit, message)], timeout=120,
                                        max_output=1 << 16)
    if result.exit_code != 0:
        raise SandboxError(f"resetting /testbed to {base_commit[:12]} failed (exit {result.exit_code}): "
                           f"{(result.stdout + result.stderr).strip()[-500:]}")


def pools_in_use() -> dict[str, int]:
    """Pool key -> users of the loop-shared pools (for benchmarks and tests)."""
    return leases.in_use()
