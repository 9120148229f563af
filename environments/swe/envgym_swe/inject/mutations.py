"""Bug-injecting program transformations: AST-located, applied as minimal text edits.

:func:`candidates` parses one source file and lists every place a transformation applies, as a
:class:`Mutation`: a few byte-range edits of the original text found from the AST's positions (the
operator between two operands, a constant, a `not`, whole lines of a statement). Applying one rewrites only
those bytes, so the file's formatting, comments and every other line stay as they were (never
``ast.unparse``). A mutation is kept only if the result still parses and its AST differs from the original.

Kinds (``KINDS``): ``compare`` (``<``/``<=``, ``>``/``>=``, ``==``/``!=``, ``is``/``is not``,
``in``/``not in``), ``arith`` (``+``/``-``), ``boolop`` (``and``/``or``), ``drop_not``, ``off_by_one``
(an integer in an index, slice, ``range`` call or comparison, +1 or -1), ``swap_args`` (the first two
positional arguments of a call), ``wrong_return`` (return another parameter instead of the returned
name), ``drop_guard`` (an ``if`` whose body only raises/returns/continues/breaks), ``drop_statement``
(an augmented assignment or a bare call statement), ``default_arg`` (a bool or int default changed),
``min_max``. The list is sorted, so ``candidates`` is deterministic; the suite builder shuffles it with a
seeded RNG.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass

KINDS = ("compare", "arith", "boolop", "drop_not", "off_by_one", "swap_args", "wrong_return", "drop_guard",
         "drop_statement", "default_arg", "min_max")

_COMPARE: dict[type[ast.cmpop], tuple[str, str]] = {
    # op -> (regex of its text, replacement text)
    ast.Lt: (r"<(?!=)", "<="), ast.LtE: (r"<=", "<"), ast.Gt: (r">(?!=)", ">="), ast.GtE: (r">=", ">"),
    ast.Eq: (r"==", "!="), ast.NotEq: (r"!=", "=="), ast.IsNot: (r"\bis\s+not\b", "is"),
    ast.Is: (r"\bis\b(?!\s+not\b)", "is not"), ast.NotIn: (r"\bnot\s+in\b", "in"),
    ast.In: (r"(?<!not )\bin\b", "not in"),
}
_ARITH: dict[type[ast.operator], tuple[str, str]] = {ast.Add: (r"\+", "-"), ast.Sub: (r"-", "+")}


@dataclass(frozen=True)
class Edit:
    """Replace bytes ``start:end`` of the UTF-8 source with ``text``."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Mutation:
    path: str
    kind: str
    line: int
    col: int
    edits: tuple[Edit, ...]
    function: str
    """The enclosing function's qualified name ('' at module level): the builder spreads bugs across them."""

    @property
    def key(self) -> str:
        """A stable short id of this mutation (path, place and edit)."""
        text = f"{self.path}:{self.kind}:{self.line}:{self.col}:" + ";".join(
            f"{e.start}-{e.end}={e.text}" for e in self.edits)
        return hashlib.sha256(text.encode()).hexdigest()[:8]

    def apply(self, source: str) -> str:
        data = source.encode()
        for edit in sorted(self.edits, key=lambda e: e.start, reverse=True):
            data = data[:edit.start] + edit.text.encode() + data[edit.end:]
        return data.decode()


class _Source:
    """Byte offsets of AST positions (``col_offset`` counts UTF-8 bytes) in one file."""

    def __init__(self, text: str) -> None:
        self.data = text.encode()
        self.starts = [0]
        for i, byte in enumerate(self.data):
            if byte == 0x0A:
                self.starts.append(i + 1)

    def start(self, node: ast.AST) -> int:
        return self.starts[node.lineno - 1] + node.col_offset  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> int:
        return self.starts[node.end_lineno - 1] + node.end_col_offset  # type: ignore[attr-defined]

    def text(self, a: int, b: int) -> str:
        return self.data[a:b].decode()

    def whole_lines(self, node: ast.stmt) -> tuple[int, int] | None:
        """Byte range of the lines ``node`` spans if it has them to itself (only indentation before it)."""
        a, b = self.start(node), self.end(node)
        line_start = self.starts[node.lineno - 1]
        if self.data[line_start:a].strip():
            return None
        nl = self.data.find(b"\n", b)
        nl = len(self.data) if nl < 0 else nl + 1
        if self.data[b:nl].strip() and not self.data[b:nl].strip().startswith(b"#"):
            return None
        return line_start, nl


def _gap_edit(src: _Source, a: int, b: int, pattern: str, replacement: str) -> Edit | None:
    """The edit replacing the one match of ``pattern`` in bytes a:b (operator text between two operands)."""
    gap = src.text(a, b)
    if "#" in gap or "\\" in gap:
        return None
    matches = list(re.finditer(pattern, gap))
    if len(matches) != 1:
        return None
    m = matches[0]
    return Edit(a + len(gap[:m.start()].encode()), a + len(gap[:m.end()].encode()), replacement)


def _walk(tree: ast.AST) -> Iterator[tuple[ast.AST, list[ast.AST]]]:
    """Every node with its ancestors (outermost first)."""
    stack: list[tuple[ast.AST, list[ast.AST]]] = [(tree, [])]
    while stack:
        node, parents = stack.pop()
        yield node, parents
        for child in reversed(list(ast.iter_child_nodes(node))):
            stack.append((child, [*parents, node]))


def _qualname(parents: list[ast.AST]) -> str:
    return ".".join(p.name for p in parents if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                ast.ClassDef)))


def _function(parents: list[ast.AST]) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    for p in reversed(parents):
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return p
    return None


