"""The cheap pre-filter of ``envgym swe mine``: does a change alter what the code does?

::

    why_not_a_fix(files)   # [(path, before, after)] -> None (keep) | "type annotations only" | ...

A candidate whose source changes are all no-ops costs a full labelling (two image runs a side) for nothing:
linting, reformatting, typo fixes in comments, "add inline types". Each changed ``.py`` file is parsed on
both sides with the running Python's grammar and compared as ``ast.dump`` (positions left out, so layout,
comments, quoting, parentheses and ``# type:`` comments never count), first as parsed (each run of adjacent
imports sorted, as isort would, and ``__future__`` imports that are no-ops on Python 3 left out), then with docstrings
stripped (every statement that is a bare constant: docstrings, attribute docstrings, ``...``; and ``pass``),
then with type annotations stripped too (argument and return annotations; ``x: T = v`` becomes ``x = v``
and a bare ``x: T`` goes, except in a class body, where it declares a field and only its type goes;
``if TYPE_CHECKING:`` bodies, imports from ``typing`` / ``typing_extensions``, ``from __future__ import
annotations`` and ``cast(T, v)`` -> ``v``). The first level at which every file compares equal names the
reason: ``formatting or comments only``, ``docstrings only``, ``type annotations only``. Only what differs
is normalised and compared: the two sides' statements are aligned on their text and each differing part
compared on its own, inside the class or function it sits in (:func:`_blocks`), so a one-line change in a
large module costs two parses, not a normalisation of the whole file.

When in doubt the change is kept (a kept non-fix costs a labelling; a dropped fix is lost): a file that does
not parse on either side, a ``pyproject.toml`` or ``setup.cfg`` change outside linters' own tables
(:data:`LINT_TOOLS`), and any other file except documentation and repository tooling (``docs/``, ``*.md``,
``*.rst``, ``*.txt`` other than requirements, dot-files and dot-folders, ``LICENSE``/``AUTHORS``/
``HISTORY``/``CHANGELOG``...) count as a change.
"""

from __future__ import annotations

import ast
import configparser
import copy
import difflib
import re
import tomllib
from collections.abc import Iterable

LEVELS = ("formatting or comments only", "docstrings only", "type annotations only")
LINT_TOOLS = frozenset({"ruff", "black", "isort", "mypy", "pyright", "pylint", "flake8", "pycodestyle",
                        "pydocstyle", "codespell", "coverage", "bandit", "pyupgrade", "autopep8", "yapf",
                        "docformatter", "interrogate", "pytype", "blue"})
"""``[tool.X]`` tables of ``pyproject.toml`` and ``[X]``, ``[X:...]``, ``[X-...]``, ``[tool:X]`` sections of
``setup.cfg``: settings no test reads."""
_DOC_NAME = re.compile(r"(?i)^(license|licence|authors|contributors|history|changelog|changes|news|notice|"
                       r"readme|maintainers|codeowners)([._-].*)?$")
_TYPING_MODULES = {"typing", "typing_extensions"}


_BLOCKS = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef, ast.If, ast.For, ast.AsyncFor, ast.While,
           ast.With, ast.AsyncWith, ast.Try, ast.TryStar, ast.ExceptHandler, ast.match_case)


def _bodies(tree: ast.AST) -> list[tuple[ast.AST, str, list[ast.stmt]]]:
    """(node, field, statements) of every block of statements in ``tree``."""
    return [(node, name, body) for node in ast.walk(tree) if isinstance(node, _BLOCKS)
            for name in ("body", "orelse", "finalbody") if (body := getattr(node, name, None))]


def _sort_imports(tree: ast.AST) -> ast.AST:
    """Each run of adjacent imports sorted (and the names each imports): isort's reordering is no change.
    ``__future__`` imports other than ``annotations`` are no-ops on Python 3 and go."""
    for node, name, body in _bodies(tree):
        out: list[ast.stmt] = []
        run: list[ast.stmt] = []
        for stmt in [*body, None]:
            if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
                stmt.names = [n for n in stmt.names if n.name == "annotations"]
                if not stmt.names:
                    continue
            if isinstance(stmt, ast.Import | ast.ImportFrom):
                stmt.names = sorted(stmt.names, key=lambda n: (n.name, n.asname or ""))
                run.append(stmt)
                continue
            out += sorted(run, key=ast.dump) + ([stmt] if stmt is not None else [])
            run = []
        setattr(node, name, out)
    return tree


def _strip_docs(tree: ast.AST) -> ast.AST:
    for node, name, body in _bodies(tree):
        setattr(node, name, [s for s in body if not isinstance(s, ast.Pass) and not (
            isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))])
    return tree


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


class _StripTypes(ast.NodeTransformer):
    def __init__(self) -> None:
        self.scopes = ["module"]

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        node.returns = None
        a = node.args
        for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, *([a.vararg] if a.vararg else []),
                    *([a.kwarg] if a.kwarg else [])]:
            arg.annotation = None
        self.scopes.append("function")
        self.generic_visit(node)
        self.scopes.pop()
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        self.scopes.append("class")
        self.generic_visit(node)
        self.scopes.pop()
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST | None:
        self.generic_visit(node)
        if self.scopes[-1] == "class":  # a dataclass / NamedTuple field: its presence matters, not its type
            node.annotation = ast.Constant(None)
            return node
        if node.value is None:
            return None
        return ast.Assign(targets=[node.target], value=node.value)

    def visit_If(self, node: ast.If) -> ast.AST | list[ast.stmt]:
        if _is_type_checking(node.test):
            return [self.visit(s) for s in node.orelse]
        self.generic_visit(node)
        return node

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.AST | None:
        if node.module in _TYPING_MODULES:
            return None
        if node.module == "__future__":
            node.names = [n for n in node.names if n.name != "annotations"]
            return node if node.names else None
        return node

    def visit_Import(self, node: ast.Import) -> ast.AST | None:
        node.names = [n for n in node.names if n.name not in _TYPING_MODULES]
        return node if node.names else None

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = node.func
        if (((isinstance(func, ast.Name) and func.id == "cast") or (isinstance(func, ast.Attribute)
             and func.attr == "cast" and isinstance(func.value, ast.Name) and func.value.id in ("typing", "t")))
                and len(node.args) == 2 and not node.keywords):
            return node.args[1]
        return node


