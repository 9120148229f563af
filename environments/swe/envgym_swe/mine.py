"""``envgym swe mine``: candidate SWE instances from a repository's own history.

::

    report = mine_repository(Path("~/src/mylib"), repo="me/mylib", since="2024-01-01", limit=50)
    report.candidates     # SWE-bench rows, FAIL_TO_PASS / PASS_TO_PASS still empty (envgym swe label fills them)
    report.skipped        # (commit, reason) of fix-like commits that cannot be used
    report.ranges         # EnvRange per run of consecutive candidates sharing an environment (one image each)

Units of history: the first-parent line of ``HEAD`` (or of ``--until``), newest first. A commit on it is one
unit (its parent is the base); a merge on it is one unit, a merged pull request, with the merge's first
parent as base and the whole change it brought in as its diff, so a pull request whose test and fix are
separate commits is one candidate and none of its commits is counted again. A merge that brings in more
than ``max_pr_commits`` (50) commits is a branch (``Merge branch 'develop'``), not a pull request: the
branch's own first-parent line is walked instead, unit by unit. The range: ``since`` / ``until`` each a
commit (sha, tag, branch: ``since`` excluded, ``until`` included, as git's ``SINCE..UNTIL``) or a date
(``YYYY-MM``, ``YYYY-MM-DD``, or an ISO time; UTC unless an offset is given; a month or a day is whole:
``--until 2021-12`` takes in December), compared with each unit's **committer** date: when the change
landed on the line mined (an author date can be years older after a rebase or cherry-pick).

A unit is a candidate when it changes source and tests together: at least one non-test ``.py`` file, and
test files with added lines (a change that only deletes tests is no fix). It is split into ``patch``
(every non-test file) and ``test_patch`` (the test files), both against the base, the ``base_commit``. Test
files: anything under a ``test``/``tests``/``testing`` folder, ``test_*.py``, ``*_test.py`` and
``conftest.py``. Before anything else is spent on it, :func:`envgym_swe.prefilter.why_not_a_fix` drops a
unit whose source changes are formatting, comments, docstrings or type annotations only (an AST
comparison of each changed file), or whose test changes are; ``report.dropped`` has each with the reason.
A unit whose diff is binary, or whose test patch touches no ``.py`` test file, is skipped with the reason.

The ``problem_statement`` comes from what the history says about the change, never from its diff
(:func:`envgym_swe.statements.compose`: the pull request's merge message, its commits' messages, ``git
notes``; identifiers the fix adds masked); a unit with none of these is skipped. The row's ``statement``
says where it came from and flags one-line ones; ``merged_commits`` lists a pull request's commits. Each
candidate's environment is ``environment(path, base_commit)``: :func:`envgym_swe.environment.infer_environment`
(host only, the repository's files as written) by default, or
:func:`envgym_swe.environment.resolved_environment` (the build backend's metadata, every requirement pinned as of
the base commit's date; an era that cannot be built is skipped here, with the cause, before any labelling); its
``version`` names the environment, so the importer builds one image per environment.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from envgym.plugin import SpecError
from envgym_swe.environment import Environment, infer_environment
from envgym_swe.prefilter import why_not_a_fix
from envgym_swe.statements import compose, is_squash_title

_TEST_DIRS = {"test", "tests", "testing"}
_DATE = re.compile(r"\d{4}-\d{2}(?:-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?)?")


@dataclass(frozen=True)
class EnvRange:
    """Consecutive candidates (oldest to newest) whose base commits share one environment."""

    version: str
    first: str
    last: str
    count: int
    environment: Environment


@dataclass
class MineReport:
    repo: str
    commits_seen: int = 0
    """Every commit in the range: the units and the commits merged pull requests brought in."""
    merges: int = 0
    """Units that are merged pull requests."""
    candidates: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)
    """(commit, reason) of units the pre-filter dropped as no fix (:mod:`envgym_swe.prefilter`)."""
    ranges: list[EnvRange] = field(default_factory=list)


def is_test_path(path: str) -> bool:
    parts = path.split("/")
    name = parts[-1]
    return (any(p in _TEST_DIRS for p in parts[:-1]) or name == "conftest.py"
            or (name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))))


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), "-c", "core.quotepath=off", *args], capture_output=True, text=True,
                          errors="surrogateescape")  # old history holds Latin-1 files: kept, then refused below
    if proc.returncode != 0:
        raise SpecError(f"git {' '.join(args[:2])} in {repo} failed: {proc.stderr.strip()[-500:]}")
    return proc.stdout


def default_repo_name(repo: Path) -> str:
    return "local/" + (re.sub(r"[^A-Za-z0-9_.\-]+", "-", repo.resolve().name).strip("-.") or "repo")


@dataclass(frozen=True)
class Unit:
    """One unit of history: a commit of the line mined, or a merge with the commits it brought in."""

    commit: str
    base: str
    merged: tuple[str, ...] = ()
    """The commits a merged pull request brought in, oldest first; empty for a single commit."""


def _bound(repo: Path, value: str, option: str) -> tuple[str | None, float, float]:
    """``value`` as (commit, None, None) or (None, start, end) of the period a date names (module docstring)."""
    text = value.strip()
    if _DATE.fullmatch(text):
        try:
            if len(text) == 7:  # a month
                start = datetime.fromisoformat(text + "-01").replace(tzinfo=UTC)
                end = start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)
            else:
                start = datetime.fromisoformat(text.replace(" ", "T"))
                start = start if start.tzinfo else start.replace(tzinfo=UTC)
                end = start + (timedelta(days=1) if len(text) == 10 else timedelta(seconds=1))
        except ValueError as exc:
            raise SpecError(f"{option} {value!r}: {exc}") from None
        return None, start.timestamp(), end.timestamp()
    proc = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", value + "^{commit}"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SpecError(f"{option} {value!r}: neither a commit of {repo} nor a date (YYYY-MM, YYYY-MM-DD, "
                        "YYYY-MM-DDTHH:MM[:SS][+HH:MM])")
    return proc.stdout.strip(), 0.0, 0.0


def history_units(repo: Path, *, since: str | None = None, until: str | None = None, rev: str = "HEAD",
                  max_pr_commits: int = 50) -> Iterator[tuple[Unit | None, int]]:
    """(unit, commits it stands for) of the range, newest first (see the module docstring); the unit is None
    for a root commit (nothing to compare with) and a branch's merge (walked through), counted all the same."""
    since_commit, since_ts = None, float("-inf")
    until_ts = float("inf")
    if since:
        since_commit, since_ts, _ = _bound(repo, since, "--since")
        since_ts = since_ts if since_commit is None else float("-inf")
    if until:
        commit, _, end = _bound(repo, until, "--until")
        rev, until_ts = (commit, float("inf")) if commit else (rev, end)
    yield from _walk(repo, rev, [since_commit] if since_commit else [], since_ts, until_ts, max_pr_commits)


