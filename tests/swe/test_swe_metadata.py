"""A commit's dependencies as its build backend reports them, read in a no-network sandbox, for each packaging style:
a ``setup.py`` that computes ``install_requires`` (a variable), ``setup.cfg``, PEP 621 with Hatch, Poetry."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from envgym_swe.environment import infer_environment, split_requires_dist
from envgym_swe.metadata import read_metadata

pytestmark = pytest.mark.docker

SETUP_PY = """import os
from setuptools import setup

def read(name):
    with open(os.path.join(os.path.dirname(__file__), name)) as f:
        return [line.strip() for line in f if line.strip()]

requires = read("runtime.txt")
test_requirements = ["pytest-mock", "pytest>=3"]
setup(name="computed", version="1.0", packages=["computed"], install_requires=requires,
      tests_require=test_requirements, extras_require={"socks": ["PySocks>=1.5.6"], "test": ["trustme"]})
"""
SETUP_CFG = """[metadata]
name = cfgpkg
version = 1.0

[options]
packages = cfgpkg
python_requires = >=3.7
install_requires =
    attrs>=20
    six

[options.extras_require]
testing = hypothesis
"""
HATCH = """[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "hatchpkg"
version = "1.0"
requires-python = ">=3.8"
dependencies = ["click>=7", "colorama; sys_platform == 'win32'"]

[project.optional-dependencies]
tests = ["pytest-timeout"]
docs = ["sphinx"]

[tool.hatch.build.targets.wheel]
packages = ["hatchpkg"]
"""
POETRY = """[build-system]
requires = ["poetry-core>=1.0.0"]
build-backend = "poetry.core.masonry.api"

[tool.poetry]
name = "poetrypkg"
version = "1.0"
description = "x"
authors = ["t <t@localhost>"]

[tool.poetry.dependencies]
python = "^3.8"
toml = "^0.10"
tomli = { version = ">=1.1", optional = true }

[tool.poetry.extras]
test = ["tomli"]

[tool.poetry.group.test.dependencies]
pytest-randomly = "~3.12"
"""


def commit(repo: Path, files: dict[str, str | None], message: str) -> str:
    for path, text in files.items():
        if text is None:
            (repo / path).unlink()
            continue
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@localhost", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@localhost"}
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", message], check=True, env=env)
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture(scope="module")
def styles(tmp_path_factory):
    repo = tmp_path_factory.mktemp("styles")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    shas = {"setup.py": commit(repo, {"setup.py": SETUP_PY, "runtime.txt": "urllib3>=1.21.1,<1.27\nidna<3\n",
                                      "computed/__init__.py": ""}, "setup.py")}
    shas["same packaging"] = commit(repo, {"computed/more.py": "X = 1\n"}, "a source change")
    shas["setup.cfg"] = commit(repo, {"setup.py": "from setuptools import setup\nsetup()\n", "runtime.txt": None,
                                      "setup.cfg": SETUP_CFG, "cfgpkg/__init__.py": ""}, "setup.cfg")
    shas["hatch"] = commit(repo, {"setup.py": None, "setup.cfg": None, "pyproject.toml": HATCH,
                                  "hatchpkg/__init__.py": ""}, "hatch")
    shas["poetry"] = commit(repo, {"pyproject.toml": POETRY, "poetrypkg/__init__.py": ""}, "poetry")
    shas["broken"] = commit(repo, {"pyproject.toml": None, "setup.py": "raise RuntimeError('no version file')\n"},
                            "broken")
    return repo, shas


def test_setup_py_computing_install_requires_is_read_by_running_it(styles, tmp_path):
    repo, shas = styles
    assert "idna<3" not in infer_environment(repo, shas["setup.py"]).requirements  # a call: static reading misses it
    meta = read_metadata(repo, shas["setup.py"], cache=tmp_path)
    assert meta.error is None and meta.name == "computed"
    runtime, tests = split_requires_dist(meta.requires_dist)
    assert sorted(runtime) == ["idna<3", "urllib3<1.27,>=1.21.1"]
    assert tests == ["trustme"]  # the test extra; the socks extra is not for the tests
    assert meta.tests_require == ("pytest-mock", "pytest>=3")  # setup(tests_require=...): not in METADATA
    started = time.monotonic()
    assert read_metadata(repo, shas["same packaging"], cache=tmp_path) == meta  # same packaging files: cached
    assert time.monotonic() - started < 1 and len(list(tmp_path.glob("*.json"))) == 1


def test_setup_cfg_hatch_and_poetry_metadata(styles, tmp_path):
    repo, shas = styles
    cfg = read_metadata(repo, shas["setup.cfg"], cache=tmp_path)
    assert cfg.error is None and cfg.requires_python == ">=3.7"
    assert split_requires_dist(cfg.requires_dist) == (["attrs>=20", "six"], ["hypothesis"])
    hatch = read_metadata(repo, shas["hatch"], cache=tmp_path)
    assert hatch.error is None and hatch.backend == "hatchling.build"
    assert split_requires_dist(hatch.requires_dist) == (["click>=7"], ["pytest-timeout"])  # no win32 colorama
    poetry = read_metadata(repo, shas["poetry"], cache=tmp_path)
    assert poetry.error is None and poetry.requires_python.startswith(">=3.8")
    runtime, tests = split_requires_dist(poetry.requires_dist)
    assert runtime == ["toml<0.11,>=0.10"] and tests == ["tomli>=1.1"]
    # the test group is not in METADATA: the static reading adds it
    assert "pytest-randomly<3.13,>=3.12" in infer_environment(repo, shas["poetry"]).requirements


def test_a_backend_that_fails_says_why(styles, tmp_path):
    repo, shas = styles
    meta = read_metadata(repo, shas["broken"], cache=tmp_path)
    assert meta.error.startswith(f"setuptools.build_meta:__legacy__ could not prepare the metadata at "
                                 f"{shas['broken'][:12]}")
    assert "RuntimeError: no version file" in meta.error
