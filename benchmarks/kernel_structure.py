"""The kernel's structure, counted from the source (issue 35's figures): function-level ``envgym.*`` imports
inside ``envgym/``, import circles among kernel modules (runtime imports, deferred ones included; imports under
``if TYPE_CHECKING:`` never run and are left out), and the kernel modules the families import.

    python benchmarks/kernel_structure.py [REPO]     # REPO: another checkout (e.g. a git worktree of an old commit)

It reads ``REPO/tests/test_layers.py``'s scan (older checkouts without ``runtime_imports`` fall back to every
import statement, TYPE_CHECKING ones included).
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path


def _layers(repo: Path):
    spec = importlib.util.spec_from_file_location("kernel_structure_layers", repo / "tests" / "test_layers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _imports_envgym(node: ast.AST) -> bool:
    if isinstance(node, ast.ImportFrom):
        return bool(node.level) or (node.module or "").startswith("envgym")
    return isinstance(node, ast.Import) and any(a.name.startswith("envgym") for a in node.names)


def _deferred(source: str) -> int:
    """Imports of envgym inside functions (deferred to a call)."""
    return sum(_imports_envgym(inner) for node in ast.walk(ast.parse(source))
               if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) for inner in ast.walk(node))


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in graph:
        if v not in index:
            visit(v)
    return found


def main() -> None:
    repo = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]).resolve()
    layers = _layers(repo)
    sources = layers.SOURCES
    kernel = [m for m in sources if m == "envgym" or m.startswith("envgym.")]

    def home(name: str) -> str:
        while name and name not in sources:
            name = name.rpartition(".")[0]
        return name

    edges = getattr(layers, "runtime_imports", None) or (lambda m: {home(n) for n in layers.imported(m)})
    graph = {m: {n for n in edges(m) if n in kernel and n != m} for m in kernel}
    circles = _circles(graph)
    families = [m for m in sources if m not in kernel]
    used = sorted({home(n) for m in families for n in layers.imported(m)
                   if (n == "envgym" or n.startswith("envgym.")) and home(n)})
    rows = [("kernel modules", str(len(kernel))),
            ("function-level envgym.* imports in envgym/", str(sum(_deferred(sources[m].read_text()) for m in kernel))),
            ("kernel import circles (sizes)", f"{len(circles)} {[len(c) for c in circles]}"),
            ("kernel modules the families import", str(len(used)))]
    width = max(len(r[0]) for r in rows)
    print(f"{repo}")
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
    print("  families import:", ", ".join(used))


if __name__ == "__main__":
    main()
