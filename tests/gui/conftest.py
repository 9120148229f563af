"""Shared by the GUI tests that drive desktop containers directly: a Docker engine that leaves nothing behind, and
a started desktop on it (both labelled with the test module's ``RUN_ID``)."""

from __future__ import annotations

import pytest

from envgym.sandbox import tag_for
from envgym.sandbox.docker import DockerEngine, DockerSandbox
from envgym_gui.desktop import PROFILE, Desktop


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


@pytest.fixture
async def desktop(engine, request):
    """A started desktop (``envgym/desktop``, the session running, no app open) in a container of its own."""
    image = tag_for("desktop")
    try:
        await engine.call("inspect_image", image)
    except Exception as exc:  # the engine's not-found, whatever its type
        pytest.fail(f"{image} is not built: envgym sandbox build desktop ({exc})")
    sb = DockerSandbox(image, PROFILE, engine=engine, run_id=request.module.RUN_ID)
    await sb.start()
    d = Desktop(sb)
    try:
        await d.start()
        yield d
    finally:
        await d.close()
        await sb.stop()
