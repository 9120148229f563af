"""``envgym swe mine``: candidate SWE instances from a repository's own history.

::

    report = mine_repository(Path("~/src/mylib"), repo="me/mylib", since="2024-01-01", limit=50)
    report.candidates     # SWE-bench rows, FAIL_TO_PASS / PASS_TO_PASS still empty (envgym swe label fills them)
    report.skipped        # (commit, reason) of fix-like commits that cannot be used
    report.ranges         # EnvRange per run of consecutive candidates sharing an environment (one image each)

A candidate is a non-merge commit reachable from ``HEAD`` (newest first, ``--since`` and ``--limit``
applied) that changes source and tests together: at least one non-test ``.py`` file, and test files with
added lines (a commit that only deletes tests is no fix). It is split into ``patch`` (every non-test file)
and ``test_patch`` (the test files), both against the commit's parent, which is the ``base_commit``. Test
files: anything under a ``test``/``tests``/``testing`` folder, ``test_*.py``, ``*_test.py`` and
``conftest.py``. A commit whose diff is binary, or whose test patch touches no ``.py`` test file, is skipped
with the reason.

The ``problem_statement`` comes from what the history says about the change, never from its diff: the
commit message (trailers such as ``Signed-off-by`` dropped), the message of the merge commit that brought it
into the first-parent line (a pull request's title and description, when the history has merges) and any
``git notes``; a commit with none of these is skipped. Each
candidate's environment is :func:`envgym_swe.environment.infer_environment` at its base commit; its
``version`` names the environment, so the importer builds one image per environment.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envgym.plugin import SpecError
from envgym_swe.environment import Environment, infer_environment

_TEST_DIRS = {"test", "tests", "testing"}
_TRAILER = re.compile(r"^(?:Signed-off-by|Co-authored-by|Reviewed-by|Acked-by|Change-Id|Cc):", re.IGNORECASE)


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
    candidates: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    ranges: list[EnvRange] = field(default_factory=list)


def is_test_path(path: str) -> bool:
    parts = path.split("/")
    name = parts[-1]
    return (any(p in _TEST_DIRS for p in parts[:-1]) or name == "conftest.py"
            or (name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))))


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), "-c", "core.quotepath=off", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SpecError(f"git {' '.join(args[:2])} in {repo} failed: {proc.stderr.strip()[-500:]}")
    return proc.stdout


def default_repo_name(repo: Path) -> str:
    return "local/" + (re.sub(r"[^A-Za-z0-9_.\-]+", "-", repo.resolve().name).strip("-.") or "repo")


def statement(repo: Path, commit: str, mainline: set[str] | None = None, rev: str = "HEAD") -> str:
    """The problem statement of ``commit`` (see the module docstring). ``mainline``: the commits of ``rev``'s
    first-parent chain (computed when not given); a commit off it came in through a merge on it."""
    message = _git(repo, "log", "-1", "--format=%B", commit)
    parts = ["\n".join(line for line in message.strip().splitlines() if not _TRAILER.match(line)).strip()]
    if mainline is None:
        mainline = set(_git(repo, "rev-list", "--first-parent", rev).split())
    if commit not in mainline:  # the oldest mainline merge above it is the one that brought it in
        merges = _git(repo, "rev-list", "--merges", "--ancestry-path", "--reverse", f"{commit}..{rev}").split()
        merge = next((m for m in merges if m in mainline), None)
        text = _git(repo, "log", "-1", "--format=%B", merge).strip() if merge else ""
        if text:
            parts.append("Merged as:\n" + text)
    notes = subprocess.run(["git", "-C", str(repo), "notes", "show", commit], capture_output=True, text=True)
    if notes.returncode == 0 and notes.stdout.strip():
        parts.append("Notes:\n" + notes.stdout.strip())
    return "\n\n".join(p for p in parts if p)


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


def mine_repository(path: str | Path, *, repo: str | None = None, since: str | None = None, limit: int | None = None,
                    rev: str = "HEAD", log: Callable[[str], None] = lambda _: None) -> MineReport:
    """Candidate instances of the repository at ``path`` (see the module docstring)."""
    path = Path(path).expanduser().resolve()
    if not (path / ".git").exists() and _git_dir(path) is None:
        raise SpecError(f"{path} is not a git repository")
    name = repo or default_repo_name(path)
    if not re.fullmatch(r"[A-Za-z0-9_.\-]+/[A-Za-z0-9_.\-]+", name):
        raise SpecError(f"repository name {name!r}: expected OWNER/NAME")
    report = MineReport(repo=name)
    args = ["log", "--no-merges", "--format=%H %P", *([f"--since={since}"] if since else []), rev]
    owner_name = name.replace("/", "__")
    envs: dict[str, Environment] = {}
    mainline = set(_git(path, "rev-list", "--first-parent", rev).split())
    for line in _git(path, *args).splitlines():
        if limit is not None and len(report.candidates) >= limit:
            break
        commit, *parents = line.split()
        report.commits_seen += 1
        if len(parents) != 1:
            continue  # the root commit: nothing to compare with
        parent = parents[0]
        source, tests, why = _split(path, parent, commit)
        if why == "not a fix with tests":
            continue
        if why is not None:
            report.skipped.append((commit, why))
            continue
        patch = _git(path, "diff", "--no-color", "--no-renames", "--binary", "--full-index", parent, commit, "--",
                     *source)
        test_patch = _git(path, "diff", "--no-color", "--no-renames", "--binary", "--full-index", parent, commit,
                          "--", *tests)
        if "GIT binary patch" in patch + test_patch:
            report.skipped.append((commit, "binary files changed"))
            continue
        if parent not in envs:
            envs[parent] = infer_environment(path, parent)
        env = envs[parent]
        if env.problem:
            report.skipped.append((commit, f"environment at {parent[:12]}: {env.problem}"))
            continue
        problem = statement(path, commit, mainline, rev)
        if not problem:
            report.skipped.append((commit, "no commit message to state the problem"))
            continue
        report.candidates.append({
            "instance_id": f"{owner_name}-{commit[:10]}", "repo": name, "base_commit": parent,
            "patch": patch, "test_patch": test_patch, "problem_statement": problem,
            "FAIL_TO_PASS": [], "PASS_TO_PASS": [], "version": env.version, "install": env.install,
            "requirements": list(env.requirements), **({"test_cmd": env.test_cmd} if env.test_cmd else {}),
            "created_at": _git(path, "log", "-1", "--format=%aI", commit).strip(),
            "fix_commit": commit, "environment": {"layout": env.layout, "python": env.python},
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