def _walk(repo: Path, tip: str, stop: list[str], since_ts: float, until_ts: float,
          max_pr_commits: int) -> Iterator[tuple[Unit | None, int]]:
    lines = _git(repo, "log", "--first-parent", "--format=%H %ct %P", tip, *(f"^{s}" for s in stop)).splitlines()
    for line in lines:
        commit, when, *parents = line.split()
        if not since_ts <= float(when) < until_ts:
            continue
        if not parents:
            yield None, 1
        elif len(parents) == 1:
            yield Unit(commit, parents[0]), 1
        else:
            merged = tuple(_git(repo, "rev-list", "--reverse", *parents[1:], f"^{parents[0]}",
                                *(f"^{s}" for s in stop)).split())  # on a branch: nothing the line has
            if not merged:  # a merge of what the line already has (a branch syncing with main)
                yield None, 1
            elif len(merged) <= max_pr_commits:
                yield Unit(commit, parents[0], merged), 1 + len(merged)
            else:  # a branch, not a pull request: its own line, unit by unit
                yield None, 1
                for side in parents[1:]:
                    yield from _walk(repo, side, [parents[0], *stop], since_ts, until_ts, max_pr_commits)


def _notes(repo: Path) -> dict[str, list[str]]:
    """Every ``git notes`` note of the repository (any notes ref), by the commit it annotates."""
    found: dict[str, list[str]] = {}
    for ref in _git(repo, "for-each-ref", "--format=%(refname)", "refs/notes/").split():
        for line in _git(repo, "notes", f"--ref={ref}", "list").splitlines():
            blob, target = line.split()
            found.setdefault(target, []).append(_git(repo, "cat-file", "blob", blob))
    return found


def _message(repo: Path, commit: str) -> str:
    return _git(repo, "log", "-1", "--format=%B", commit)


def _contents(repo: Path, commit: str, paths: list[str]) -> list[bytes | None]:
    """The blobs of ``paths`` at ``commit`` (None where absent), in one ``git cat-file --batch``."""
    proc = subprocess.run(["git", "-C", str(repo), "cat-file", "--batch"], capture_output=True, check=False,
                          input="".join(f"{commit}:{p}\n" for p in paths).encode())
    out, pos, blobs = proc.stdout, 0, []
    for _ in paths:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        if header[-1] == b"missing" or len(header) < 3:
            blobs.append(None)
            pos = end + 1
            continue
        size = int(header[2])
        blobs.append(out[end + 1:end + 1 + size])
        pos = end + 2 + size
    return blobs


def _no_fix(repo: Path, unit: Unit, source: list[str], tests: list[str]) -> str | None:
    """Why the pre-filter drops ``unit`` (see :mod:`envgym_swe.prefilter`), or None."""
    sides = [_contents(repo, c, source + tests) for c in (unit.base, unit.commit)]
    files = list(zip(source + tests, *sides, strict=True))
    why = why_not_a_fix(files[:len(source)])
    if why is not None:
        return f"source: {why}"
    if all(p.endswith(".py") for p in tests) and why_not_a_fix(files[len(source):]) is not None:
        return "tests: " + why_not_a_fix(files[len(source):])
    return None


