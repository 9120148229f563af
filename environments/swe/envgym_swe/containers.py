"""Containers of repository images: shared warm pools, and the fast reset of ``/testbed`` to a base commit.

``lease(image)`` hands out a started container from a :class:`~envgym.sandbox.pool.SandboxPool` shared by
every SWE env (and ``envgym swe grade``) on the running event loop for that image; ``release`` keeps a
healthy container for the next lease, and the last release stops them all and closes the pool. An env
keeps its container across episodes of the same image and resets it with :func:`reset_repo` (a fraction of
a second) instead of starting a new one. The reset restores ``/testbed`` and empties ``/tmp``; what an
agent changed elsewhere (installed packages) stays, so ``SweEnv(reuse_container=False)`` gives every
episode a fresh container for strict isolation.

:func:`reset_repo` checks out the base commit (discarding every change, untracked files included, except
``*.egg-info`` of the editable install), then re-commits its tree as a parentless commit on branch ``main``
and deletes every other ref and ``/tmp``'s contents: ``git log`` shows one commit, so neither the parent
(the clean code of an injected bug) nor other tasks' commits are a ``git log --all`` away, and nothing an
earlier episode left in ``/tmp`` (a gold patch) survives. Containers always run with network ``none``.
"""

from __future__ import annotations

import asyncio
import shlex

from envgym.sandbox.base import Sandbox, SandboxState
from envgym.sandbox.errors import SandboxError
from envgym.sandbox.pool import SandboxPool
from envgym.sandbox.profile import DEFAULT, SandboxProfile

WORKDIR = "/testbed"
PROFILE = DEFAULT.model_copy(update={"name": "swe", "workdir": WORKDIR, "memory": "2g", "pids_limit": 512,
                                     "lifetime_s": 6 * 3600})
"""DEFAULT's hardening (network none, capabilities dropped, limits) with /testbed as the working directory."""
_COMMIT_ENV = ("GIT_AUTHOR_NAME=envgym GIT_AUTHOR_EMAIL=envgym@localhost GIT_AUTHOR_DATE='2000-01-01T00:00:00Z' "
               "GIT_COMMITTER_NAME=envgym GIT_COMMITTER_EMAIL=envgym@localhost "
               "GIT_COMMITTER_DATE='2000-01-01T00:00:00Z'")

MAX_IDLE = 8
"""Healthy containers kept per image for the next env that needs one (beyond the pool's warm spare)."""


class _Shared:
    def __init__(self, pool: SandboxPool) -> None:
        self.pool, self.users, self.idle = pool, 0, []  # type: list[Sandbox]


_shared: dict[tuple[int, str], _Shared] = {}


async def lease(image: str, *, profile: SandboxProfile = PROFILE, spare: int = 1) -> Sandbox:
    """A started container of ``image``: one an earlier env gave back, else one from the loop's shared pool.

    Give it back with :func:`release`.
    """
    key = (id(asyncio.get_running_loop()), image)
    shared = _shared.get(key)
    if shared is None:
        shared = _shared[key] = _Shared(SandboxPool(image, size=spare, profile=profile))
    shared.users += 1
    while shared.idle:
        sandbox = shared.idle.pop()
        if sandbox.state is SandboxState.RUNNING:
            return sandbox
    try:
        return await shared.pool.acquire()
    except BaseException:
        await _drop(key)
        raise


async def release(image: str, sandbox: Sandbox | None, *, reuse: bool = True) -> None:
    """Give ``sandbox`` back (kept for the next lease when ``reuse`` and healthy, else stopped) and drop one
    use of the image's pool; the last use stops every kept container and closes the pool."""
    key = (id(asyncio.get_running_loop()), image)
    shared = _shared.get(key)
    try:
        if sandbox is not None:
            if reuse and shared is not None and sandbox.state is SandboxState.RUNNING and len(shared.idle) < MAX_IDLE:
                shared.idle.append(sandbox)
            else:
                await sandbox.stop()
    finally:
        await _drop(key)


async def _drop(key: tuple[int, str]) -> None:
    shared = _shared.get(key)
    if shared is None:
        return
    shared.users -= 1
    if shared.users <= 0:
        del _shared[key]
        idle, shared.idle = shared.idle, []
        try:
            for sandbox in idle:
                await sandbox.stop()
        finally:
            await shared.pool.close()


def reset_script(base_commit: str, message: str) -> str:
    base = shlex.quote(base_commit)
    return "\n".join([
        "set -e",
        f"cd {WORKDIR}",
        f"git checkout -qf --detach {base}",
        "git clean -fdxq -e '*.egg-info'",
        f"c=$({_COMMIT_ENV} git commit-tree {base}^{{tree}} -m {shlex.quote(message)})",
        'git reset -q --soft "$c"',
        "git checkout -q -B main",
        "git for-each-ref --format='%(refname)' | grep -vx refs/heads/main | "
        "while read -r ref; do git update-ref -d \"$ref\"; done",
        "rm -rf .git/logs",
        "find /tmp -mindepth 1 -delete 2>/dev/null || true",
    ])


async def reset_repo(sandbox: Sandbox, base_commit: str, message: str) -> None:
    """Put ``/testbed`` at ``base_commit`` (see the module docstring); SandboxError when git fails."""
    result = await sandbox.session.exec(["bash", "-c", reset_script(base_commit, message)], timeout=120,
                                        max_output=1 << 16)
    if result.exit_code != 0:
        raise SandboxError(f"resetting /testbed to {base_commit[:12]} failed (exit {result.exit_code}): "
                           f"{(result.stdout + result.stderr).strip()[-500:]}")


def pools_in_use() -> dict[str, int]:
    """Image -> users of the shared pools on any loop (for benchmarks and tests)."""
    return {image: shared.users for (_, image), shared in _shared.items()}
