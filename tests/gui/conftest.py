"""Shared by the GUI tests that drive desktop containers directly: a Docker engine that leaves nothing behind."""

from __future__ import annotations

import pytest

from envgym.sandbox.docker import DockerEngine


@pytest.fixture
async def engine(request):
    """A Docker engine for the test; afterwards no container labelled with the module's ``RUN_ID`` may be left
    (any that is, is removed and the test fails)."""
    run_id = request.module.RUN_ID
    async with DockerEngine(max_concurrency=4) as eng:
        yield eng
    api = __import__("docker").APIClient(version="auto")
    try:
        left = api.containers(all=True, filters={"label": f"envgym.run={run_id}"})
        for c in left:
            api.remove_container(c["Id"], force=True)
        assert not left, f"containers left behind: {[c['Id'][:12] for c in left]}"
    finally:
        api.close()