def _split(repo: Path, parent: str, commit: str) -> tuple[list[str], list[str], str | None]:
    """(source paths, test paths, why not a candidate | None)."""
    names = _git(repo, "diff", "--no-renames", "--name-only", parent, commit).splitlines()
    tests = [p for p in names if is_test_path(p)]
    source = [p for p in names if not is_test_path(p)]
    if not any(p.endswith(".py") for p in source) or not tests:
        return source, tests, "not a fix with tests"
    added = _git(repo, "diff", "--no-renames", "--numstat", parent, commit, "--", *tests).splitlines()
    if not any(line.split("\t", 1)[0] not in ("0", "-") for line in added):
        return source, tests, "not a fix with tests"  # only deletes tests: no test tells the fix
    if not any(p.endswith(".py") for p in tests):
        return source, tests, "the test changes touch no .py test file"
    return source, tests, None


def mine_repository(path: str | Path, *, repo: str | None = None, since: str | None = None, until: str | None = None,
                    limit: int | None = None, rev: str = "HEAD", max_pr_commits: int = 50,
                    environment: Callable[[Path, str], Environment] = infer_environment,
                    log: Callable[[str], None] = lambda _: None) -> MineReport:
    """Candidate instances of the repository at ``path`` (see the module docstring)."""
    path = Path(path).expanduser().resolve()
    if not (path / ".git").exists() and _git_dir(path) is None:
        raise SpecError(f"{path} is not a git repository")
    name = repo or default_repo_name(path)
    if not re.fullmatch(r"[A-Za-z0-9_.\-]+/[A-Za-z0-9_.\-]+", name):
        raise SpecError(f"repository name {name!r}: expected OWNER/NAME")
    report = MineReport(repo=name)
    owner_name = name.replace("/", "__")
    envs: dict[str, Environment] = {}
    notes = _notes(path)
    for unit, count in history_units(path, since=since, until=until, rev=rev, max_pr_commits=max_pr_commits):
        if limit is not None and len(report.candidates) >= limit:
            break
        report.commits_seen += count
        if unit is None:
            continue  # the root commit: nothing to compare with
        commit, parent = unit.commit, unit.base
        report.merges += bool(unit.merged)
        source, tests, why = _split(path, parent, commit)
        if why == "not a fix with tests":
            continue
        if why is not None:
            report.skipped.append((commit, why))
            continue
        why = _no_fix(path, unit, source, tests)
        if why is not None:
            report.dropped.append((commit, why))
            log(f"dropped {commit[:12]}: {why}")
            continue
        patch = _git(path, "diff", "--no-color", "--no-renames", "--binary", "--full-index", parent, commit, "--",
                     *source)
        test_patch = _git(path, "diff", "--no-color", "--no-renames", "--binary", "--full-index", parent, commit,
                          "--", *tests)
        if "GIT binary patch" in patch + test_patch:
            report.skipped.append((commit, "binary files changed"))
            continue
        try:
            (patch + test_patch).encode()
        except UnicodeEncodeError:
            report.skipped.append((commit, "the diff is not UTF-8 text"))
            continue
        if parent not in envs:
            envs[parent] = environment(path, parent)
        env = envs[parent]
        if env.problem:
            report.skipped.append((commit, f"environment at {parent[:12]}: {env.problem}"))
            continue
        own = _message(path, commit)
        said = compose(own if unit.merged else None, [_message(path, c) for c in unit.merged] or [own],
                       [n for c in (commit, *unit.merged) for n in notes.get(c, [])],
                       squash=not unit.merged and is_squash_title(own), patch=patch, test_patch=test_patch)
        if not said.text:
            report.skipped.append((commit, "no commit message to state the problem"))
            continue
        report.candidates.append({
            "instance_id": f"{owner_name}-{commit[:10]}", "repo": name, "base_commit": parent,
            "patch": patch, "test_patch": test_patch, "problem_statement": said.text,
            "statement": said.provenance(), **({"merged_commits": list(unit.merged)} if unit.merged else {}),
            "FAIL_TO_PASS": [], "PASS_TO_PASS": [], "version": env.version, "install": env.install,
            "requirements": list(env.requirements), **({"test_cmd": env.test_cmd} if env.test_cmd else {}),
            "created_at": _git(path, "log", "-1", "--format=%aI", commit).strip(),
            "fix_commit": commit, "environment": {"layout": env.layout, "python": env.python,
                                                    **({"pinned_at": env.pinned_at} if env.pinned_at else {}),
                                                    **({"newer": list(env.newer)} if env.newer else {})},
        })
        log(f"candidate {commit[:12]} ({len(source)} source, {len(tests)} test files, {env.version})")
    for cand in reversed(report.candidates):  # oldest first: ranges of history
        env = envs[cand["base_commit"]]
        last = report.ranges[-1] if report.ranges else None
        if last is not None and last.version == env.version:
            report.ranges[-1] = EnvRange(env.version, last.first, cand["base_commit"], last.count + 1, env)
        else:
            report.ranges.append(EnvRange(env.version, cand["base_commit"], cand["base_commit"], 1, env))
    return report


def _git_dir(path: Path) -> str | None:
    proc = subprocess.run(["git", "-C", str(path), "rev-parse", "--git-dir"], capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None
