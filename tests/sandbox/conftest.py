"""Sandbox test fixtures. Tests marked ``docker`` need a running engine (``sandboxes/host-setup.sh``) and the
``docker`` extra; without them they are skipped with the reason. After every docker test an autouse fixture
checks that no container labelled with this test run remains."""

from __future__ import annotations

import secrets

import pytest

RUN_ID = f"pytest-{secrets.token_hex(4)}"


def _docker_api():
    try:
        import docker
    except ImportError:
        pytest.fail("the docker extra is not installed (pip install 'envgym[docker]'; `make test` does)")
    try:
        return docker.APIClient(version="auto")
    except docker.errors.DockerException as exc:
        pytest.fail(f"no Docker engine answers ({exc}); run sandboxes/host-setup.sh (`make test` does)")


@pytest.fixture(autouse=True)
def no_leftover_containers(request):
    if request.node.get_closest_marker("docker") is None:
        yield
        return
    api = _docker_api()
    try:
        yield
        left = api.containers(all=True, filters={"label": f"envgym.run={RUN_ID}"})
        for c in left:  # clean up for the next test, then fail this one
            api.remove_container(c["Id"], force=True)
        assert not left, f"containers of this test run left behind: {[c['Id'][:12] for c in left]}"
    finally:
        api.close()


@pytest.fixture
def run_id() -> str:
    return RUN_ID


@pytest.fixture
async def engine():
    from envgym.sandbox.docker import DockerEngine

    async with DockerEngine(max_concurrency=8) as eng:
        yield eng


@pytest.fixture(scope="session")
def base_image() -> str:
    from envgym.sandbox.images import tag_for

    tag = tag_for("base")
    api = _docker_api()
    try:
        api.inspect_image(tag)
    except Exception:
        pytest.fail(f"{tag} is not built: run sandboxes/host-setup.sh")
    finally:
        api.close()
    return tag


@pytest.fixture
async def make(engine, base_image, run_id):
    """``await make(profile=DEFAULT, image=None)``: a started DockerSandbox of this run, stopped after the test."""
    from envgym.sandbox import DEFAULT
    from envgym.sandbox.docker import DockerSandbox

    started: list[DockerSandbox] = []

    async def make(profile=DEFAULT, image=None):
        sb = DockerSandbox(image or base_image, profile, engine=engine, run_id=run_id)
        started.append(sb)
        await sb.start()
        return sb

    yield make
    for sb in started:
        await sb.stop()
