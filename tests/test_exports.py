"""The public API, exactly: every package's ``__all__`` lists its public names and nothing else.

For every package under ``envgym/`` (found by walking the tree, so a new one is covered): it has an
``__all__`` without duplicates; every name in it imports (``from PKG import *`` and ``getattr``); every
public name its ``__init__`` defines (``def``, ``class``, assignment) is in it. For the root package the
check is attribute-exact, as httpx's ``test_exported_members``: every public attribute of ``envgym`` is
in ``__all__`` or is a submodule, the names it imports lazily on first use included.
"""

from __future__ import annotations
import __future__

import ast
import importlib
import types
from pathlib import Path

import pytest

import envgym

ROOT = Path(envgym.__file__).parent
PACKAGES = sorted(".".join(init.parent.relative_to(ROOT.parent).parts) for init in ROOT.rglob("__init__.py")
                  if not any(part.startswith(("_", ".")) for part in init.parent.relative_to(ROOT).parts))


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


def test_every_package_is_found():
    assert {"envgym", "envgym.leaderboard", "envgym.rl", "envgym.rl.train", "envgym.testing"} <= set(PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_importable_and_complete(package):
    module = importlib.import_module(package)
    exported = getattr(module, "__all__", None)
    assert isinstance(exported, list), f"{package} has no __all__ list"
    assert len(set(exported)) == len(exported), f"{package}.__all__ has duplicates"
    namespace: dict[str, object] = {}
    exec(f"from {package} import *", namespace)  # raises if a listed name is missing
    assert set(exported) <= set(namespace)
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
