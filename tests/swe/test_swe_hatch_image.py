"""An image of a Hatch project builds: its editable install asks hatchling's PEP 660 hook, which requires
``editables`` besides ``[build-system] requires``, and the image's build has no index (attrs since 2023)."""

from __future__ import annotations

import os
import subprocess

import pytest

from envgym_swe.environment import DEFAULT_INSTALL
from envgym_swe.images import ImageSpec, build_requires, ensure_image

pytestmark = pytest.mark.docker

PYPROJECT = """[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "hatchpkg"
version = "1.0"

[tool.hatch.build.targets.wheel]
packages = ["hatchpkg"]
"""


def test_a_hatchling_project_installs_editable_offline(tmp_path, no_leftover_containers):
    repo = tmp_path / "hatchpkg"
    (repo / "hatchpkg").mkdir(parents=True)
    (repo / "pyproject.toml").write_text(PYPROJECT)
    (repo / "hatchpkg" / "__init__.py").write_text("ANSWER = 42\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@localhost", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@localhost"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "hatch"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=env)
    sha = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True,
                         text=True).stdout.strip()
    requires = build_requires(repo, (sha,))
    assert requires == ("editables~=0.3", "hatchling")
    spec = ImageSpec(repo="me/hatchpkg", commits=(sha,), install=DEFAULT_INSTALL, build_requires=requires)
    tag, built = ensure_image(spec, repo, force=True)  # before: No matching distribution found for editables~=0.3
    try:
        assert built
        out = subprocess.run(["docker", "run", "--rm", "--network", "none", "-w", "/", tag, "python3", "-c",
                              "import hatchpkg; print(hatchpkg.ANSWER, hatchpkg.__file__)"],
                             capture_output=True, text=True)
        assert out.stdout.split() == ["42", "/testbed/hatchpkg/__init__.py"], out.stderr  # the editable install
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)