def _text(stmt: ast.stmt, lines: list[bytes]) -> bytes:
    first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
    return b"\n".join(lines[first - 1:stmt.end_lineno])


def _blocks(a: list[ast.stmt], b: list[ast.stmt], lines: tuple[list[bytes], list[bytes]]
            ) -> list[tuple[list[ast.stmt], list[ast.stmt]]]:
    """The parts of two bodies that differ, as pairs of statement lists, each compared on its own: the two
    bodies aligned on their statements' text (difflib), and a class or function changed on both sides
    entered (its header one pair, each changed part of its body another, kept inside a copy of it, so its
    scope still counts). Imports never align, so a run of adjacent imports stays whole inside one pair."""
    keys = [[object() if isinstance(s, ast.Import | ast.ImportFrom) else _text(s, side) for s in body]
            for body, side in ((a, lines[0]), (b, lines[1]))]
    out: list[tuple[list[ast.stmt], list[ast.stmt]]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, *keys, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        one, two = a[i1:i2], b[j1:j2]
        if (len(one) == len(two) == 1 and type(one[0]) is type(two[0])
                and isinstance(one[0], ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                and one[0].name == two[0].name):
            out.append(([_shell(one[0], [])], [_shell(two[0], [])]))
            out += [([_shell(one[0], x)], [_shell(two[0], y)]) for x, y in _blocks(one[0].body, two[0].body, lines)]
        else:
            out.append((one, two))
    return out


def _shell(node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef, body: list[ast.stmt]) -> ast.stmt:
    shell = copy.copy(node)
    shell.body = body
    return shell


def _pairs(before: bytes | None, after: bytes | None) -> list[tuple[ast.Module, ast.Module]]:
    trees = [ast.parse(side or b"") for side in (before, after)]
    lines = ((before or b"").splitlines(), (after or b"").splitlines())
    return [(ast.Module(body=x, type_ignores=[]), ast.Module(body=y, type_ignores=[]))
            for x, y in _blocks(trees[0].body, trees[1].body, lines)]


def python_level(before: bytes | None, after: bytes | None) -> int | None:
    """The first level of :data:`LEVELS` at which the two sides of a ``.py`` file compare equal (a missing
    side is an empty module), or None: the code changed, or a side does not parse. Only what differs is
    normalised and compared (:func:`_blocks`)."""
    if before == after:
        return 0
    steps = (_sort_imports, _strip_docs, lambda t: _StripTypes().visit(t))
    try:
        pairs = _pairs(before, after)
    except (SyntaxError, ValueError):
        return None
    for pair in pairs:  # the most lenient comparison first: most changes differ there, and one dump decides
        for step in steps:
            pair = (step(pair[0]), step(pair[1]))
        if ast.dump(pair[0]) != ast.dump(pair[1]):
            return None
    worst = 0
    for pair in _pairs(before, after):  # equal: which level made them so
        for level, step in enumerate(steps):
            pair = (step(pair[0]), step(pair[1]))
            if ast.dump(pair[0]) == ast.dump(pair[1]):
                worst = max(worst, level)
                break
    return worst


def _config_equal(name: str, before: bytes | None, after: bytes | None) -> bool:
    """``pyproject.toml`` / ``setup.cfg`` equal once linters' own tables are left out (unparsable: not equal)."""
    try:
        texts = [(side or b"").decode() for side in (before, after)]
        if name == "pyproject.toml":
            docs = [tomllib.loads(t) for t in texts]
            for doc in docs:
                tool = doc.get("tool")
                if isinstance(tool, dict):
                    doc["tool"] = {k: v for k, v in tool.items() if k not in LINT_TOOLS}
            return docs[0] == docs[1]
        parsed = []
        for text in texts:
            cfg = configparser.ConfigParser(interpolation=None)
            cfg.read_string(text)
            parsed.append({s: dict(cfg[s]) for s in cfg.sections()
                           if re.split(r"[:-]", s.removeprefix("tool:"))[0] not in LINT_TOOLS})
        return parsed[0] == parsed[1]
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, configparser.Error):
        return False


def is_documentation(path: str) -> bool:
    """Files no test reads: documentation and repository tooling (see the module docstring)."""
    parts = path.split("/")
    name = parts[-1]
    if any(p.startswith(".") for p in parts) or parts[0] in ("docs", "doc"):
        return True
    if name.lower().endswith(".txt"):
        return "requirement" not in name.lower()
    return name.lower().endswith((".md", ".rst")) or bool(_DOC_NAME.match(name))


def why_not_a_fix(files: Iterable[tuple[str, bytes | None, bytes | None]]) -> str | None:
    """None when some change may alter behaviour; else the reason (one of :data:`LEVELS`) the whole change
    is a no-op. ``files``: (path, content before, content after; None where the file is absent)."""
    worst = 0
    for path, before, after in files:
        name = path.rsplit("/", 1)[-1]
        if is_documentation(path):
            continue
        if path.endswith(".py"):
            level = python_level(before, after)
            if level is None:
                return None
            worst = max(worst, level)
        elif name in ("pyproject.toml", "setup.cfg") and "/" not in path:
            if not _config_equal(name, before, after):
                return None
        else:
            return None
    return LEVELS[worst]
