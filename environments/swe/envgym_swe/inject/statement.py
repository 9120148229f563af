"""Problem statements written from the observed failure, the way a user would file the issue.

Input: for each failing FAIL_TO_PASS test, what the reporting plugin of :mod:`envgym_swe.inject.runner`
saw from the test's own frame: the failing statement, the exception type and message (pytest's assertion
text at ``-vv``), the values of the test's local names and the test's source. Output: a title and a body
that say which call misbehaves, what came back (the actual value or exception) and what was expected, with
a short reproduction cut from the test (the lines up to the failing one, plus the imports they use).

Nothing here reads the injected diff: no file names of the library, no line numbers, no operator names.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

MAX_VALUE = 240


def _short(text: str, limit: int = MAX_VALUE) -> str:
    text = " ".join(text.split()) if "\n" not in text.strip() else text.strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _segment(source: str, node: ast.AST) -> str:
    return ast.get_source_segment(source, node) or ast.unparse(node)


def _calls(node: ast.AST) -> list[str]:
    """Names of the functions called in ``node``, outermost first (``list(partition(...))`` -> list, partition)."""
    names = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            func = sub.func
            if isinstance(func, ast.Name):
                names.append(func.id)
            elif isinstance(func, ast.Attribute):
                names.append(func.attr)
    return names


_BUILTINS = {"list", "tuple", "dict", "set", "sorted", "str", "repr", "len", "iter", "next", "frozenset", "type",
             "isinstance", "sum", "any", "all", "map", "filter", "zip", "range", "callable", "int", "float", "bool"}


def subject(node: ast.AST, names: Mapping[str, str]) -> str | None:
    """The library function the statement is about: the first called name the library defines.

    ``names`` maps a bare name to how the issue should call it (``partition`` -> ``toolz.partition``).
    """
    called = [n for n in _calls(node) if n not in _BUILTINS]
    for name in called:
        if name in names:
            return names[name]
    return None


def _assert_values(message: str) -> tuple[str, str] | None:
    """(left, right) from pytest's ``assert LEFT == RIGHT`` first message line, when it parses as Python."""
    first = message.strip().splitlines()[0] if message.strip() else ""
    try:
        tree = ast.parse(first)
    except SyntaxError:
        return None
    stmt = tree.body[0] if tree.body else None
    if isinstance(stmt, ast.Assert) and isinstance(stmt.test, ast.Compare) and len(stmt.test.ops) == 1:
        return ast.unparse(stmt.test.left), ast.unparse(stmt.test.comparators[0])
    return None


class _Inliner(ast.NodeTransformer):
    """Replace a test's local names by the literal values they held (``singularize(plural)`` -> ``('kine')``)."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self.values = values

    def visit_Call(self, node: ast.Call) -> ast.AST:
        node.args = [self.visit(a) for a in node.args]
        node.keywords = [self.visit(k) for k in node.keywords]
        return node  # the callee stays as written

    def visit_Name(self, node: ast.Name) -> ast.AST:
        text = self.values.get(node.id)
        if text is None or len(text) > 80:
            return node
        try:
            value = ast.parse(text, mode="eval").body
        except SyntaxError:
            return node
        return value if all(isinstance(n, (ast.Constant, ast.Tuple, ast.List, ast.Dict, ast.Set, ast.UnaryOp,
                                           ast.USub, ast.Load)) for n in ast.walk(value)) else node


def _inline(node: ast.AST, source: str, local_values: Mapping[str, str]) -> str:
    """``node``'s source with the test's local names replaced by their (literal) values."""
    if not local_values:
        return _segment(source, node)
    import copy

    return ast.unparse(_Inliner(local_values).visit(copy.deepcopy(node)))


def _library_call(node: ast.AST, names: Mapping[str, str]) -> ast.Call | None:
    """The outermost call in ``node`` of a name the library defines."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            func = sub.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in names:
                return sub
    return None


def _value_of(expr: str, local_values: Mapping[str, str]) -> str | None:
    return local_values.get(expr.strip())


MAX_REPRO_LINES = 16


def _lines(source: str, node: ast.AST) -> str:
    lines = source.splitlines()
    return textwrap.dedent("\n".join(lines[node.lineno - 1:node.end_lineno]))  # type: ignore[attr-defined]


def _names(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))


