"""The distribution ships every package of the tree (pyproject lists them by hand)."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_directory_is_listed():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    found = set()
    for name, folder in setuptools["package-dir"].items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            parts = init.parent.relative_to(base).parts
            found.add(".".join((name, *parts)))
    missing = sorted(p for p in found - listed if "__pycache__" not in p)
    assert not missing, f"add to [tool.setuptools] packages: {missing}"
    assert not sorted(listed - found), "packages listed without an __init__.py"
