"""``envgym swe import``: SWE-bench instances + local git repositories -> images and a task suite.

::

    report = import_instances("instances.jsonl", {"owner/name": Path("~/src/name")}, suite="swe-mine",
                              out_dir=suites_dir() / "swe-mine")
    report.tasks, report.skipped, report.images          # TaskSpecs, (instance_id, reason), (tag, built?)

An instance that cannot be used is skipped with its reason and the rest import: fields that do not validate
(:func:`sort_instances` names each field), a ``test_cmd`` grading would refuse (:func:`grading_test_cmd`: shell
steps before pytest become image build steps, noted in ``report.adjusted``; steps that change the tests'
environment are refused, the field named), an empty FAIL_TO_PASS (nothing tells the fix from the bug:
``envgym swe label`` finds the tests), a repository not given or lacking the base commit, a gold or test
patch that does not apply there (:func:`check_instances`: checked against the base tree in a private index,
the work tree is never touched), an image that does not build. One image is built per (repo, version,
install, requirements) and per environment inferred at the base commits (:func:`image_groups`,
:mod:`envgym_swe.environment`, :mod:`envgym_swe.images`). Tasks are written to ``out_dir/tasks.jsonl`` with a
README; their env id is :func:`env_id_for` the suite. The test patch and the FAIL_TO_PASS / PASS_TO_PASS
lists live only in the ``tests`` verifier spec; the reference solution applies the gold patch through the
tools. User suites go to :func:`suites_dir` by default (never into envgym's source tree); suites written
outside ``tasks/`` are remembered in ``~/.cache/envgym/swe/suites.json`` so their env ids register (as user
suites: ``SuiteSpec.user``, which the project's own checks leave out), until :func:`forget_suite` (``envgym swe
forget SUITE``). The repositories a suite came from are recorded in its own folder (:data:`SOURCE`), never in
state shared by every import of the user: two imports at once cannot re-point each other's repository.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import tempfile
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envgym.plugin import Action, EnvgymError, Limits, SpecError, TaskSpec, suites_root
from envgym.plugin import write_suite as _write_suite
from envgym.plugin.tests import TestsSpec
from envgym_swe.images import ImageSpec, build_requires, ensure_image, git, has_commit
from envgym_swe.instances import Instance, InstanceError, parse_instances, read_jsonl

STATE_DIR = Path.home() / ".cache" / "envgym" / "swe"
SUITES_INDEX = STATE_DIR / "suites.json"
REPOS_INDEX = STATE_DIR / "repos.json"
"""Deprecated (until 0.3): the one repository path per name every import of a user shared; read only when a
suite folder has no :data:`SOURCE`, never written."""
SOURCE = "source.json"
"""In each imported suite's folder: what made it and the local repositories it came from (:func:`suite_source`)."""
GOLD_PATH = "/tmp/gold.patch"


@dataclass
class ImportReport:
    suite: str
    env_id: str
    tasks: list[TaskSpec] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    images: list[tuple[str, bool]] = field(default_factory=list)
    out_dir: Path | None = None
    adjusted: list[tuple[str, str]] = field(default_factory=list)
    repos: dict[str, str] = field(default_factory=dict)
    """Repository name -> the local path the tasks' images were built from (written to the suite's :data:`SOURCE`)."""
    """(instance_id, what changed) for instances imported in a form grading can run (:func:`grading_test_cmd`)."""


def env_id_for(suite: str) -> str:
    """``swe-<lib>`` -> ``swe/<lib>-v1`` (other names are slugged the same way)."""
    name = re.sub(r"[^a-z0-9_]+", "-", suite.lower().removeprefix("swe-")).strip("-")
    if not name or not name[0].isalpha():
        name = f"s{name}"
    return f"swe/{name}-v1"


def task_id_for(instance_id: str) -> str:
    slug = re.sub(r"[^a-z0-9_.\-]+", "-", instance_id.lower()).strip("-.")
    return slug if slug and slug[0].isalnum() else f"i{slug}"


