"""Units of history, ranges, the no-fix pre-filter and problem statements of ``envgym swe mine``.

Every repository here is real git built in the test: merges with ``--no-ff``, pull requests whose test and
fix are separate commits, formatting-, typing- and comment-only commits, squash-merged commits, notes;
commit and committer dates set explicitly. Host only, no Docker.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from envgym.errors import SpecError
from envgym_swe.mine import mine_repository
from envgym_swe.prefilter import python_level, why_not_a_fix
from envgym_swe.statements import MASK, compose, readme_section

BASE_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@localhost", "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@localhost", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
SETUP_PY = ('from setuptools import setup\n\nrequires = ["six"]\n\n'
            'setup(name="calc", version="1.0", packages=["calc"], install_requires=requires + ["attrs"])\n')
CALC = '''"""Small arithmetic."""


def mean(values):
    """The mean of values."""
    return sum(values) / (len(values) - 1)


def scale(values, factor):
    return [v * factor for v in values]
'''
TESTS = "from calc import mean\n\n\ndef test_mean_of_one():\n    assert mean([2]) == 2\n"


class Repo:
    """A git repository whose commits carry the dates they are given (author = committer unless told)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir()
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str, date: str = "2021-01-01T12:00:00+00:00", author_date: str | None = None) -> str:
        env = {**os.environ, **BASE_ENV, "GIT_COMMITTER_DATE": date, "GIT_AUTHOR_DATE": author_date or date}
        return subprocess.run(["git", "-C", str(self.path), *args], capture_output=True, text=True, check=True,
                              env=env).stdout

    def commit(self, files: dict[str, str], message: str, date: str, author_date: str | None = None) -> str:
        for name, text in files.items():
            (self.path / name).parent.mkdir(parents=True, exist_ok=True)
            (self.path / name).write_text(text)
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message, date=date, author_date=author_date)
        return self.git("rev-parse", "HEAD").strip()

    def merge(self, branch: str, message: str, date: str) -> str:
        self.git("merge", "-q", "--no-ff", branch, "-m", message, date=date)
        return self.git("rev-parse", "HEAD").strip()

    def rev(self, name: str) -> str:
        return self.git("rev-parse", name).strip()


def calc_repo(tmp_path: Path) -> Repo:
    repo = Repo(tmp_path / "calc")
    repo.commit({"setup.py": SETUP_PY, "calc/__init__.py": CALC, "tests/test_calc.py": TESTS, "README.md": "calc\n"},
                "Start calc", "2020-01-10T10:00:00+00:00")
    return repo


