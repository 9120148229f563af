"""Pinning as of a commit's date against a package index served on loopback (PEP 691 JSON with upload times).

The index holds ``envgym-fake-alpha`` 1.0 (2020) and 2.0 (2022, needing ``envgym-fake-beta>=2``),
``envgym-fake-beta`` 1.0 (2020) and 2.0 (2022), and a stand-in ``pytest`` 8.3.5 (the grader's pin). Host only,
except the last tests (``docker``), which build a repository image from what was pinned and import its package.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import json
import os
import subprocess
import threading
import zipfile
from pathlib import Path

import pytest

from envgym_swe import images, metadata, resolve
from envgym_swe.environment import resolved_environment
from envgym_swe.images import ImageSpec, ensure_image, import_names
from envgym_swe.instances import DEFAULT_INSTALL

PACKAGES = {  # name -> [(version, upload time, requires)]
    "envgym-fake-alpha": [("1.0", "2020-01-01T00:00:00Z", []),
                          ("2.0", "2022-01-01T00:00:00Z", ["envgym-fake-beta>=2"])],
    "envgym-fake-beta": [("1.0", "2020-01-01T00:00:00Z", []), ("2.0", "2022-01-01T00:00:00Z", [])],
    "pytest": [("8.3.5", "2024-03-02T00:00:00Z", [])],
}


def wheel(name: str, version: str, requires: list[str]) -> tuple[str, bytes]:
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    files = {f"{dist}/__init__.py": f"VERSION = {version!r}\n",
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                 + "".join(f"Requires-Dist: {r}\n" for r in requires),
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: envgym-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = [f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).decode().rstrip('=')},"
              f"{len(text.encode())}" for path, text in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = "\n".join(record) + "\n"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return f"{dist}-{version}-py3-none-any.whl", buf.getvalue()


@pytest.fixture
def index(tmp_path, monkeypatch):
    """A PEP 691 index on 127.0.0.1 that uv and pip use; caches and the wheel cache in tmp_path."""
    blobs: dict[str, bytes] = {}
    pages: dict[str, list[dict]] = {}
    for name, releases in PACKAGES.items():
        for version, uploaded, requires in releases:
            filename, data = wheel(name, version, requires)
            blobs[filename] = data
            pages.setdefault(name, []).append({"filename": filename, "upload-time": uploaded,
                                               "hashes": {"sha256": hashlib.sha256(data).hexdigest()}})

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self):
            self.do_GET(head=True)

        def do_GET(self, head=False):
            parts = self.path.strip("/").split("/")
            if parts[0] == "simple" and len(parts) == 2 and parts[1] in pages:
                base = f"http://127.0.0.1:{self.server.server_port}/files/"
                body = json.dumps({"meta": {"api-version": "1.1"}, "name": parts[1], "versions": [],
                                   "files": [{**f, "url": base + f["filename"]} for f in pages[parts[1]]]}).encode()
                kind = "application/vnd.pypi.simple.v1+json"
            elif parts[0] == "files" and len(parts) == 2 and parts[1] in blobs:
                body, kind = blobs[parts[1]], "application/octet-stream"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_port}/simple"
    for key, value in {"UV_DEFAULT_INDEX": url, "UV_CACHE_DIR": str(tmp_path / "uv"), "UV_NO_CONFIG": "1",
                       "PIP_INDEX_URL": url, "PIP_EXTRA_INDEX_URL": "", "PIP_FIND_LINKS": "",
                       "PIP_CONFIG_FILE": os.devnull, "PIP_NO_CACHE_DIR": "1"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(images, "WHEEL_CACHE", tmp_path / "wheels")
    monkeypatch.setattr(resolve, "CACHE", tmp_path / "resolved")
    monkeypatch.setattr(metadata, "CACHE", tmp_path / "metadata")
    yield url
    server.shutdown()
    server.server_close()


def test_nothing_newer_than_the_date_is_pinned(index):
    old = resolve.resolve(["envgym-fake-alpha"], date="2021-06-01T00:00:00Z", python="3.11", cache=None)
    assert old.error is None and old.pins == ("envgym-fake-alpha==1.0",)
    new = resolve.resolve(["envgym-fake-alpha"], date="2023-06-01T00:00:00Z", python="3.11", cache=None)
    assert new.pins == ("envgym-fake-alpha==2.0", "envgym-fake-beta==2.0")  # and 2.0's own dependency
    # the grader's test stack is never cut off: pytest 8.3.5 was uploaded after 2021
    with_pytest = resolve.resolve(["envgym-fake-beta", "pytest==8.3.5"], date="2021-06-01T00:00:00Z", python="3.11",
                                  cache=None)
    assert with_pytest.pins == ("envgym-fake-beta==1.0", "pytest==8.3.5")


def test_a_requirement_newer_than_the_date_says_so_with_the_resolvers_words(index):
    res = resolve.resolve(["envgym-fake-alpha>=2"], date="2021-06-01T00:00:00Z", python="3.11", cache=None)
    assert not res.pins and "envgym-fake-alpha" in res.error and "--exclude-newer 2021-06-01T00:00:00Z" in res.error
    assert "No solution found" in res.error and "only envgym-fake-alpha==1.0 is available" in res.error


def test_resolutions_are_cached_and_failures_are_not(index, tmp_path):
    cache = tmp_path / "cache"
    first = resolve.resolve(["envgym-fake-beta"], date="2021-06-01T00:00:00Z", python="3.11", cache=cache)
    assert len(list(cache.glob("*.json"))) == 1
    assert resolve.resolve(["envgym-fake-beta"], date="2021-06-01T00:00:00Z", python="3.11", cache=cache) == first
    resolve.resolve(["envgym-fake-alpha>=3"], date="2021-06-01T00:00:00Z", python="3.11", cache=cache)
    assert len(list(cache.glob("*.json"))) == 1


def test_a_pin_that_does_not_build_is_retried_undated_and_named(index):
    seen = []

    def check(pins):
        seen.append(pins)
        if "envgym-fake-beta==1.0" in pins:  # as pip reports a wheel that did not build
            raise images.SandboxError("ERROR: Failed building wheel for envgym-fake-beta")

    res = resolve.resolve(["envgym-fake-beta"], date="2021-06-01T00:00:00Z", python="3.11", cache=None, check=check)
    assert res.pins == ("envgym-fake-beta==2.0",) and res.newer == ("envgym-fake-beta",) and len(seen) == 2


def git(repo: Path, *args: str, date: str | None = None) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@localhost", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@localhost",
           **({"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else {})}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def commit(repo: Path, files: dict[str, str], date: str) -> str:
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", f"at {date}", date=date)
    return git(repo, "rev-parse", "HEAD")


SETUP = """from setuptools import setup

