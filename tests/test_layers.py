"""Layer contracts, checked on the source: an AST scan of every import statement (lazy ones inside
functions and ``TYPE_CHECKING`` blocks included), no import-linter needed.

- The kernel (``envgym/``) imports no family package (``environments/*/envgym_*``).
- No family imports another family: what two families share lives in the kernel.
- The lower kernel layers (types, errors, clock, task, env, registry, verify, sandbox) import none of the
  upper ones (vector, eval, cli, leaderboard, rl).
- Inside ``envgym.rl`` the core (proxy, backends, samples, ...) imports neither ``rl.train`` nor
  ``rl.adapters``, and those two do not import each other.
- The leaderboard package has no import cycle among its modules (its ``__init__`` included).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
KERNEL = REPO / "envgym"
FAMILY_DIRS = sorted(REPO.glob("environments/*/envgym_*"))
FAMILIES = tuple(d.name for d in FAMILY_DIRS)

LOWER = ("envgym.types", "envgym.errors", "envgym.clock", "envgym.task", "envgym.env", "envgym.registry",
         "envgym.verify", "envgym.sandbox")
UPPER = ("envgym.vector", "envgym.eval", "envgym.cli", "envgym.leaderboard", "envgym.rl")


def _module_name(path: Path, base: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources() -> dict[str, Path]:
    found = {_module_name(p, REPO): p for p in KERNEL.rglob("*.py")}
    for family in FAMILY_DIRS:
        found.update({_module_name(p, family.parent): p for p in family.rglob("*.py")})
    return found


SOURCES = _sources()


def imported(module: str) -> set[str]:
    """Every dotted name ``module`` imports; ``from a import b`` gives both ``a`` and ``a.b``."""
    path = SOURCES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def modules_under(*prefixes: str) -> list[str]:
    return sorted(m for m in SOURCES if _within(m, prefixes))


def violations(importers: list[str], forbidden: tuple[str, ...]) -> list[str]:
    """``MODULE imports NAME`` for every import of a ``forbidden`` name (or below it) by an importer."""
    return [f"{module} imports {name}" for module in importers for name in sorted(imported(module))
            if _within(name, forbidden)]


def test_the_scan_sees_the_tree():
    assert {"envgym_tool", "envgym_timed", "envgym_web", "envgym_swe"} <= set(FAMILIES)
    assert "envgym.leaderboard.build" in SOURCES and "envgym_tool.env" in SOURCES
    assert "envgym.leaderboard.models" in imported("envgym.leaderboard.build")
    assert "envgym.types.FrozenModel" in imported("envgym.leaderboard.models")
    assert "envgym_tool.env imports envgym.tamper" in violations(["envgym_tool.env"], ("envgym.tamper",))


def test_kernel_imports_no_family():
    assert violations(modules_under("envgym"), FAMILIES) == []


@pytest.mark.parametrize("family", FAMILIES)
def test_no_family_imports_another(family):
    others = tuple(f for f in FAMILIES if f != family)
    assert violations(modules_under(family), others) == []


def test_lower_kernel_layers_import_no_upper_layer():
    assert violations(modules_under(*LOWER), UPPER) == []


def test_rl_core_imports_neither_trainer_nor_adapters():
    train, adapters = modules_under("envgym.rl.train"), modules_under("envgym.rl.adapters")
    core = [m for m in modules_under("envgym.rl") if m not in train + adapters]
    assert "envgym.rl" in core and "envgym.rl.proxy" in core
    assert violations(core, ("envgym.rl.train", "envgym.rl.adapters")) == []
    assert violations(train, ("envgym.rl.adapters",)) == []
    assert violations(adapters, ("envgym.rl.train",)) == []


def _cycle(package: str) -> list[str] | None:
    """An import cycle among ``package``'s modules, as a path, or None."""
    modules = set(modules_under(package))
    edges = {m: {n for n in imported(m) if n in modules and n != m} for m in modules}
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str] | None:
        if module in path:
            return [*path[path.index(module):], module]
        if module in done:
            return None
        for target in sorted(edges[module]):
            if (cycle := visit(target, [*path, module])) is not None:
                return cycle
        done.add(module)
        return None

    return next((c for m in sorted(modules) if (c := visit(m, [])) is not None), None)


def test_leaderboard_has_no_import_cycle():
    assert _cycle("envgym.leaderboard") is None


def test_the_cycle_check_finds_one(monkeypatch):
    real = imported

    def with_cycle(module: str) -> set[str]:
        extra = {"envgym.leaderboard.build"} if module == "envgym.leaderboard.stats" else set()
        return real(module) | extra

    monkeypatch.setattr(sys.modules[__name__], "imported", with_cycle)
    cycle = _cycle("envgym.leaderboard")
    assert cycle is not None and cycle[0] == cycle[-1] and "envgym.leaderboard.stats" in cycle