@pytest.fixture
def history(tmp_path):
    """main: start; a pull request (test commit, then fix commit) merged --no-ff in 2020-03; a formatting-only
    commit, a typing-only commit and a comment/docstring-only commit (each touching tests too); a squash-merged
    fix with a one-line title; a single fix commit with a body and a note, committed in 2021-02 but authored
    in 2019."""
    repo = calc_repo(tmp_path)
    c = {}
    repo.git("checkout", "-q", "-b", "fix-mean")
    two = "\n\ndef test_mean_of_two():\n    assert mean([1, 3]) == 2\n"
    c["pr_test"] = repo.commit({"tests/test_calc.py": TESTS + two}, "Add a failing test for mean of two",
                               "2020-03-01T09:00:00+00:00")
    fixed = CALC.replace("(len(values) - 1)", "_count(values)") + "\n\ndef _count(values):\n    return len(values)\n"
    c["pr_fix"] = repo.commit({"calc/__init__.py": fixed}, "Divide by _count(values)\n\nFixes #4",
                              "2020-03-02T09:00:00+00:00")
    repo.git("checkout", "-q", "main")
    c["pr"] = repo.merge("fix-mean", "Merge pull request #5 from me/fix-mean\n\nmean() is off by one\n\n"
                         "mean([1, 3]) returns 4 instead of 2.", "2020-03-03T09:00:00+00:00")
    formatted = fixed.replace("[v * factor for v in values]", "[\n        v * factor\n        for v in values\n    ]")
    formatted = formatted.replace('"""The mean of values."""', "'''The mean of values.'''")
    c["format"] = repo.commit({"calc/__init__.py": formatted, "tests/test_calc.py": TESTS.replace(
        "assert mean([2]) == 2", "assert mean([2]) == 2  # one value") + "\n\ndef test_mean_of_two():\n"
        "    assert mean([1, 3]) == 2\n"}, "Run the formatter", "2020-05-01T09:00:00+00:00")
    typed = ("from __future__ import annotations\n\nfrom typing import Sequence\n\n" + formatted.replace(
        "def mean(values):", "def mean(values: Sequence[float]) -> float:").replace(
        "def _count(values):", "def _count(values: Sequence[float]) -> int:\n    size: int"))
    c["typing"] = repo.commit({"calc/__init__.py": typed, "tests/test_calc.py": TESTS.replace(
        "def test_mean_of_one():", "def test_mean_of_one() -> None:") + "\n\ndef test_mean_of_two():\n"
        "    assert mean([1, 3]) == 2\n"}, "Add inline types", "2020-06-01T09:00:00+00:00")
    commented = typed.replace('"""Small arithmetic."""', '"""Small arithmetic (means and scaling)."""').replace(
        "def scale(values, factor):", "# Scaling keeps the order.\ndef scale(values, factor):\n"
        "    \"\"\"Each value times factor.\"\"\"")
    c["comments"] = repo.commit({"calc/__init__.py": commented, "tests/test_calc.py": TESTS.replace(
        "def test_mean_of_one():", "def test_mean_of_one() -> None:") + "\n\n# two values\ndef test_mean_of_two():\n"
        "    assert mean([1, 3]) == 2\n"}, "Fix typos in comments", "2020-07-01T09:00:00+00:00")
    c["squash"] = repo.commit({"calc/__init__.py": commented.replace("v * factor", "v * float(factor)"),
                               "tests/test_calc.py": (repo.path / "tests/test_calc.py").read_text()
                               + "\n\ndef test_scale_str():\n    from calc import scale\n"
                               "    assert scale([1], '2') == [2.0]\n"},
                              "Use float(factor) in scale (#9)", "2020-09-01T09:00:00+00:00")
    c["single"] = repo.commit({"calc/__init__.py": (repo.path / "calc/__init__.py").read_text()
                               + "\n\ndef clamp(v, lo, hi):\n    return max(lo, min(v, hi))\n",
                               "tests/test_clamp.py": "from calc import clamp\n\n\ndef test_clamp():\n"
                               "    assert clamp(5, 0, 3) == 3\n"},
                              "clamp() is missing\n\nUsers need to bound values.\n\nSigned-off-by: t <t@localhost>",
                              "2021-02-01T09:00:00+00:00", author_date="2019-01-01T09:00:00+00:00")
    repo.git("notes", "--ref=issues", "add", "-m", "Issue #3: there is no way to bound a value.", c["single"])
    return repo, c


def test_a_pull_request_is_one_candidate_and_no_fix_commits_are_dropped_before_any_container(history):
    repo, c = history
    report = mine_repository(repo.path, repo="me/calc")
    assert [cand["fix_commit"] for cand in report.candidates] == [c["single"], c["squash"], c["pr"]]
    pr = report.candidates[2]
    # The pull request: based on the merge's first parent, its diff split into source and tests; its two
    # commits are not mined again (the test commit alone and the fix commit alone were each no candidate).
    assert pr["base_commit"] == repo.rev(c["pr"] + "^1") and pr["merged_commits"] == [c["pr_test"], c["pr_fix"]]
    assert "calc/__init__.py" in pr["patch"] and "tests/" not in pr["patch"]
    assert "test_mean_of_two" in pr["test_patch"] and "calc/" not in pr["test_patch"]
    assert report.commits_seen == 9 and report.merges == 1  # 7 on the first-parent line + the 2 merged
    assert report.dropped == [(c["comments"], "source: docstrings only"),
                              (c["typing"], "source: type annotations only"),
                              (c["format"], "source: formatting or comments only")]
    assert not report.skipped


def test_since_and_until_by_commit_and_by_committer_date(history):
    repo, c = history

    def fixes(**bounds):
        return [cand["fix_commit"] for cand in mine_repository(repo.path, repo="me/calc", **bounds).candidates]

    assert fixes(until=c["squash"]) == [c["squash"], c["pr"]]  # a range that ends before HEAD
    assert fixes(since=c["pr"]) == [c["single"], c["squash"]]  # since a commit: that commit excluded
    assert fixes(since=c["pr"], until=c["squash"]) == [c["squash"]]
    assert fixes(until="2020-03-03") == [c["pr"]]  # a day is whole; the merge's date, not its commits'
    assert fixes(until="2020-03-02") == []
    assert fixes(since="2020-04", until="2020-12") == [c["squash"]]  # months
    # Committer date: the single fix was authored in 2019 but landed in 2021.
    assert fixes(since="2021-01-01") == [c["single"]] and fixes(until="2019-12-31") == []
    assert fixes(since="2021-02-01T09:00:00+00:00") == [c["single"]]
    assert fixes(since="2021-02-01T09:00:01+00:00") == []
    assert fixes(since="2021-02-01T10:00:00+01:00") == [c["single"]]  # an offset is honoured
    with pytest.raises(SpecError, match=r"--until 'nowhere': neither a commit .* nor a date"):
        fixes(until="nowhere")
    with pytest.raises(SpecError, match="--since '2021-13'"):
        fixes(since="2021-13")


