"""One plug-in path: first-party families import envgym only through the published surface, ``envgym.plugin``.

An AST scan of every module of every family package (``environments/*/envgym_*``): each import statement,
those inside functions and ``TYPE_CHECKING`` blocks included, may name ``envgym.plugin`` or a submodule of
it, and nothing else of envgym. The root ``envgym`` is allowed in one form only, ``from envgym import NAME``
with ``NAME`` in ``envgym.__all__`` (the user's API, e.g. ``make`` for an authoring script that runs its
own env); a bare ``import envgym`` is not (its attributes would escape the scan). A violation is reported
as ``file:line``.

The kernel below never imports the surface. And the surface itself is exact: every name of each
``envgym.plugin`` module's ``__all__`` imports, and ``__all__`` equals the module's public attributes
(submodules of the package aside); each module states its SemVer promise.
"""

from __future__ import annotations
import __future__

import ast
import importlib
import pkgutil
import types
from pathlib import Path

import pytest

import envgym
import envgym.plugin

REPO = Path(__file__).resolve().parents[1]
FAMILY_FILES = sorted(REPO.glob("environments/*/envgym_*/**/*.py"))
SURFACE = "envgym.plugin"
PLUGIN_MODULES = [SURFACE, *(f"{SURFACE}.{m.name}" for m in pkgutil.iter_modules(envgym.plugin.__path__))]


def _allowed(module: str) -> bool:
    return module == SURFACE or module.startswith(SURFACE + ".")


def _envgym(module: str) -> bool:
    return module == "envgym" or module.startswith("envgym.")


def violations(path: Path, root_names: frozenset[str]) -> list[str]:
    """``file:line: what`` for every import in ``path`` of envgym outside the plug-in surface."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        where = f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}:{node.lineno}" \
            if isinstance(node, ast.Import | ast.ImportFrom) else ""
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "envgym" or (_envgym(alias.name) and not _allowed(alias.name)):
                    found.append(f"{where}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and _envgym(node.module):
            if node.module == "envgym":
                for alias in node.names:
                    if alias.name == SURFACE.rpartition(".")[2]:
                        continue  # from envgym import plugin
                    if alias.name not in root_names:
                        found.append(f"{where}: from envgym import {alias.name} (from envgym.plugin, or not public)")
            elif not _allowed(node.module):
                found.append(f"{where}: from {node.module} import {', '.join(a.name for a in node.names)}")
    return found


def test_the_scan_sees_every_family():
    families = {path.relative_to(REPO).parts[1] for path in FAMILY_FILES}
    assert {"tool", "timed", "web", "gui", "swe", "mcp", "bfcl", "textgames"} <= families


def test_families_import_only_the_plugin_surface():
    root_names = frozenset(envgym.__all__) - frozenset(envgym.plugin.__all__)
    found = [line for path in FAMILY_FILES for line in violations(path, root_names)]
    assert not found, f"{len(found)} imports of envgym outside envgym.plugin:\n" + "\n".join(found)


def test_the_kernel_never_imports_the_plugin_surface():
    # the surface sits on top of the kernel: an import of it from below would be a circle
    found = []
    for path in sorted((REPO / "envgym").rglob("*.py")):
        if (REPO / "envgym" / "plugin") in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names] \
                if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            if any(_allowed(name) for name in names):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not found, f"kernel modules import envgym.plugin: {found}"


def test_the_scan_catches_every_form(tmp_path):
    module = tmp_path / "family.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "import envgym.plugin\n"
        "from envgym.plugin import Env\n"
        "from envgym.plugin.sandbox import Sandbox\n"
        "from envgym import make\n"
        "from envgym import plugin\n"
        "if TYPE_CHECKING:\n"
        "    from envgym.task import TaskSpec\n"          # 8
        "def f():\n"
        "    import envgym\n"                            # 10
        "    import envgym.sandbox.docker as d\n"        # 11
        "    from envgym import _lazy\n"                 # 12
        "    from envgym.pluginx import y\n",            # 13
        encoding="utf-8")
    lines = [v.split(":")[1] for v in violations(module, frozenset({"make"}))]
    assert lines == ["8", "10", "11", "12", "13"]


@pytest.mark.parametrize("name", PLUGIN_MODULES)
def test_plugin_module_all_is_exact(name):
    module = importlib.import_module(name)
    assert (module.__doc__ or "").strip() and "Semantic Versioning" in module.__doc__, f"{name} states no promise"
    exported = module.__all__
    assert len(set(exported)) == len(exported), f"{name}.__all__ has duplicates"
    namespace: dict[str, object] = {}
    exec(f"from {name} import *", namespace)  # raises if a listed name is missing
    assert set(exported) <= set(namespace)
    submodules = {m for m in PLUGIN_MODULES if m.startswith(name + ".")}
    public = {attr for attr, value in vars(module).items() if not attr.startswith("_")
              and not isinstance(value, __future__._Feature)
              and not (isinstance(value, types.ModuleType) and value.__name__ in submodules)}
    assert public == set(exported), (f"{name}: public but not in __all__: {sorted(public - set(exported))}; "
                                     f"in __all__ but absent: {sorted(set(exported) - public)}")


def test_the_core_loads_no_heavy_part():
    import subprocess
    import sys

    code = ("import sys, envgym.plugin; print(' '.join(m for m in ('docker', 'gymnasium', 'playwright', 'httpx',"
            " 'envgym.sandbox.docker', 'envgym.timed.world', 'envgym.record') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert loaded == []
