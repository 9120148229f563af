"""BFCL's install: ``envgym bfcl setup --check`` and every BFCL entry point say exactly what to run when
bfcl-eval is missing, at another version or missing a dependency (exit 2, no traceback), and report ready
where it imports. Runs in any environment: the installed package is the other side of the boundary, faked
by a distribution put first on the path of a child process where a case needs it."""

from __future__ import annotations

import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

from envgym_bfcl.install import REQUIREMENT, SETUP, VERSION

CLI = "import sys; from envgym.cli import main; sys.exit(main(sys.argv[1:]))"


def envgym(*argv: str, path: Path | None = None) -> tuple[int, str]:
    """``envgym ARGV`` in a child process: its exit code and everything it printed (errors go to stderr)."""
    import os

    env = {**os.environ, "COLUMNS": "400"}  # one line per message
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(path), env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", CLI, *argv], capture_output=True, text=True, env=env, timeout=300)
    return done.returncode, done.stdout + done.stderr


def fake_bfcl_eval(root: Path, version: str, utils: str = "") -> Path:
    """A ``bfcl-eval`` distribution of ``version`` whose ``bfcl_eval.utils`` runs ``utils``."""
    (root / "bfcl_eval").mkdir(parents=True)
    (root / "bfcl_eval" / "__init__.py").write_text("")
    (root / "bfcl_eval" / "utils.py").write_text(utils)
    info = root / f"bfcl_eval-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: bfcl-eval\nVersion: {version}\n")
    return root


def test_setup_check_reports_this_environment_as_it_is() -> None:
    code, text = envgym("bfcl", "setup", "--check")
    assert "Traceback" not in text
    if find_spec("bfcl_eval") is None:  # the main venv: what a newcomer who has not run the install sees
        assert code == 2
        assert f"run {SETUP}" in text
    else:  # .venv-bfcl, built by exactly that install
        assert code == 0, text
        assert f"{REQUIREMENT} is installed and imports" in text


@pytest.mark.skipif(find_spec("bfcl_eval") is not None, reason="bfcl-eval is installed here")
def test_a_bfcl_env_without_bfcl_eval_names_the_install_command() -> None:
    code, text = envgym("check", "bfcl/irrelevance-v1")
    assert code == 2 and "Traceback" not in text
    assert f"run {SETUP}" in text


def test_another_bfcl_eval_version_asks_for_setup(tmp_path: Path) -> None:
    code, text = envgym("bfcl", "setup", "--check", path=fake_bfcl_eval(tmp_path, "2025.1.1"))
    assert code == 2 and "Traceback" not in text
    assert f"bfcl-eval 2025.1.1 is installed, the bfcl suites are built from {VERSION}" in text
    assert f"run envgym bfcl setup (it installs {REQUIREMENT})" in text


def test_a_dependency_bfcl_eval_imports_that_is_missing_asks_for_the_extra(tmp_path: Path) -> None:
    fake = fake_bfcl_eval(tmp_path, VERSION, utils="import envgym_test_absent_sdk\n")
    code, text = envgym("bfcl", "setup", path=fake)  # installed as pinned: setup does not run pip, it names the extra
    assert code == 2 and "Traceback" not in text
    assert "cannot import bfcl_eval.utils (module 'envgym_test_absent_sdk' is missing)" in text
    assert "pip install 'envgym[bfcl]'" in text and "installing" not in text