def test_statements_come_from_the_pull_request_notes_and_trailers_with_the_fix_masked(history):
    repo, _ = history
    report = mine_repository(repo.path, repo="me/calc")
    single, squash, pr = report.candidates
    # The merge's description first (its generated subject left out), then the commits' messages; the
    # fix's new helper _count is masked where the text writes it as code; mean stays (the tests use it).
    assert pr["problem_statement"] == ("mean() is off by one\n\nmean([1, 3]) returns 4 instead of 2.\n\n"
                                       f"Add a failing test for mean of two\n\nDivide by {MASK}(values)")
    assert pr["statement"] == {"sources": ["pull request (merge message)", "2 commit message(s)"], "flags": [],
                               "masked": ["_count"], "linked_issues": ["#4"]}
    assert single["problem_statement"] == ("clamp() is missing\n\nUsers need to bound values.\n\n"
                                           "Issue #3: there is no way to bound a value.")
    assert single["statement"]["sources"] == ["commit message", "git notes"] and not single["statement"]["flags"]
    assert squash["problem_statement"] == "Use float(factor) in scale (#9)"  # float is a builtin: kept
    assert squash["statement"]["flags"] == ["one-line", "squash-merged one-line title"]
    readme = readme_section(report.candidates)
    assert "1 from a merged pull request" in readme and "2 from a single commit's message (1 squash-merged)" in readme
    assert f"- `{squash['instance_id']}`: one-line, squash-merged one-line title" in readme
    assert "1 with `git notes`" in readme and "1 statement(s)" in readme


def test_a_big_merge_is_a_branch_walked_unit_by_unit(tmp_path):
    repo = calc_repo(tmp_path)
    repo.git("checkout", "-q", "-b", "develop")
    fixes = []

    def limit(n: int, date: str) -> None:
        fixes.append(repo.commit({"calc/__init__.py": (repo.path / "calc/__init__.py").read_text()
                                  + f"\n\nLIMIT_{n} = {n}\n", f"tests/test_limit_{n}.py": f"from calc import LIMIT_{n}"
                                  f"\n\n\ndef test_l():\n    assert LIMIT_{n} == {n}\n"}, f"Add LIMIT_{n}", date))

    limit(0, "2020-02-01T00:00:00Z")
    repo.git("checkout", "-q", "main")
    on_main = repo.commit({"calc/extra.py": "E = 1\n", "tests/test_extra.py": "def test_e():\n    assert 1\n"},
                          "Add E", "2020-02-02T00:00:00Z")
    repo.git("checkout", "-q", "develop")
    sync = repo.merge("main", "Merge branch 'main' into develop", "2020-02-03T00:00:00Z")
    limit(1, "2020-02-04T00:00:00Z")
    limit(2, "2020-02-05T00:00:00Z")
    repo.git("checkout", "-q", "main")
    merge = repo.merge("develop", "Merge branch 'develop'", "2020-03-01T00:00:00Z")
    as_pr = mine_repository(repo.path, repo="me/calc")
    assert [(x["fix_commit"], x.get("merged_commits")) for x in as_pr.candidates] == [
        (merge, [fixes[0], sync, fixes[1], fixes[2]]), (on_main, None)]
    assert as_pr.candidates[0]["problem_statement"] == "Add LIMIT_0\n\nAdd LIMIT_1\n\nAdd LIMIT_2"
    # More than max_pr_commits: a branch, its own line walked; its merge of main brings in nothing new (the
    # main line has it), so main's fix is mined once, from the main line.
    as_branch = mine_repository(repo.path, repo="me/calc", max_pr_commits=2)
    assert [x["fix_commit"] for x in as_branch.candidates] == [*fixes[::-1], on_main]
    assert all(x["base_commit"] == repo.rev(x["fix_commit"] + "^") for x in as_branch.candidates)
    assert as_branch.commits_seen == 7 and as_branch.merges == 0  # all 7 commits, each once