def reproduction(test_source: str, statement: str, module_source: str = "",
                 local_values: Mapping[str, str] | None = None) -> str:
    """A runnable-looking cut of the test: the failing statement and the earlier ones it depends on.

    Whole top-level statements of the test only (a loop or ``with`` block holding the failure is kept whole,
    or replaced by the failing statement alone when long): walking back from the failure, those that bind a
    name it (transitively) uses or act on one, at most :data:`MAX_REPRO_LINES` lines; preceded by the test
    module's imports reduced to the names used and its small module-level helpers.
    """
    source = textwrap.dedent(test_source)
    try:
        func = ast.parse(source).body[0]
    except (SyntaxError, IndexError):
        return ""
    if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return ""
    body = [s for s in func.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    first = statement.strip().splitlines()[0].strip() if statement.strip() else ""
    target = next((i for i, s in enumerate(body) if first and first in _lines(source, s)), None)
    if target is None:
        return ""
    chosen = _relevant(source, body, target)
    kept = [_lines(source, s) for s in chosen]
    if len(kept[-1].splitlines()) > MAX_REPRO_LINES:
        kept[-1] = textwrap.dedent(statement.strip("\n"))
    snippet = "\n".join(kept)
    params = [a.arg for a in func.args.args if a.arg != "self"]  # parametrised tests: show the values
    bound = set().union(*(_bound(s) for s in chosen))
    given = [f"{name} = {local_values[name]}" for name in params if name in (local_values or {})
             and name in _names(snippet) and name not in bound and _literal(local_values[name])]
    snippet = "\n".join([*given, snippet])
    prelude = _prelude(module_source, snippet, exclude=func.name) if module_source else []
    return "\n\n".join(p for p in ("\n".join(prelude[0]), "\n\n".join(prelude[1]), snippet) if p) if prelude \
        else snippet


def _literal(text: str) -> bool:
    try:
        value = ast.parse(text, mode="eval").body
    except SyntaxError:
        return False
    return len(text) <= 200 and all(isinstance(n, (ast.Constant, ast.Tuple, ast.List, ast.Dict, ast.Set,
                                                   ast.UnaryOp, ast.USub, ast.Load)) for n in ast.walk(value))


def _bound(stmt: ast.stmt) -> set[str]:
    """Names a statement binds (assignment targets, loop and ``with`` targets, defs, imports)."""
    targets: list[ast.AST] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
        targets = [stmt.target]
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        targets = [i.optional_vars for i in stmt.items if i.optional_vars is not None]
    elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _relevant(source: str, body: list[ast.stmt], target: int) -> list[ast.stmt]:
    """The failing statement and, walking back, the earlier ones that bind or touch a name it needs."""
    chosen = [body[target]]
    needed = _names(_lines(source, body[target]))
    lines = len(_lines(source, body[target]).splitlines())
    for stmt in reversed(body[:target]):
        text = _lines(source, stmt)
        binds = _bound(stmt)
        touches = binds & needed if binds else (_names(text) & needed and not isinstance(stmt, ast.Assert))
        if not touches:
            continue
        size = len(text.splitlines())
        if lines + size > MAX_REPRO_LINES:
            break
        chosen.insert(0, stmt)
        lines += size
        if not isinstance(stmt, ast.AugAssign):
            needed -= binds
        needed |= _names(text) - binds
    return chosen


def _prelude(module_source: str, snippet: str, *, exclude: str) -> tuple[list[str], list[str]]:
    """(import lines, helper definitions) of the test module that ``snippet`` uses."""
    try:
        tree = ast.parse(module_source)
    except SyntaxError:
        return [], []
    used = _names(snippet)
    helpers: list[str] = []
    defined = set()
    for node in tree.body:  # small module-level helpers and constants the snippet names
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in used and node.name != exclude \
                and not node.name.startswith("test") and node.end_lineno - node.lineno < 12:
            helpers.append(_lines(module_source, node))
            defined.add(node.name)
        elif isinstance(node, ast.Assign) and node.end_lineno - node.lineno < 4 and any(
                isinstance(t, ast.Name) and t.id in used for t in node.targets):
            helpers.append(_lines(module_source, node))
    used |= _names("\n".join(helpers))
    imports = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and not node.level and node.module != "pytest":
            aliases = [a for a in node.names if (a.asname or a.name) in used]
            if aliases:
                imports.append(ast.unparse(ast.ImportFrom(module=node.module, names=aliases, level=0)))
        elif isinstance(node, ast.Import):
            aliases = [a for a in node.names if (a.asname or a.name).split(".")[0] in used and a.name != "pytest"]
            if aliases:
                imports.append(ast.unparse(ast.Import(names=aliases)))
    return imports, helpers


def describe(detail: Mapping[str, Any], names: Mapping[str, str]) -> tuple[str, str, str | None]:
    """(sentence, reproduction statement, subject) for one failing test."""
    statement = str(detail.get("statement") or "")
    exc_type, exc_msg = str(detail.get("exc_type", "")), str(detail.get("exc_msg", ""))
    local_values: Mapping[str, str] = detail.get("locals") or {}
    try:
        node = ast.parse(textwrap.dedent(statement)).body[0] if statement else None
    except (SyntaxError, IndexError):
        node = None
    subj = subject(node, names) if node is not None else None
    if exc_type == "AssertionError" and isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare) \
            and len(node.test.ops) == 1 and isinstance(node.test.ops[0], (ast.Eq, ast.Is)):
        src = textwrap.dedent(statement)
        sides = [node.test.left, node.test.comparators[0]]
        values = _assert_values(exc_msg) or (None, None)
        at = 1 if not _calls(sides[0]) and _calls(sides[1]) else 0  # the side that calls something is the actual
        observed, wanted = sides[at], sides[1 - at]
        observed_text, wanted_text = _segment(src, observed), _segment(src, wanted)
        actual = _value_of(observed_text, local_values) or values[at]
        expected = _value_of(wanted_text, local_values) or values[1 - at] or wanted_text
        if actual is not None:
            if _calls(observed):
                call = _inline(observed, src, local_values)
                return (f"`{_short(call)}` returns `{_short(actual)}`, but `{_short(expected)}` was expected.",
                        statement, subj)
            return (f"`{_short(observed_text)}` ends up as `{_short(actual)}`, but `{_short(expected)}` was "
                    "expected.", statement, subj)
    if exc_type == "AssertionError" and isinstance(node, ast.Assert):
        text = _short(textwrap.dedent(statement).removeprefix("assert ").strip())
        how = exc_msg.strip().splitlines()[0] if exc_msg.strip() else ""
        useful = how and how != f"assert {text}" and " at 0x" not in how and "...." not in how
        extra = f" (pytest reports: `{_short(how)}`)" if useful else ""
        return f"The expectation `{text}` does not hold{extra}.", statement, subj
    if exc_type and exc_type != "AssertionError":
        what = _short(textwrap.dedent(statement)) if statement else "the call"
        call = _library_call(node, names) if node is not None else None
        shown = f"Calling `{_short(_inline(call, textwrap.dedent(statement), local_values))}`" if call else \
            f"`{what}`"
        msg = exc_msg.strip().splitlines()[0] if exc_msg.strip() else ""
        if exc_type == "Failed" and "DID NOT RAISE" in exc_msg:
            return f"`{what}` is expected to raise `{msg.replace('DID NOT RAISE', '').strip()}`, but it returns "\
                   "normally.", statement, subj
        return f"{shown} raises `{exc_type}{': ' + _short(msg, 160) if msg else ''}` instead of working.", \
            statement, subj
    return f"The check `{_short(statement)}` fails.", statement, subj


