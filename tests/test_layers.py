"""Layer contracts, checked on the source: an AST scan of every import statement (lazy ones inside
functions and ``TYPE_CHECKING`` blocks included), no import-linter needed.

- The kernel (``envgym/``) imports no family package (``environments/*/envgym_*``).
- No family imports another family: what two families share lives in the kernel.
- The lower kernel layers (types, errors, clock, task, env, registry, verify, sandbox) import none of the
  upper ones (vector, eval, cli, leaderboard, rl).
- Inside ``envgym.rl`` the core (proxy, backends, samples, ...) imports neither ``rl.train`` nor
  ``rl.adapters``, and those two do not import each other.
- The leaderboard package has no import cycle among its modules (its ``__init__`` included).
- The kernel has no import circle at all, deferred (function-level) imports included: only imports under
  ``if TYPE_CHECKING:`` (never run) may point up. Its core is a strict stack (:data:`CORE_ORDER`): each module
  imports only modules below it.
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


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the import nodes inside ``if TYPE_CHECKING:`` blocks (never executed)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    return skipped


def runtime_imports(module: str) -> set[str]:
    """The modules ``module`` imports when it runs (its functions' imports included, ``TYPE_CHECKING`` blocks
    not): ``from a import b`` is an edge to ``a.b`` when that is a module, else to ``a``. Names outside the
    scanned tree (the standard library, dependencies) are left out."""
    path = SOURCES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _type_checking_nodes(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(_nearest_module(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in SOURCES else _nearest_module(base))
    return {name for name in found if name and name != module}


def _nearest_module(name: str) -> str:
    while name and name not in SOURCES:
        name = name.rpartition(".")[0]
    return name


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
    assert "envgym_tool.env imports envgym.plugin" in violations(["envgym_tool.env"], ("envgym.plugin",))


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


def cycle_among(modules: set[str], edges_of) -> list[str] | None:
    """An import cycle among ``modules`` (``edges_of(module)``: the names it imports), as a path, or None."""
    edges = {m: {n for n in edges_of(m) if n in modules and n != m} for m in modules}
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


def _cycle(package: str, edges_of=None) -> list[str] | None:
    """An import cycle among ``package``'s modules (``edges_of``: :func:`imported` by default), or None."""
    return cycle_among(set(modules_under(package)), edges_of or (lambda m: imported(m)))


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


CORE_ORDER = (
    "envgym.types", "envgym.errors", "envgym._deprecation", "envgym.clock", "envgym._entry_points", "envgym._jsonl",
    "envgym.registry",
    "envgym.verify.matching", "envgym.verify.state", "envgym.verify.context", "envgym.verify.spec",
    "envgym.verify.answer", "envgym.verify.rubric",
    "envgym.verify.write_action", "envgym.verify._grade", "envgym.verify",
    "envgym.generate", "envgym.task", "envgym.env", "envgym.wrappers", "envgym.compose", "envgym.gym",
)
"""The kernel's core, bottom first: the tables, the generic verifier kinds, the tasks, the env contract, its
wrappers, ``make``, the Gymnasium facade. (A task generator's seed range is a suite, so ``envgym.generate``
sits just below ``task``, knowing a task only by its fields. ``envgym.verify``'s kinds sit below ``task``: a task
file names them.
The other kinds are plug-in packages under ``verifiers/``, outside the kernel; ``envgym.verify.tests`` and
``envgym.verify.timed`` are deprecated aliases that import nothing of envgym but ``_deprecation``.)"""


def test_the_kernel_has_no_import_circle():
    assert _cycle("envgym", runtime_imports) is None


def test_the_core_is_a_strict_stack():
    below: set[str] = set()
    upward = []
    for module in CORE_ORDER:
        upward += [f"{module} imports {name}" for name in sorted(runtime_imports(module))
                   if name in CORE_ORDER and name not in below]
        below.add(module)
    assert upward == []


def test_the_runtime_scan_sees_deferred_imports_and_skips_type_checking():
    assert "envgym.compose" in runtime_imports("envgym.gym")
    assert "envgym.verify.spec" in runtime_imports("envgym.task")  # module level
    assert "envgym.env" not in runtime_imports("envgym.verify")  # only under TYPE_CHECKING
    deferred = [m for m in SOURCES if m.startswith("envgym.")
                if any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                       and any(isinstance(i, ast.ImportFrom) and (i.module or "").startswith("envgym.")
                               for i in ast.walk(n))
                       for n in ast.walk(ast.parse(SOURCES[m].read_text(encoding="utf-8"))))]
    assert deferred and all(runtime_imports(m) for m in deferred[:5])