def _applies(repo: Path, commit: str, patch: str) -> str | None:
    """None when ``patch`` applies to ``commit``'s tree, else git's complaint."""
    with tempfile.TemporaryDirectory(prefix="envgym-swe-index-") as tmp:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        for args, stdin in ((["read-tree", commit], None), (["apply", "--cached", "--check", "-"], patch)):
            proc = subprocess.run(["git", "-C", str(repo), *args], input=stdin, capture_output=True, text=True,
                                  env=env)
            if proc.returncode != 0:
                return proc.stderr.strip().splitlines()[0] if proc.stderr.strip() else f"git {args[0]} failed"
    return None


def build_task(instance: Instance, env_id: str, image: ImageSpec, *, split: str = "test",
               test_timeout_s: float = 300.0) -> TaskSpec:
    tests = TestsSpec(base_commit=instance.base_commit, test_patch=instance.test_patch,
                      fail_to_pass=instance.FAIL_TO_PASS, pass_to_pass=instance.PASS_TO_PASS,
                      timeout_s=test_timeout_s, **({"test_cmd": instance.test_cmd} if instance.test_cmd else {}))
    solution = (Action.call("create", path=GOLD_PATH, content=instance.patch),
                Action.call("bash", cmd=f"git apply --whitespace=nowarn {GOLD_PATH} && git status --short"),
                Action.call("submit"))
    return TaskSpec(
        id=task_id_for(instance.instance_id), env_id=env_id, split=split, instruction=instance.problem_statement,
        initial_state={"repo": instance.repo, "version": instance.version, "base_commit": instance.base_commit,
                       "image": image.model_dump(mode="json")},
        limits=Limits(max_steps=50, episode_timeout_s=1800.0, step_timeout_s=max(600.0, test_timeout_s + 300)),
        verifiers=(tests,), solution=solution, tags=("swe", instance.repo),
        metadata={"instance_id": instance.instance_id, "repo": instance.repo, "version": instance.version})


def _load_index(path: Path) -> dict[str, str]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _update_index(path: Path, change: Callable[[dict[str, str]], Any]) -> Any:
    """``change(index)`` applied to the index at ``path`` under an exclusive lock (imports and mines running at
    once would otherwise drop each other's entries); returns what ``change`` returned."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        index = _load_index(path)
        result = change(index)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(index, indent=2, sort_keys=True))
        tmp.replace(path)
    return result


def _remember(path: Path, key: str, value: str) -> None:
    _update_index(path, lambda index: index.__setitem__(key, value))


def suites_dir() -> Path:
    """Where user suites go unless told otherwise: ``$XDG_DATA_HOME/envgym/swe/suites`` (default
    ``~/.local/share/envgym/swe/suites``), never envgym's own ``tasks/`` folder. Read at each call."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "envgym" / "swe" / "suites"


def forget_suite(suite: str, *, delete: bool = False) -> Path:
    """Drop ``suite`` from the remembered suites (its env id no longer registers); with ``delete`` also remove its
    folder. Returns the folder. SpecError for a suite never imported (bundled suites are not remembered)."""
    def drop(index: dict[str, str]) -> Path:
        if suite not in index:
            known = ", ".join(sorted(index)) or "none"
            raise SpecError(f"no imported suite {suite!r} (imported suites: {known})")
        folder = Path(index[suite])
        if delete and folder.resolve().is_relative_to(suites_root().resolve().parent):
            raise SpecError(f"{folder} is inside envgym's own tree: not deleting it (remove it by hand)")
        del index[suite]
        return folder

    folder = _update_index(SUITES_INDEX, drop)
    if delete and folder.is_dir():
        shutil.rmtree(folder)
    return folder


def imported_suites() -> dict[str, str]:
    """Suite name -> folder of suites imported outside ``tasks/`` (their env ids register too). A folder that no
    longer holds task files (deleted, or emptied: a checkout whose untracked files went) is left out, so a stale
    index entry cannot break ``envgym swe build --all`` or the suite listing."""
    return {name: folder for name, folder in _load_index(SUITES_INDEX).items()
            if Path(folder).is_dir() and any(Path(folder).glob("*.jsonl"))}


