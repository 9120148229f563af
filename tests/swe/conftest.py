"""Shared fixtures of the SWE tests."""

from __future__ import annotations

import os

import pytest


@pytest.fixture
def no_leftover_containers():
    """After the test: no container of this process is left, and no SWE container pool is in use."""
    yield
    import docker

    from envgym_swe import containers

    api = docker.APIClient(version="auto")
    try:
        left = api.containers(all=True, filters={"label": f"envgym.owner_pid={os.getpid()}"})
        for c in left:
            api.remove_container(c["Id"], force=True)
    finally:
        api.close()
    assert not left and not containers.pools_in_use()
