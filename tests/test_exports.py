"""The public API, exactly: every package's ``__all__`` lists its public names and nothing else.

For every public package, found by walking the tree so a new one is covered (every package under ``envgym/``
outside ``_``-prefixed folders, and every family package ``environments/<family>/envgym_*`` with its
subpackages): it has an ``__all__`` without duplicates; every name in it imports (``from PKG import *``);
and it equals the package's public attributes, as httpx's ``test_exported_members``. A public attribute is
any name without a leading underscore the package binds: by ``def``, ``class`` or assignment, by importing it
from envgym or a family (a re-export), or lazily on first use (PEP 562, seen through ``dir()``). Not counted:
the package's own submodules (bound as attributes once imported, listed or not), ``from __future__``
features, and helpers imported from outside the project (``Path``, ``Any``, ...), unless listed.
"""

from __future__ import annotations
import __future__

import ast
import importlib
import sys
import types
from pathlib import Path

import pytest

import envgym

ROOT = Path(envgym.__file__).parent
REPO = ROOT.parent
KERNEL_PACKAGES = sorted(".".join(init.parent.relative_to(REPO).parts) for init in ROOT.rglob("__init__.py")
                         if not any(part.startswith(("_", ".")) for part in init.parent.relative_to(ROOT).parts))
FAMILY_PACKAGES = sorted(".".join(init.parent.relative_to(family.parent).parts)
                         for family in REPO.glob("environments/*/envgym_*") for init in family.rglob("__init__.py"))
PACKAGES = KERNEL_PACKAGES + FAMILY_PACKAGES
PROJECT = ("envgym", *sorted({package.partition(".")[0] for package in FAMILY_PACKAGES}))


def defined_names(init: Path) -> set[str]:
    """Public names bound at the top level of a module by def, class or assignment (not by import)."""
    names: set[str] = set()
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {name for name in names if not name.startswith("_")}


def foreign_imports(init: Path) -> set[str]:
    """Names bound at the top level of a module by importing from outside the project (stdlib, third party)."""
    names: set[str] = set()
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            names.update(alias.asname or alias.name.partition(".")[0] for alias in node.names
                         if alias.name.partition(".")[0] not in PROJECT)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 \
                and (node.module or "").partition(".")[0] not in PROJECT:
            names.update(alias.asname or alias.name for alias in node.names)
    return names


def public_attributes(module: types.ModuleType) -> set[str]:
    """What ``module`` exposes: see the module docstring for what is counted."""
    exported = set(getattr(module, "__all__", ()))
    helpers = foreign_imports(Path(module.__file__)) - exported
    names = set()
    for name in dir(module):
        if name.startswith("_") or name in helpers:
            continue
        value = getattr(module, name)
        if isinstance(value, __future__._Feature):
            continue
        submodule = isinstance(value, types.ModuleType) and value.__name__ == f"{module.__name__}.{name}"
        if submodule and name not in exported:
            continue
        names.add(name)
    return names


def test_every_package_is_found():
    assert {"envgym", "envgym.leaderboard", "envgym.rl", "envgym.rl.train", "envgym.testing",
            "envgym.plugin"} <= set(PACKAGES)
    assert {"envgym_tool", "envgym_timed", "envgym_web", "envgym_gui", "envgym_swe", "envgym_mcp", "envgym_bfcl",
            "envgym_textgames", "envgym_tool.domains", "envgym_web.apps"} <= set(PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_importable_and_exact(package):
    module = importlib.import_module(package)
    exported = getattr(module, "__all__", None)
    assert isinstance(exported, list), f"{package} has no __all__ list"
    assert len(set(exported)) == len(exported), f"{package}.__all__ has duplicates"
    namespace: dict[str, object] = {}
    exec(f"from {package} import *", namespace)  # raises if a listed name is missing
    assert set(exported) <= set(namespace)
    public = public_attributes(module)
    assert public == set(exported), (f"{package}: public but not in __all__: {sorted(public - set(exported))}; "
                                     f"in __all__ but not bound: {sorted(set(exported) - public)}")
    missing = defined_names(Path(module.__file__)) - set(exported)
    assert not missing, f"public names of {package} not in its __all__: {sorted(missing)}"


def test_root_exports_exactly_its_public_attributes():
    # dir() is vars() plus the names the root imports lazily (PEP 562) before their first use
    public = {name for name in dir(envgym) if not name.startswith("_")
              and not isinstance(getattr(envgym, name), types.ModuleType | __future__._Feature)}
    assert public == set(envgym.__all__)
    assert envgym.__all__ == sorted(envgym.__all__)


def test_the_check_catches_an_unexported_name(tmp_path):
    init = tmp_path / "__init__.py"
    init.write_text("from os import path\n\n__all__ = ['a']\na = 1\nb: int = 2\n\ndef c(): ...\n\n"
                    "class _D: ...\n", encoding="utf-8")
    assert defined_names(init) - {"a"} == {"b", "c"}


def test_the_check_catches_a_reexport(tmp_path, monkeypatch):
    package = tmp_path / "envgym_exportprobe"
    package.mkdir()
    (package / "sub.py").write_text("", encoding="utf-8")
    (package / "__init__.py").write_text(
        "from __future__ import annotations\nimport re\nfrom pathlib import Path\n"
        "from envgym.types import Verdict\nfrom envgym_exportprobe import sub\n"
        "__all__ = ['a']\na = 1\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys.modules[__name__], "PROJECT", (*PROJECT, "envgym_exportprobe"))
    assert public_attributes(importlib.import_module("envgym_exportprobe")) == {"a", "Verdict"}
