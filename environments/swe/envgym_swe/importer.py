"""``envgym swe import``: SWE-bench instances + local git repositories -> images and a task suite.

::

    report = import_instances("instances.jsonl", {"owner/name": Path("~/src/name")}, suite="swe-mine",
                              out_dir=Path("tasks/swe-mine"))
    report.tasks, report.skipped, report.images          # TaskSpecs, (instance_id, reason), (tag, built?)

Every instance's fields are validated first (:class:`~envgym_swe.instances.InstanceError` names each
instance and field). Then, per instance, on the host: the repository must be given and hold the base
commit, and the gold patch and the test patch must apply there (checked against the base tree in a private
index, the work tree is never touched); an instance that fails is skipped with its reason and the rest
import. One image is built per (repo, version) (:mod:`envgym_swe.images`). Tasks are written to
``out_dir/tasks.jsonl`` with a README; their env id is :func:`env_id_for` the suite. The test patch and
the FAIL_TO_PASS / PASS_TO_PASS lists live only in the ``tests`` verifier spec; the reference solution
applies the gold patch through the tools. Suites written outside ``tasks/`` are remembered in
``~/.cache/envgym/swe/suites.json`` so their env ids register.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envgym.errors import EnvgymError
from envgym.task import TaskSpec, write_tasks
from envgym.types import Action, Limits
from envgym.verify.tests import TestsSpec
from envgym_swe.images import ImageSpec, build_requires, ensure_image, git, has_commit
from envgym_swe.instances import Instance, load_instances, parse_instances

STATE_DIR = Path.home() / ".cache" / "envgym" / "swe"
SUITES_INDEX = STATE_DIR / "suites.json"
REPOS_INDEX = STATE_DIR / "repos.json"
GOLD_PATH = "/tmp/gold.patch"


@dataclass
class ImportReport:
    suite: str
    env_id: str
    tasks: list[TaskSpec] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    images: list[tuple[str, bool]] = field(default_factory=list)
    out_dir: Path | None = None


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


def _remember(path: Path, key: str, value: str) -> None:
    index = _load_index(path)
    index[key] = value
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(index, indent=2, sort_keys=True))
    tmp.replace(path)


def imported_suites() -> dict[str, str]:
    """Suite name -> folder of suites imported outside ``tasks/`` (their env ids register too)."""
    return {name: folder for name, folder in _load_index(SUITES_INDEX).items() if Path(folder).is_dir()}


def known_repo(repo: str) -> Path | None:
    """The local repository ``repo`` was last imported from, if it still exists."""
    path = _load_index(REPOS_INDEX).get(repo)
    return Path(path) if path and Path(path).is_dir() else None


def import_instances(instances: Iterable[Instance | dict[str, Any]] | str | Path, repos: Mapping[str, str | Path],
                     suite: str, out_dir: str | Path | None = None, *, build: bool = True, split: str = "test",
                     test_timeout_s: float = 300.0, remember: bool = True,
                     log: Callable[[str], None] = lambda _: None) -> ImportReport:
    """Validate, check, build images and write the suite; see the module docstring.

    ``remember=False`` leaves ``~/.cache/envgym/swe`` alone (tests, throw-away imports).
    """
    if isinstance(instances, str | Path):
        parsed = load_instances(instances)
    else:
        items = list(instances)
        parsed = [i for i in items if isinstance(i, Instance)]
        rows = [i for i in items if not isinstance(i, Instance)]
        parsed += parse_instances(rows) if rows else []
    report = ImportReport(suite=suite, env_id=env_id_for(suite))
    paths = {name: Path(p).expanduser().resolve() for name, p in repos.items()}
    accepted: list[Instance] = []
    for inst in parsed:
        repo = paths.get(inst.repo)
        if repo is None:
            report.skipped.append((inst.instance_id, f"no local repository for {inst.repo} (--repo {inst.repo}=PATH)"))
            continue
        if not has_commit(repo, inst.base_commit):
            report.skipped.append((inst.instance_id, f"base_commit {inst.base_commit} is not in {repo}"))
            continue
        full = git(repo, "rev-parse", f"{inst.base_commit}^{{commit}}").strip()
        inst = inst.model_copy(update={"base_commit": full})
        for what, patch in (("gold patch", inst.patch), ("test patch", inst.test_patch)):
            problem = _applies(repo, full, patch) if patch.strip() else None
            if problem:
                report.skipped.append((inst.instance_id, f"{what} does not apply at {full[:12]}: {problem}"))
                break
        else:
            accepted.append(inst)
    groups: dict[tuple[str, str, str, tuple[str, ...]], list[Instance]] = {}
    for inst in accepted:
        groups.setdefault((inst.repo, inst.version, inst.install, tuple(sorted(inst.requirements))), []).append(inst)
    for (repo_name, version, install, requirements), members in groups.items():
        commits = tuple(sorted({i.base_commit for i in members}))
        spec = ImageSpec(repo=repo_name, version=version, commits=commits, requirements=requirements,
                         install=install, build_requires=build_requires(paths[repo_name], commits))
        if build:
            try:
                report.images.append(ensure_image(spec, paths[repo_name], log=log))
            except EnvgymError as exc:
                report.skipped.extend((i.instance_id, f"image build failed: {exc}") for i in members)
                continue
        if remember:
            _remember(REPOS_INDEX, repo_name, str(paths[repo_name]))
        report.tasks.extend(build_task(i, report.env_id, spec, split=split, test_timeout_s=test_timeout_s)
                            for i in members)
    order = {i.instance_id: n for n, i in enumerate(parsed)}
    report.tasks.sort(key=lambda t: order[t.metadata["instance_id"]])
    if out_dir is not None and report.tasks:
        report.out_dir = write_suite(report, Path(out_dir), remember=remember)
    return report


def write_suite(report: ImportReport, out_dir: Path, *, remember: bool = True) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    write_tasks(out_dir / "tasks.jsonl", report.tasks)
    repos = sorted({t.initial_state["repo"] for t in report.tasks})
    lines = [f"# {report.suite}", "",
             f"{len(report.tasks)} SWE tasks (env `{report.env_id}`) imported by `envgym swe import` from "
             f"SWE-bench-format instances of {', '.join(f'`{r}`' for r in repos)}. Each task is a repository at its "
             "base commit in a container; the hidden tests (FAIL_TO_PASS / PASS_TO_PASS) grade it.", "",
             "    envgym swe build --suite " + report.suite + "   # build the repository images if missing",
             f"    envgym check {report.env_id}", ""]
    if report.skipped:
        lines += ["Skipped at import:", ""] + [f"- `{i}`: {why}" for i, why in report.skipped] + [""]
    (out_dir / "README.md").write_text("\n".join(lines))
    from envgym.task import suites_root

    try:
        inside = out_dir.resolve().parent == suites_root().resolve()
    except OSError:
        inside = False
    if remember and not inside:
        _remember(SUITES_INDEX, report.suite, str(out_dir.resolve()))
    return out_dir
