import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envgym.sandbox import DaemonUnavailable
from envgym.sandbox.images import SANDBOXES, recipe_hash, recipes
from envgym.sandbox.reaper import EXPIRES, OWNER_HOST, OWNER_PID, orphan_reason, owner_labels


def test_own_labels_are_not_an_orphan():
    labels = owner_labels("run", 60)
    assert labels[OWNER_PID] == str(os.getpid())
    assert orphan_reason(labels) is None


def test_expired_or_ownerless_containers_are_orphans():
    assert orphan_reason(owner_labels("run", 60, now=0)) == "expired"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    labels = {**owner_labels("run", 60), OWNER_PID: dead.stdout.strip()}
    assert orphan_reason(labels) == "owner process gone"
    assert orphan_reason({**labels, OWNER_HOST: "elsewhere"}) is None  # only its expiry can tell
    assert orphan_reason({**labels, EXPIRES: "soon"}) == "bad expiry label"


def test_python_hash_matches_the_base_build_script():
    script = subprocess.run(["bash", str(SANDBOXES / "base" / "build.sh"), "--print-tag"], capture_output=True,
                            text=True, check=True)
    assert script.stdout.strip() == recipes()["base"].tag == f"envgym/base:{recipe_hash(SANDBOXES / 'base')}"


def test_tags_follow_content_and_the_base(tmp_path):
    root = tmp_path / "sandboxes"
    shutil.copytree(SANDBOXES, root)
    before = recipes(root)
    assert set(before) >= {"base", "python"}
    (root / "python" / "README.md").write_text("docs do not count")
    assert recipes(root) == {k: v.__class__(v.name, root / k, v.tag) for k, v in before.items()}
    (root / "base" / "packages.txt").write_text("python3\n")
    after = recipes(root)
    assert after["base"].tag != before["base"].tag and after["python"].tag != before["python"].tag


async def test_no_daemon_says_how_to_start_one():
    from envgym.sandbox.docker import DockerEngine, DockerSandbox

    engine = DockerEngine(base_url=f"unix://{Path('/nonexistent/docker.sock')}")
    with pytest.raises(DaemonUnavailable, match=r"host-setup\.sh"):
        await DockerSandbox("img", engine=engine).start()
    await engine.close()
