"""Bug-injecting transformations on small sources, and problem statements from pytest failure records."""

from __future__ import annotations

import ast
import difflib

import pytest

from envgym_swe.inject.build import _judge, split_of
from envgym_swe.inject.mutations import KINDS, candidates
from envgym_swe.inject.runner import RunResult, parse_report
from envgym_swe.inject.statement import describe, reproduction, resolve, write_statement

SOURCE = '''\
"""A module."""
import os  # comment stays


def window(seq, n=2, strict=False):
    # leading comment
    if n <= 0:
        raise ValueError("n must be positive")
    out = []
    for i in range(len(seq) - n + 1):
        if seq[i] is not None and not strict:
            out.append(tuple(seq[i:i + n]))
        total = max(i, n)
        total += 1
    return out


def pick(a, b):
    result = min(a, b)
    return result
'''


def changed_lines(before: str, after: str) -> list[str]:
    return [line for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def by_kind(kind: str) -> list:
    return [m for m in candidates("m.py", SOURCE) if m.kind == kind]


@pytest.mark.parametrize(("kind", "before", "after"), [
    ("compare", "    if n <= 0:", "    if n < 0:"),
    ("compare", "        if seq[i] is not None and not strict:", "        if seq[i] is None and not strict:"),
    ("arith", "    for i in range(len(seq) - n + 1):", "    for i in range(len(seq) + n + 1):"),
    ("boolop", "        if seq[i] is not None and not strict:", "        if seq[i] is not None or not strict:"),
    ("drop_not", "        if seq[i] is not None and not strict:", "        if seq[i] is not None and strict:"),
    ("off_by_one", "    if n <= 0:", "    if n <= 1:"),
    ("off_by_one", "    for i in range(len(seq) - n + 1):", "    for i in range(len(seq) - n + 2):"),
    ("swap_args", "        total = max(i, n)", "        total = max(n, i)"),
    ("min_max", "    result = min(a, b)", "    result = max(a, b)"),
    ("wrong_return", "    return result", "    return a"),
    ("default_arg", "def window(seq, n=2, strict=False):", "def window(seq, n=2, strict=True):"),
    ("default_arg", "def window(seq, n=2, strict=False):", "def window(seq, n=3, strict=False):"),
])
def test_each_kind_changes_only_its_line(kind: str, before: str, after: str) -> None:
    applied = [m.apply(SOURCE) for m in by_kind(kind)]
    matching = [text for text in applied if changed_lines(SOURCE, text) == [f"-{before}", f"+{after}"]]
    assert matching, f"no {kind} mutation turns {before!r} into {after!r}"
    ast.parse(matching[0])


def test_statement_removals_delete_whole_lines_and_keep_the_rest() -> None:
    guards = by_kind("drop_guard")
    assert len(guards) == 1
    after = guards[0].apply(SOURCE)
    assert changed_lines(SOURCE, after) == ['-    if n <= 0:', '-        raise ValueError("n must be positive")']
    drops = {tuple(changed_lines(SOURCE, m.apply(SOURCE))) for m in by_kind("drop_statement")}
    assert drops == {("-        total += 1",)}  # the append is its block's only statement: never removed


def test_formatting_comments_and_other_lines_are_preserved() -> None:
    for mutation in candidates("m.py", SOURCE):
        after = mutation.apply(SOURCE)
        assert "import os  # comment stays" in after and "    # leading comment" in after
        assert len(changed_lines(SOURCE, after)) <= 2, mutation
        assert ast.dump(ast.parse(after)) != ast.dump(ast.parse(SOURCE))


def test_candidates_are_deterministic_and_cover_every_kind() -> None:
    first, second = candidates("m.py", SOURCE), candidates("m.py", SOURCE)
    assert first == second
    assert [m.key for m in first] == [m.key for m in second]
    assert len({m.key for m in first}) == len(first)
    assert {m.kind for m in first} == set(KINDS)
    assert {m.function for m in by_kind("min_max")} == {"pick", "window"}


def test_utf8_offsets_and_fstrings_and_main_blocks() -> None:
    source = 'def f(x):\n    s = "héllo"; return x < 1\n\n\ndef g(y):\n    return f"{y + 1}"\n\n\n' \
             'if __name__ == "__main__":\n    print(1 + 2)\n'
    found = candidates("u.py", source)
    flips = [m.apply(source) for m in found if m.kind == "compare"]
    assert flips == ['def f(x):\n    s = "héllo"; return x <= 1\n\n\ndef g(y):\n    return f"{y + 1}"\n\n\n'
                     'if __name__ == "__main__":\n    print(1 + 2)\n']
    assert not [m for m in found if m.kind == "arith"]  # inside an f-string or the __main__ block


def test_parse_report_and_judge() -> None:
    lines = [
        '{"nodeid": "t.py::a", "when": "call", "outcome": "passed"}',
        '{"nodeid": "t.py::b", "when": "call", "outcome": "failed", "detail": {"exc_type": "AssertionError"}, '
        '"longrepr": "E assert 1 == 2"}',
        '{"nodeid": "t.py::b", "when": "teardown", "outcome": "passed"}',
        '{"nodeid": "u.py::c", "when": "call", "outcome": "passed"}',
        '{"nodeid": "t.py::d", "when": "setup", "outcome": "skipped"}',
    ]
    result = parse_report("\n".join(lines))
    assert result.status == {"t.py::a": "passed", "t.py::b": "failed", "u.py::c": "passed", "t.py::d": "skipped"}
    assert result.details["t.py::b"]["exc_type"] == "AssertionError"
    result.exit_code = 1
    baseline = {"t.py::a", "t.py::b", "u.py::c", "t.py::d"}
    assert _judge(result, baseline, max_fail=5) == (["t.py::b"], ["t.py::a"])
    assert _judge(result, {"t.py::a"}, max_fail=5) == "no test fails"
    assert _judge(result, baseline, max_fail=0) == "more than 0 tests fail"
    broken = RunResult(collect_errors=["t.py"], exit_code=2)
    assert _judge(broken, baseline, max_fail=5) == "import or collection error"
    assert _judge(RunResult(timed_out=True), baseline, max_fail=5) == "timeout"


def test_split_is_stable() -> None:
    ids = [f"o__n-1.0-{i:08x}" for i in range(200)]
    assert [split_of(i) for i in ids] == [split_of(i) for i in ids]
    assert 30 < sum(split_of(i) == "test" for i in ids) < 90


TEST_MODULE = ("from toolz import partition, take, drop\nimport pytest\nimport os\nfrom .helpers import x\n\n\n"
               "def double(v):\n    return 2 * v\n\n\ndef test_partition():\n    pass\n")
NAMES = {"partition": "toolz.partition", "take": "toolz.take"}


def test_statement_from_an_equality_assertion() -> None:
    detail = {"exc_type": "AssertionError", "raised_in_test": True,
              "exc_msg": "assert [(1, 2), (3, None)] == [(1, 2)]\n  Left contains one more item",
              "statement": "assert list(partition(2, [1, 2, 3])) == [(1, 2)]", "locals": {},
              "test_source": "def test_partition():\n    assert list(partition(2, [1, 2, 3])) == [(1, 2)]\n",
              "file": "t.py"}
    sentence, _, subject = describe(detail, NAMES)
    assert sentence == "`list(partition(2, [1, 2, 3]))` returns `[(1, 2), (3, None)]`, but `[(1, 2)]` was expected."
    assert subject == "toolz.partition"
    text = write_statement([detail], "toolz", NAMES, {"t.py": TEST_MODULE}, 3)
    assert text.startswith("Wrong behaviour of `toolz.partition`")
    assert "```python\nfrom toolz import partition\n\nassert list(partition(2, [1, 2, 3])) == [(1, 2)]\n```" \
        in text
    assert "2 more checks" in text and "pytest" not in text.split("```python")[1]


def test_statement_from_locals_and_from_an_exception() -> None:
    source = ("def test_take():\n    seq = [1, 2]\n    # why\n"
              "    got = list(take(1, double(seq)))\n    assert got == [1]\n"
              "    assert got != [2]\n")
    detail = {"exc_type": "AssertionError", "exc_msg": "assert [] == [1]", "statement": "assert got == [1]",
              "locals": {"got": "[]", "seq": "[1, 2]"}, "test_source": source}
    sentence, _, subject = describe(detail, NAMES)
    assert sentence == "`got` ends up as `[]`, but `[1]` was expected."
    assert subject is None
    assert reproduction(source, "assert got == [1]", TEST_MODULE) == (
        "from toolz import take\n\ndef double(v):\n    return 2 * v\n\nseq = [1, 2]\n"
        "got = list(take(1, double(seq)))\nassert got == [1]")
    bare = reproduction(source, "assert got == [1]")
    assert bare == "seq = [1, 2]\ngot = list(take(1, double(seq)))\nassert got == [1]"
    assert reproduction(source, "assert nothing_like_this") == ""
    helper = ("def test_y():\n    def y(a, b):\n        assert take(a, b) == b\n\n    other = 1\n    assert other\n"
              "    items = []\n    items.append(3)\n    y(1, items)\n")
    assert reproduction(helper, "y(1, items)") == (
        "def y(a, b):\n    assert take(a, b) == b\nitems = []\nitems.append(3)\ny(1, items)")
    raised = {"exc_type": "IndexError", "exc_msg": "tuple index out of range",
              "statement": "out = take(3, [1])", "test_source": "def test_x():\n    out = take(3, [1])\n"}
    sentence, _, subject = describe(raised, NAMES)
    assert sentence == "Calling `take(3, [1])` raises `IndexError: tuple index out of range` instead of working."
    assert subject == "toolz.take"
    missing = {"exc_type": "Failed", "exc_msg": "DID NOT RAISE <class 'ValueError'>",
               "statement": "with pytest.raises(ValueError):\n    take(-1, [])"}
    assert "expected to raise `<class 'ValueError'>`, but it returns normally" in describe(missing, NAMES)[0]


def test_statement_puts_the_call_on_the_actual_side_and_inlines_parameters() -> None:
    detail = {"exc_type": "AssertionError", "exc_msg": "assert 'cow' == 'kine'\n  - kine\n  + cow",
              "statement": "assert singular == inflection.singularize(plural)",
              "locals": {"singular": "'cow'", "plural": "'kine'", "obj": "<object object at 0x7f>"}}
    sentence, _, subject = describe(detail, {"singularize": "inflection.singularize"})
    assert sentence == "`inflection.singularize('kine')` returns `'kine'`, but `'cow'` was expected."
    assert subject == "inflection.singularize"
    detail["statement"] = "assert singular == inflection.singularize(obj)"
    assert describe(detail, {})[0].startswith("`inflection.singularize(obj)` returns")
    source = "def test_s(singular, plural):\n    assert singular == inflection.singularize(plural)\n"
    statement = "assert singular == inflection.singularize(plural)"
    assert reproduction(source, statement, "import inflection\n", detail["locals"]) == (
        "import inflection\n\nsingular = 'cow'\nplural = 'kine'\nassert singular == inflection.singularize(plural)")


def test_an_ambiguous_method_name_resolves_to_the_module_the_test_imports() -> None:
    names = {"to_text": ["boltons.tableutils.Table.to_text", "boltons.urlutils.URL.to_text"], "x": "m.x"}
    assert resolve(names, "from boltons.urlutils import URL\n") == {"to_text": "boltons.urlutils.URL.to_text",
                                                                      "x": "m.x"}
    assert resolve(names, "import os\n")["to_text"] == "boltons.tableutils.Table.to_text"
    assert resolve({"parse": ["parse.Parser.parse", "parse.parse"]}, "import parse\n") == {"parse": "parse.parse"}
    both = "from boltons import urlutils\nfrom boltons.urlutils import URL\n"
    assert resolve(names, both)["to_text"] == "boltons.urlutils.URL.to_text"
