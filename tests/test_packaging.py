"""The distribution ships every package of the tree (pyproject lists them by hand), and no folder of the checkout
is importable under a bare name that shadows a real package (PyPI's ``verifiers`` above all)."""

import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
# Data only, mapped onto a top-level folder that must not be a regular package: a namespace package.
NAMESPACE_PACKAGES = {"envgym_tasks"}


def test_every_package_directory_is_listed():
    listed = set(SETUPTOOLS["packages"])
    found = set()
    for name, folder in SETUPTOOLS["package-dir"].items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            parts = init.parent.relative_to(base).parts
            found.add(".".join((name, *parts)))
    missing = sorted(p for p in found - listed if "__pycache__" not in p)
    assert not missing, f"add to [tool.setuptools] packages: {missing}"
    assert listed - found == NAMESPACE_PACKAGES, "packages listed without an __init__.py"


def test_no_top_level_folder_is_a_package_by_a_bare_name():
    # Only envgym/ is a package under its folder's name; every other top-level folder is at most a namespace
    # portion, which any regular package of that name elsewhere on sys.path (site-packages) outranks.
    folders = sorted(p.name for p in ROOT.iterdir() if p.is_dir() and p.name.isidentifier() and p.name != "envgym")
    regular = [name for name in folders if (ROOT / name / "__init__.py").exists()]
    assert not regular, f"top-level folders that are regular packages by a bare name: {regular}"
    mapped = {name: folder for name, folder in SETUPTOOLS["package-dir"].items() if "/" not in folder}
    assert mapped == {"envgym": "envgym", "envgym_tasks": "tasks"}, "a package mapped onto a top-level folder"


def test_import_verifiers_from_the_checkout_root_is_pypis():
    try:
        metadata.distribution("verifiers")
    except metadata.PackageNotFoundError:
        pytest.skip("PyPI's verifiers is not installed (the train extra)")
    # python -c puts the working directory first on sys.path, as running from the checkout root does.
    code = "import verifiers, envgym_verifiers, envgym_tasks, envgym_leaderboard; print(verifiers.__file__)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    location = out.stdout.strip()
    assert location != "None", "import verifiers found only the checkout's folder verifiers/"
    assert not Path(location).resolve().is_relative_to(ROOT / "verifiers"), f"import verifiers loaded {location}"


def test_every_file_of_the_task_data_is_in_the_package_data():
    # setuptools' package-data globs do not cross folders: a suite nested one level deeper (tasks/swe-injected/<lib>/)
    # needs its own patterns, or a built wheel silently lacks it.
    base = ROOT / "tasks"
    covered = {p for pattern in SETUPTOOLS["package-data"]["envgym_tasks"] for p in base.glob(pattern)}
    files = {p for p in base.rglob("*") if p.is_file() and "__pycache__" not in p.parts and not p.name.startswith(".")}
    missing = sorted(str(p.relative_to(base)) for p in files - covered)
    assert not missing, f"add to [tool.setuptools.package-data] envgym_tasks: {missing[:10]}"