def test_a_formatting_merge_is_dropped_and_a_real_change_beside_a_formatting_one_is_kept(tmp_path):
    repo = calc_repo(tmp_path)
    repo.git("checkout", "-q", "-b", "lint")
    repo.commit({"calc/__init__.py": CALC.replace('"""Small arithmetic."""', "# Small arithmetic.")},
                "Drop the module docstring", "2020-02-01T00:00:00Z")
    repo.commit({"tests/test_calc.py": TESTS + "\n\n\n\n"}, "blank lines", "2020-02-02T00:00:00Z")
    repo.git("checkout", "-q", "main")
    lint = repo.merge("lint", "Merge pull request #2 from me/lint\n\nLint", "2020-02-03T00:00:00Z")
    report = mine_repository(repo.path, repo="me/calc")
    assert report.candidates == [] and report.dropped == [(lint, "source: docstrings only")]
    repo.git("checkout", "-q", "-b", "lint2")
    now = (repo.path / "calc/__init__.py").read_text()
    repo.commit({"calc/__init__.py": now.replace("return [v * factor", "return [(v * factor)"),
                 "tests/test_calc.py": TESTS.replace("== 2", "== 2.0") + "\n", "docs/usage.md": "Use it\n"},
                "Parenthesise", "2020-03-01T00:00:00Z")
    repo.git("checkout", "-q", "main")
    merge = repo.merge("lint2", "Merge pull request #3 from me/lint2\n\nParentheses", "2020-03-02T00:00:00Z")
    report = mine_repository(repo.path, repo="me/calc")
    assert report.dropped == [(merge, "source: formatting or comments only"), (lint, "source: docstrings only")]
    repo.commit({"calc/__init__.py": now.replace("sum(values)", "float(sum(values))"),
                 "tests/test_calc.py": TESTS + "\n\ndef test_f():\n    assert 1\n"},
        "Real change", "2020-04-01T00:00:00Z")
    assert [x["problem_statement"] for x in mine_repository(repo.path, repo="me/calc").candidates] == ["Real change"]


KLASS = ("import os\n\n\nclass A:\n    x: int\n\n    def f(self):\n        return os.sep\n\n"
         '    @property\n    def g(self):\n        """Doc."""\n        return 2\n\n\nZ = A()\n')


@pytest.mark.parametrize(("before", "after", "level"), [
    ("x = [1,2]\n", "x = [\n    1,\n    2,\n]  # two\n", 0),
    ("s = 'a' 'b'\n", 's = "ab"\n', 0),
    ("import sys\nimport os\nfrom a import (b, c)\n", "from __future__ import print_function\nimport os\nimport sys\n"
     "from a import c, b\n", 0),
    ('def f():\n    """Doc."""\n    return 1\n', "def f():\n    return 1\n", 1),
    ('class A:\n    x = 1\n    """About x."""\n', "class A:\n    x = 1\n", 1),
    ("def f(a, *b, c=1, **d):\n    y = g(a)\n    return y\n",
     "from __future__ import annotations\nimport typing\nfrom typing import TYPE_CHECKING, cast\n"
     "if TYPE_CHECKING:\n    from x import T\n\n"
     "def f(a: int, *b: str, c: int = 1, **d: T) -> int:\n    y: int = cast(int, g(a))\n    z: str\n    return y\n", 2),
    ("class P:\n    x: int\n", "class P:\n    x: 'str'\n", 2),  # a field's type: no change
    ("class P:\n    x: int\n", "class P:\n    x: int = 0\n", None),  # a field's default: a change
    ("class P:\n    x: int\n", "class P:\n    pass\n", None),  # a dataclass field gone: a change
    ("x = 1\n", "x = 2\n", None),
    ("import os\nimport sys\nos.x()\n", "import sys\nos.x()\nimport os\n", None),  # moved past code
    ("print 'py2'\n", "print('py2')\n", None),  # does not parse: kept
    (None, '"""Only a docstring."""\n', 1),
    # Only what the change touched is compared; what it sits in still counts.
    (KLASS, KLASS.replace("Doc.", "Docs."), 1),
    (KLASS, KLASS.replace("return 2", "return 3"), None),
    (KLASS, KLASS.replace("    x: int\n", "    x: 'int'\n"), 2),
    (KLASS, KLASS.replace("    x: int\n", ""), None),
    (KLASS, KLASS.replace("class A:", "class A(B):"), None),
    ("a = 1\nb = 2\nc = 3\n", "b = 2\na = 1\nc = 3\n", None),  # moved past an unchanged statement
    ("def f():\n    a = g()\n    b = 2\n    return a\n", "def f():\n    b = 2\n    a = g()\n    return a\n", None),
    ("import c\nimport b\nimport a\nx = 1\n", "import a\nimport b\nimport c\nx = 1\n", 0),
])
def test_python_levels(before, after, level):
    enc = [None if s is None else s.encode() for s in (before, after)]
    assert python_level(*enc) == level