def suite_source(folder: str | Path) -> dict[str, Any] | None:
    """What the suite folder's :data:`SOURCE` says (``made_by``, ``suite``, ``env_id``, ``repos``), or None."""
    try:
        data = json.loads((Path(folder) / SOURCE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def known_repo(repo: str, folder: str | Path | None = None) -> Path | None:
    """The local repository of ``repo`` that the suite in ``folder`` was imported from (its :data:`SOURCE`), if it
    still exists. A folder without one (imported before 0.2) falls back to the user-wide index, which warns."""
    source = suite_source(folder) if folder is not None else None
    if source is not None:
        path = (source.get("repos") or {}).get(repo)
    else:
        path = _load_index(REPOS_INDEX).get(repo)
        if path:
            warnings.warn(f"{REPOS_INDEX} (one repository path per name for every import of this user) is "
                          f"deprecated since 0.2 and goes in 0.3: import the suite again to record {repo}'s "
                          f"repository in its folder's {SOURCE}", DeprecationWarning, stacklevel=2)
    return Path(path) if path and Path(path).is_dir() else None


def sort_instances(rows: Iterable[Instance | dict[str, Any]]) -> tuple[list[Instance], list[tuple[str, str]]]:
    """Instances that parse, and (instance_id, reason) for each row that does not (every field problem named)."""
    parsed: list[Instance] = []
    skipped: list[tuple[str, str]] = []
    seen: set[str] = set()
    for number, row in enumerate(rows, start=1):
        if isinstance(row, Instance):
            inst = row
        else:
            name = row.get("instance_id") if isinstance(row, dict) else None
            label = name if isinstance(name, str) and name else f"#{number}"
            try:
                inst = parse_instances([row])[0]
            except InstanceError as exc:
                problems = [line.strip().split(": ", 1)[-1] for line in str(exc).splitlines()[1:]]
                skipped.append((label, "; ".join(problems)))
                continue
        if inst.instance_id in seen:
            skipped.append((inst.instance_id, "duplicate instance_id (the first one is kept)"))
            continue
        seen.add(inst.instance_id)
        parsed.append(inst)
    return parsed, skipped


_SHELL_STEP = re.compile(r"\s*(?:&&|;|\n)\s*")
_ENV_CHANGING = re.compile(r"(?:^|&&|;|\n)\s*(?:export|cd|pushd|source|\.|set|unset|ulimit|umask|alias)\b"
                           r"|(?:^|&&|;|\n)\s*[A-Za-z_][A-Za-z0-9_]*=")


def grading_test_cmd(inst: Instance) -> tuple[Instance, str | None]:
    """``inst`` as grading can run it, and a note when it had to change; SpecError naming the field when it cannot.

    Grading runs pytest alone through its own runner (:func:`envgym.plugin.tests.pytest_args`), never a shell the
    agent's work could reach. A ``test_cmd`` that is shell steps and then pytest (``pip install -e . && pytest
    tests``) keeps the pytest command; the steps before it join the image's install command, run once at build.
    Steps that change the tests' environment (``export``, ``cd``, ``source``, ``VAR=...``) cannot become a build
    step: such an instance is refused, as is a ``test_cmd`` with no pytest command at its end."""
    from envgym.plugin.tests import TestsSpec, pytest_args

    def runs(cmd: str) -> bool:
        try:
            pytest_args(TestsSpec(base_commit=inst.base_commit, fail_to_pass=("-",), test_cmd=cmd))
        except (EnvgymError, ValueError):  # VerifierError, or shlex's "No closing quotation"
            return False
        return True

    if inst.test_cmd is None or runs(inst.test_cmd):
        return inst, None
    steps = [m.end() for m in _SHELL_STEP.finditer(inst.test_cmd)]
    cut = next((end for end in reversed(steps) if runs(inst.test_cmd[end:])), None)
    why = ("grading runs pytest alone (`python3 -m pytest ARGS` or `pytest ARGS`), never a shell step: "
           f"{inst.test_cmd!r}")
    if cut is None:
        raise SpecError(f"{why} has no pytest command at its end", field="test_cmd")
    prefix = inst.test_cmd[:cut].rstrip().removesuffix("&&").removesuffix(";").strip()
    if _ENV_CHANGING.search(prefix):
        raise SpecError(f"{why} starts with `{prefix}`, which changes the tests' environment and cannot run at "
                        "image build", field="test_cmd")
    fixed = inst.model_copy(update={"test_cmd": inst.test_cmd[cut:].strip(),
                                    "install": f"{inst.install} && {prefix}"})
    return fixed, (f"test_cmd's shell step `{prefix}` runs at image build (after `install`); grading runs "
                   f"`{fixed.test_cmd}`")


def check_instances(parsed: Iterable[Instance], paths: Mapping[str, Path], *, need_labels: bool = True,
                    notes: list[tuple[str, str]] | None = None) -> tuple[list[Instance], list[tuple[str, str]]]:
    """Host-side checks: a ``test_cmd`` grading can run (:func:`grading_test_cmd`, whose notes go to ``notes``), a
    repository given, holding the base commit, gold and test patch applying there (and, with ``need_labels``, a
    non-empty FAIL_TO_PASS). Returns (usable instances with full commit ids, skipped)."""
    accepted: list[Instance] = []
    skipped: list[tuple[str, str]] = []
    for inst in parsed:
        try:
            inst, note = grading_test_cmd(inst)
        except SpecError as exc:
            suffix = " (field 'test_cmd')"
            skipped.append((inst.instance_id, "field 'test_cmd': " + str(exc).removesuffix(suffix)))
            continue
        if note and notes is not None:
            notes.append((inst.instance_id, note))
        repo = paths.get(inst.repo)
        if need_labels and not inst.FAIL_TO_PASS:
            skipped.append((inst.instance_id, "FAIL_TO_PASS is empty: no test tells the fix from the bug "
                                              "(`envgym swe label` finds them)"))
            continue
        if repo is None:
            skipped.append((inst.instance_id, f"no local repository for {inst.repo} (--repo {inst.repo}=PATH)"))
            continue
        if not has_commit(repo, inst.base_commit):
            skipped.append((inst.instance_id, f"base_commit {inst.base_commit} is not in {repo}"))
            continue
        full = git(repo, "rev-parse", f"{inst.base_commit}^{{commit}}").strip()
        inst = inst.model_copy(update={"base_commit": full})
        for what, patch in (("gold patch", inst.patch), ("test patch", inst.test_patch)):
            problem = _applies(repo, full, patch) if patch.strip() else None
            if problem:
                skipped.append((inst.instance_id, f"{what} does not apply at {full[:12]}: {problem}"))
                break
        else:
            accepted.append(inst)
    return accepted, skipped


def image_groups(accepted: Iterable[Instance], paths: Mapping[str, Path], *,
                 given: Mapping[str, ImageSpec] | None = None) -> list[tuple[ImageSpec, list[Instance]]]:
    """One image spec per (repo, version, install, requirements, inferred environment): commits whose layout
    or pins differ (:mod:`envgym_swe.environment`) never share an install. ``given`` (instance_id -> spec, e.g.
    the images ``envgym swe label`` built) is used as is for the instances it names."""
    # imported here: packaging's parser is slow to import, and the family's registration imports this module
    from envgym_swe.environment import infer_environment

    groups: dict[tuple[str, str, str, tuple[str, ...], str], list[Instance]] = {}
    envs: dict[tuple[str, str], str] = {}
    fixed: dict[str, tuple[ImageSpec, list[Instance]]] = {}
    for inst in accepted:
        spec = (given or {}).get(inst.instance_id)
        if spec is not None and inst.base_commit in spec.commits:
            fixed.setdefault(spec.model_dump_json(), (spec, []))[1].append(inst)
            continue
        key = (inst.repo, inst.base_commit)
        if key not in envs:
            envs[key] = infer_environment(paths[inst.repo], inst.base_commit).version
        groups.setdefault((inst.repo, inst.version, inst.install, tuple(sorted(inst.requirements)), envs[key]),
                          []).append(inst)
    specs = list(fixed.values())
    for (repo_name, version, install, requirements, _), members in groups.items():
        commits = tuple(sorted({i.base_commit for i in members}))
        specs.append((ImageSpec(repo=repo_name, version=version, commits=commits, requirements=requirements,
                                install=install, build_requires=build_requires(paths[repo_name], commits)), members))
    return specs


def import_instances(instances: Iterable[Instance | dict[str, Any]] | str | Path, repos: Mapping[str, str | Path],
                     suite: str, out_dir: str | Path | None = None, *, build: bool = True, split: str = "test",
                     test_timeout_s: float = 300.0, remember: bool = True,
                     images: Mapping[str, ImageSpec] | None = None,
                     log: Callable[[str], None] = lambda _: None) -> ImportReport:
    """Validate, check, build images and write the suite; see the module docstring.

    ``remember=False`` leaves ``~/.cache/envgym/swe`` alone (tests, throw-away imports). ``images``: instance_id
    -> the image spec to use (:func:`image_groups`), e.g. ``LabelReport.specs``.
    """
    rows = read_jsonl(instances) if isinstance(instances, str | Path) else list(instances)
    parsed, skipped = sort_instances(rows)
    report = ImportReport(suite=suite, env_id=env_id_for(suite), skipped=skipped)
    paths = {name: Path(p).expanduser().resolve() for name, p in repos.items()}
    accepted, problems = check_instances(parsed, paths, notes=report.adjusted)
    report.skipped += problems
    for spec, members in image_groups(accepted, paths, given=images):
        if build:
            try:
                report.images.append(ensure_image(spec, paths[spec.repo], log=log))
            except EnvgymError as exc:
                report.skipped.extend((i.instance_id, f"image build failed: {exc}") for i in members)
                continue
        report.repos[spec.repo] = str(paths[spec.repo])
        report.tasks.extend(build_task(i, report.env_id, spec, split=split, test_timeout_s=test_timeout_s)
                            for i in members)
    order = {i.instance_id: n for n, i in enumerate(parsed)}
    report.tasks.sort(key=lambda t: order[t.metadata["instance_id"]])
    if out_dir is not None and report.tasks:
        report.out_dir = write_import(report, Path(out_dir), remember=remember)
    return report


def write_import(report: ImportReport, out_dir: Path, *, remember: bool = True) -> Path:
    """Write ``report``'s suite into ``out_dir`` (``tasks.jsonl`` and a README naming what was skipped, through the
    kernel's one ``write_suite``) and, unless it lies in envgym's own ``tasks/`` or ``remember`` is false,
    remember the folder so its env id registers. Returns ``out_dir``."""
    repos = sorted({t.initial_state["repo"] for t in report.tasks})
    lines = [f"# {report.suite}", "",
             f"{len(report.tasks)} SWE tasks (env `{report.env_id}`) imported by `envgym swe import` from "
             f"SWE-bench-format instances of {', '.join(f'`{r}`' for r in repos)}. Each task is a repository at its "
             "base commit in a container; the hidden tests (FAIL_TO_PASS / PASS_TO_PASS) grade it.", "",
             "    envgym swe build --suite " + report.suite + "   # build the repository images if missing",
             f"    envgym check {report.env_id}", ""]
    if report.skipped:
        lines += ["Skipped at import:", ""] + [f"- `{i}`: {why}" for i, why in report.skipped] + [""]
    if report.adjusted:
        lines += ["Adjusted at import:", ""] + [f"- `{i}`: {note}" for i, note in report.adjusted] + [""]
    _write_suite(report.suite, report.tasks, readme="\n".join(lines), folder=out_dir, log=None)
    # per suite, never per user: two imports at once each point only their own suite at their repositories
    source = {"made_by": "envgym swe import", "suite": report.suite, "env_id": report.env_id,
              "repos": dict(sorted(report.repos.items()))}
    tmp = out_dir / f".{SOURCE}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(source, indent=2) + "\n")
    tmp.replace(out_dir / SOURCE)
    try:
        inside = out_dir.resolve().parent == suites_root().resolve()
    except OSError:
        inside = False
    if remember and not inside:
        _remember(SUITES_INDEX, report.suite, str(out_dir.resolve()))
    return out_dir


def write_suite(report: ImportReport, out_dir: Path, *, remember: bool = True) -> Path:
    """Deprecated: :func:`write_import` (``envgym.plugin.write_suite`` is the one function that writes a suite)."""
    warnings.warn("envgym_swe.importer.write_suite moved to envgym_swe.importer.write_import "
                  "(since 0.2; the alias goes in 0.3)", DeprecationWarning, stacklevel=2)
    return write_import(report, out_dir, remember=remember)