def requirements():
    return [line.strip() for line in open("deps.txt") if line.strip()]

requires = requirements()
setup(name="lib", version="0.1", packages=["lib"], install_requires=requires)
"""


@pytest.fixture
def history(tmp_path):
    """``lib``: a setup.py whose install_requires is computed from a file, committed in 2021; a source change in
    2021 (the same era); a new setup.py in 2023 (a new era)."""
    repo = tmp_path / "lib"
    repo.mkdir()
    git(repo, "init", "-q")
    files = {"setup.py": SETUP, "deps.txt": "envgym-fake-alpha\n",
             "lib/__init__.py": "import envgym_fake_alpha\n\nALPHA = envgym_fake_alpha.VERSION\n",
             "tests/test_lib.py": "import lib\n\n\ndef test_alpha():\n    assert lib.ALPHA\n"}
    first = commit(repo, files, "2021-03-01T12:00:00+00:00")
    second = commit(repo, {"lib/util.py": "X = 1\n"}, "2021-04-01T12:00:00+00:00")
    third = commit(repo, {"setup.py": SETUP + "# 2023\n"}, "2023-04-01T12:00:00+00:00")
    return repo, first, second, third


@pytest.mark.docker
def test_each_era_gets_the_releases_of_its_date_and_an_era_shares_one_environment(index, history):
    repo, first, second, third = history
    envs = [resolved_environment(repo, c) for c in (first, second, third)]
    assert [e.problem for e in envs] == [None, None, None]
    assert envs[0].requirements == ("envgym-fake-alpha==1.0",)  # a variable computed from a file: read by the backend
    assert envs[0].pinned_at == envs[1].pinned_at == "2021-03-01T12:00:00Z"  # the era began when setup.py did
    assert envs[0].version == envs[1].version  # the same pins: one environment, one image
    assert envs[2].requirements == ("envgym-fake-alpha==2.0", "envgym-fake-beta==2.0")
    assert envs[2].version != envs[0].version
    assert envs[2].pinned_at == "2023-04-01T12:00:00Z"
    assert len(list(metadata.CACHE.glob("*.json"))) == 2  # read once per state of the packaging files


@pytest.mark.docker
def test_an_era_that_cannot_be_built_says_why_before_any_image(index, tmp_path):
    repo = tmp_path / "late"
    repo.mkdir()
    git(repo, "init", "-q")
    c = commit(repo, {"setup.py": SETUP, "deps.txt": "envgym-fake-alpha>=2\n", "lib/__init__.py": ""},
               "2021-03-01T12:00:00+00:00")
    env = resolved_environment(repo, c)
    assert env.problem.startswith("the requirements do not resolve as of 2021-03-01T12:00:00Z for Python 3.11")
    assert "envgym-fake-alpha" in env.problem and "hint:" in env.problem


@pytest.mark.docker
def test_an_image_of_a_pinned_era_imports_its_package_and_a_broken_one_says_why(index, history,
                                                                               no_leftover_containers):
    repo, first, _, _ = history
    env = resolved_environment(repo, first)
    assert import_names(repo, first, "me/lib") == ("lib",)
    spec = ImageSpec(repo="me/lib", version=env.version, commits=(first,), requirements=env.requirements,
                     install=DEFAULT_INSTALL)
    tag, built = ensure_image(spec, repo, force=True)
    try:
        assert built
        out = subprocess.run(["docker", "run", "--rm", "--network", "none", "-w", "/testbed", tag, "python3", "-c",
                              "import lib; print(lib.ALPHA)"], capture_output=True, text=True)
        assert out.stdout.strip() == "1.0", out.stderr
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)
    # without its requirement the image builds, but its package does not import: removed, with the import error
    bare = spec.model_copy(update={"requirements": (), "install": DEFAULT_INSTALL + " --no-deps"})
    with pytest.raises(images.SandboxError) as caught:
        ensure_image(bare, repo, force=True)
    assert "No module named 'envgym_fake_alpha'" in str(caught.value) and "import lib" in str(caught.value)
    assert subprocess.run(["docker", "image", "inspect", images.image_tag(bare)], capture_output=True).returncode
    # an install step that fails names pip's own error and says what would fix it
    broken = spec.model_copy(update={"requirements": (), "install": DEFAULT_INSTALL + " envgym-fake-gamma"})
    with pytest.raises(images.SandboxError) as caught:
        ensure_image(broken, repo, force=True)
    message = str(caught.value)
    assert "No matching distribution found for envgym-fake-gamma" in message
    assert "last lines of the build log" in message and "hint: no wheel of envgym-fake-gamma was fetched" in message


def test_a_stale_tests_require_gives_way_to_the_requirement_files(tmp_path):
    """requests' 2022 setup.py: ``tests_require`` (a variable) pins pytest-httpbin==0.0.7, requirements-dev.txt
    ==1.0.0; both at once can never resolve."""
    from envgym_swe.environment import infer_environment

    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    c = commit(repo, {"setup.py": "from setuptools import setup\n\ntest_requirements = ['pytest-httpbin==0.0.7', "
                                  "'pytest-mock']\nsetup(name='r', tests_require=test_requirements)\n",
                      "requirements-dev.txt": "pytest-httpbin==1.0.0\n", "r/__init__.py": ""}, "2022-03-01T00:00:00Z")
    assert infer_environment(repo, c).requirements == ("pytest-httpbin==1.0.0", "pytest-mock")


def test_a_pytest_pin_the_graders_pytest_does_not_satisfy_gives_way(index, tmp_path):
    """tomlkit's Poetry test group pins ``pytest = "^7.2.0"``: beside the grader's pytest 8.3.5 nothing resolved
    ('Because you require pytest>=7.2.0,<8 and pytest==8.3.5 ...'), so no commit of 2024-2026 was a candidate."""
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    c = commit(repo, {"requirements-test.txt": "pytest>=7.2.0,<8\nenvgym-fake-alpha\n", "lib.py": "X = 1\n"},
               "2021-03-01T00:00:00Z")
    env = resolved_environment(repo, c)
    assert env.problem is None, env.problem
    assert env.requirements == ("envgym-fake-alpha==1.0",)  # the image's pytest, not a pin of it
