"""envgym.sandbox.leases: loop-shared warm pools hand out fresh sandboxes, never one twice, and close with
their last user."""

from __future__ import annotations

import asyncio

import pytest

from envgym.sandbox import leases
from envgym.sandbox.base import SandboxState

pytestmark = pytest.mark.docker


class Prepared:
    """A factory whose sandboxes do more at start (as a desktop or a repository image does)."""

    def __init__(self, image: str, run_id: str) -> None:
        self.image, self.run_id, self.made = image, run_id, []

    def __call__(self, engine):
        from envgym.sandbox.docker import DockerSandbox

        factory = self

        class Marked(DockerSandbox):
            async def start(self) -> None:
                await super().start()
                await self.write("/work/prepared", "yes")

        sandbox = Marked(factory.image, engine=engine, run_id=factory.run_id)
        self.made.append(sandbox)
        return sandbox


async def test_leases_are_fresh_prepared_and_stopped_after_release(base_image, run_id) -> None:
    factory = Prepared(base_image, run_id)
    key = f"{base_image}#test-leases"
    await leases.hold(key, factory)
    try:
        first = await leases.lease(key, factory)
        second = await leases.lease(key, factory)
        assert first is not second and first.id != second.id
        assert await first.read("/work/prepared") == b"yes"  # started by the factory's start, in the pool
        assert leases.in_use()[key] == 3
        await leases.release(key, first)
        await leases.release(key, second)
        assert leases.in_use()[key] == 1
    finally:
        await leases.unhold(key)
    assert key not in leases.in_use()  # the last user closed the pool: every sandbox it made is stopped
    await asyncio.sleep(0)
    assert all(sb.state in (SandboxState.STOPPED, SandboxState.CREATED) for sb in factory.made)


async def test_a_failed_lease_drops_its_use(run_id) -> None:
    from envgym.sandbox.errors import ImageMissing

    factory = Prepared("envgym/no-such-image:0", run_id)
    with pytest.raises(ImageMissing):
        await leases.lease("envgym/no-such-image:0", factory)
    assert "envgym/no-such-image:0" not in leases.in_use()