def _in_index(node: ast.AST, parents: list[ast.AST]) -> bool:
    """``node`` is (part of) a subscript's index/slice, a ``range`` argument or a comparison operand."""
    for child, parent in reversed(list(zip([*parents[1:], node], parents, strict=True))):
        if isinstance(parent, ast.Subscript) and child is parent.slice:
            return True
        if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "range":
            return True
        if isinstance(parent, ast.Compare):
            return True
        if isinstance(parent, (ast.stmt, ast.Lambda, ast.comprehension)):
            return False
    return False


def _block_of(stmt: ast.stmt, parents: list[ast.AST]) -> list[ast.stmt] | None:
    parent = parents[-1] if parents else None
    for name in ("body", "orelse", "finalbody"):
        block = getattr(parent, name, None)
        if isinstance(block, list) and any(s is stmt for s in block):
            return block
    return None


_Found = Iterator[tuple[str, ast.AST, tuple[Edit, ...]]]


def _mutations_at(src: _Source, node: ast.AST, parents: list[ast.AST]) -> _Found:
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
        pattern, repl = _COMPARE[type(node.ops[0])]
        edit = _gap_edit(src, src.end(node.left), src.start(node.comparators[0]), pattern, repl)
        if edit:
            yield "compare", node, (edit,)
    elif isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
        pattern, repl = _ARITH[type(node.op)]
        edit = _gap_edit(src, src.end(node.left), src.start(node.right), pattern, repl)
        if edit:
            yield "arith", node, (edit,)
    elif isinstance(node, ast.BoolOp):
        old, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
        edits = [_gap_edit(src, src.end(a), src.start(b), rf"\b{old}\b", new)
                 for a, b in zip(node.values, node.values[1:], strict=False)]
        if all(edits):
            yield "boolop", node, tuple(e for e in edits if e)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        a, b = src.start(node), src.start(node.operand)
        if src.text(a, b).rstrip() == "not":
            yield "drop_not", node, (Edit(a, b, ""),)
    elif (isinstance(node, ast.Constant) and type(node.value) is int and _in_index(node, parents)
          and node.value < 1000):
        a, b = src.start(node), src.end(node)
        if src.text(a, b) == str(node.value):
            yield "off_by_one", node, (Edit(a, b, str(node.value + 1)),)
            if node.value > 0:
                yield "off_by_one", node, (Edit(a, b, str(node.value - 1)),)
    elif isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id in ("min", "max"):
            other = "max" if node.func.id == "min" else "min"
            yield "min_max", node, (Edit(src.start(node.func), src.end(node.func), other),)
        args = node.args
        if len(args) >= 2 and not any(isinstance(a, ast.Starred) for a in args[:2]):
            first, second = src.text(src.start(args[0]), src.end(args[0])), \
                src.text(src.start(args[1]), src.end(args[1]))
            if first != second and "\n" not in first + second:
                yield "swap_args", node, (Edit(src.start(args[0]), src.end(args[0]), second),
                                          Edit(src.start(args[1]), src.end(args[1]), first))
    elif isinstance(node, ast.Return) and isinstance(node.value, ast.Name):
        func = _function(parents)
        if func is not None:
            params = [a.arg for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)
                      if a.arg not in ("self", "cls", node.value.id)]
            if params:
                yield "wrong_return", node, (Edit(src.start(node.value), src.end(node.value), params[0]),)
    elif isinstance(node, ast.If) and not node.orelse and len(node.body) == 1 and \
            isinstance(node.body[0], (ast.Raise, ast.Return, ast.Continue, ast.Break)):
        block, span = _block_of(node, parents), src.whole_lines(node)
        if block is not None and len(block) > 1 and span:
            yield "drop_guard", node, (Edit(*span, ""),)
    elif isinstance(node, (ast.AugAssign, ast.Expr)) and _function(parents) is not None:
        if isinstance(node, ast.Expr) and not isinstance(node.value, ast.Call):
            return
        block, span = _block_of(node, parents), src.whole_lines(node)
        if block is not None and len(block) > 1 and span:
            yield "drop_statement", node, (Edit(*span, ""),)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        for default in [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]:
            if isinstance(default, ast.Constant) and type(default.value) in (bool, int):
                value = default.value
                new = str(not value) if isinstance(value, bool) else str(value + 1)
                a, b = src.start(default), src.end(default)
                if src.text(a, b) == str(value):
                    yield "default_arg", default, (Edit(a, b, new),)


def candidates(path: str, source: str) -> list[Mutation]:
    """Every mutation of ``source`` (the file at ``path``) that parses and changes the AST, sorted."""
    tree = ast.parse(source)
    original = ast.dump(tree)
    src = _Source(source)
    found: dict[str, Mutation] = {}
    for node, parents in _walk(tree):
        if _skipped(node, parents):
            continue
        for kind, at, edits in _mutations_at(src, node, parents):
            mutation = Mutation(path, kind, at.lineno, at.col_offset, edits,  # type: ignore[attr-defined]
                                _qualname([*parents, node] if isinstance(node, ast.FunctionDef) else parents))
            try:
                changed = ast.dump(ast.parse(mutation.apply(source))) != original
            except SyntaxError:
                continue
            if changed:
                found.setdefault(mutation.key, mutation)
    return sorted(found.values(), key=lambda m: (m.path, m.line, m.col, m.kind, m.key))


def _skipped(node: ast.AST, parents: list[ast.AST]) -> bool:
    """Skip f-strings (their inner positions are unreliable before 3.12) and ``if __name__ == "__main__"``."""
    if any(isinstance(p, ast.JoinedStr) for p in parents):
        return True
    return any(isinstance(p, ast.If) and isinstance(p.test, ast.Compare) and isinstance(p.test.left, ast.Name)
               and p.test.left.id == "__name__" for p in [*parents, node])