def test_other_files_count_unless_documentation_or_linter_settings():
    py = ("a.py", b"x=1\n", b"x = 1\n")
    assert why_not_a_fix([py, ("docs/conf.py", b"a=1", b"a=2"), ("CHANGELOG.rst", b"", b"x"),
                          (".github/workflows/ci.yml", b"", b"x"), ("AUTHORS", None, b"me")]) == \
        "formatting or comments only"
    assert why_not_a_fix([py, ("calc/data.json", b"{}", b"[]")]) is None
    assert why_not_a_fix([py, ("requirements.txt", b"a\n", b"b\n")]) is None
    assert why_not_a_fix([py, ("pyproject.toml", b"[tool.ruff]\nx = 1\n", b"[tool.ruff]\nx = 2\n[tool.isort]\n")]) \
        == "formatting or comments only"
    assert why_not_a_fix([py, ("pyproject.toml", b"[project]\nname = 'a'\n",
                               b"[project]\nname = 'a'\ndependencies = ['b']\n")]) is None
    assert why_not_a_fix([py, ("setup.cfg", b"[flake8]\nignore = E1\n[metadata]\nname = a\n",
                               b"[metadata]\nname = a\n[mypy-x.*]\nstrict = 1\n")]) == "formatting or comments only"
    assert why_not_a_fix([py, ("setup.cfg", b"[metadata]\nname = a\n", b"[metadata]\nname = b\n")]) is None


def test_masking_keeps_prose_the_tests_names_and_the_code_being_changed():
    patch = ("--- a/m.py\n+++ b/m.py\n-    return parse(url)\n+    return parse_url(url, retries=Retry(3))\n"
             "+    x = helperFn(url)\n")
    test_patch = "+++ b/tests/test_m.py\n+    assert fetch(url) == 1\n"
    text = ("fetch(url) breaks on IPv6: parse fails.\nUse parse_url with `Retry` and urllib3.Retry, or helperFn; "
            "a Retry count is prose, url too.")
    st = compose(None, [text], [], patch=patch, test_patch=test_patch)
    assert st.text == (f"fetch(url) breaks on IPv6: parse fails.\nUse {MASK} with `{MASK}` and urllib3.{MASK}, or "
                       f"{MASK}; a Retry count is prose, url too.")
    assert st.masked == ("Retry", "helperFn", "parse_url")
    lines = compose("Merge branch 'x' into main", ["Fix it\n\nCloses #12, #13\nCo-authored-by: a <a@b>",
                                                   "Merge branch 'main' into x", "Fix it"], [])
    assert lines.text == "Fix it" and lines.linked_issues == ("#12", "#13") and lines.flags == ("one-line",)
    assert json.loads(json.dumps(lines.provenance()))["linked_issues"] == ["#12", "#13"]


def test_mine_cli_takes_a_range_and_counts_what_the_pre_filter_dropped(history, tmp_path, capsys):
    from envgym.cli import main

    repo, c = history
    out = tmp_path / "suite"
    assert main(["swe", "mine", str(repo.path), "--suite", "swe-calc", "--out", str(out), "--no-label", "--no-resolve",
                 "--since", "2020-02", "--until", c["squash"]]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert ("dropped as no fix (AST pre-filter, -v lists them): 3: 1 source: docstrings only, 1 source: type "
            "annotations only, 1 source: formatting or comments only") in printed
    rows = json.loads((out / "candidates.swebench.json").read_text())
    assert [r["fix_commit"] for r in rows] == [c["squash"], c["pr"]]
    assert main(["swe", "mine", str(repo.path), "--suite", "swe-calc", "--out", str(out), "--no-label", "--no-resolve",
                 "--until", "last tuesday"]) == 2
    assert "--until 'last tuesday': neither a commit" in " ".join(capsys.readouterr().err.split())


def test_a_latin_1_diff_is_skipped_with_the_reason_not_a_crash(tmp_path):
    repo = calc_repo(tmp_path)
    (repo.path / "calc/__init__.py").write_bytes(CALC.encode() + b"\nNAME = 'caf\xe9'\n")
    fix = repo.commit({"tests/test_name.py": "def test_name():\n    from calc import NAME\n    assert NAME\n"},
                      "Add NAME", "2020-02-01T00:00:00Z")
    report = mine_repository(repo.path, repo="me/calc")
    assert report.candidates == [] and report.skipped == [(fix, "the diff is not UTF-8 text")]