def resolve(names: Mapping[str, str | Sequence[str]], module_source: str) -> dict[str, str]:
    """One spelling per name: of several definitions, the one under the most specific module the test imports."""
    imported = set()
    try:
        for node in ast.walk(ast.parse(module_source)):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imported |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                imported |= {a.name for a in node.names}
    except SyntaxError:
        pass

    def score(spelling: str) -> tuple[int, int]:  # then a module-level function over a method
        return max((len(m) for m in imported if spelling.startswith(f"{m}.")), default=0), -spelling.count(".")

    out = {}
    for name, spellings in names.items():
        options = [spellings] if isinstance(spellings, str) else list(spellings)
        out[name] = max(options, key=score)  # max keeps the first of equal scores
    return out


def write_statement(failures: Sequence[Mapping[str, Any]], package: str,
                    names: Mapping[str, str | Sequence[str]], modules: Mapping[str, str], n_failing: int) -> str:
    """The issue text for a bug whose FAIL_TO_PASS tests failed as ``failures`` (details, most useful first).

    ``names`` is the library's public names, each with its spellings (see :func:`resolve`); ``modules`` maps
    each detail's ``file`` to its test module's source.
    """
    sentences, repros, subjects = [], [], []
    for detail in failures:
        if len(sentences) == 2:
            break
        module_source = modules.get(str(detail.get("file")), "")
        sentence, statement, subj = describe(detail, resolve(names, module_source))
        if sentence in sentences:
            continue
        repro = reproduction(str(detail.get("test_source", "")), statement, module_source, detail.get("locals") or {})
        sentences.append(sentence)
        repros.append(repro)
        if subj:
            subjects.append(subj)
    title = f"Wrong behaviour of `{subjects[0]}`" if subjects else f"Regression in `{package}`"
    parts = [title, "", f"I ran into a problem with `{subjects[0]}`:" if subjects else
             f"Something in `{package}` no longer behaves as it should:", ""]
    for n, (sentence, repro) in enumerate(zip(sentences, repros, strict=True)):
        if n:
            parts += ["", "Another case that looks related:", ""]
        parts.append(sentence)
        if repro:
            parts += ["", "To reproduce:", "", "```python", repro, "```"]
    if n_failing > len(sentences):
        more = n_failing - len(sentences)
        parts += ["", f"({more} more check{'s' if more > 1 else ''} of the test suite fail{'' if more > 1 else 's'} "
                  "the same way.)"]
    parts += ["", "Please fix it so that the expected behaviour above holds."]
    return "\n".join(parts)
