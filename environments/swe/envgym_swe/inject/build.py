"""Build a bundled suite: inject bugs into a pinned library, keep those its own tests catch, write instances.

:func:`build_suite` makes the library's repository from its sdist (:mod:`envgym_swe.sources`), lists every
mutation of its source files (:mod:`envgym_swe.inject.mutations`), shuffles them with ``seed`` and tries
them in that order, at most ``per_function`` bug per function, in one container (:mod:`.runner`):

* the test files for the mutated module run once with the bug; the clean baseline ran twice, and only
  tests that passed both times count;
* the bug is kept iff the run finished (no timeout, no import/collection error), 1 to ``max_fail`` tests
  that passed on the clean tree fail with it (FAIL_TO_PASS), and it is run a second time with the same
  outcome (no flaky tests in either list). PASS_TO_PASS is every other test of the files that hold a
  FAIL_TO_PASS test and passed both ways;
* kept bugs become one commit each (bug + those test files removed), the gold patch is ``git diff``
  from that commit back to the clean one (the reverse of the injection), the test patch re-adds the test
  files, and the problem statement is written from the failures (:mod:`.statement`).

The SWE-bench instances go to ``instances.swebench.json`` with ``build.json`` (what was built, from which
sdist, how many candidates were tried and why the others were dropped) in suite ``swe-<lib>``'s folder as the
registry knows it (:func:`suite_dir`; ``tasks/swe-<lib>/`` for the bundled ones) by :func:`write_build`; then
``python -m envgym_swe.inject import`` hands them to ``envgym_swe.importer`` which builds the image and writes
``tasks.jsonl``.
"""

from __future__ import annotations

import ast
import asyncio
import hashlib
import json
import lzma
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from envgym.plugin import suites_root
from envgym_swe.inject.mutations import Edit, Mutation, candidates
from envgym_swe.inject.runner import RunResult, TestRunner
from envgym_swe.inject.statement import write_statement
from envgym_swe.sources import (
    CACHE,
    PYTEST,
    SCALED_LIBRARIES,
    Library,
    add_task_commit,
    build_repo,
    diff,
    library,
)

TEST_CMD = " ".join([*PYTEST[:-1], "-rA", "--tb=short"])
"""What the graders run (the test files are appended); prints pytest's ``-rA`` summary."""
TEST_FRACTION = 0.3


INJECTED = "swe-injected"
"""The folder under ``tasks/`` holding the scaled set, one sub-folder per library (data only, no suite)."""
INSTANCES = "instances.swebench.json"
PACKED = INSTANCES + ".xz"
"""The scaled set stores its instances xz-compressed: each ``test_patch`` re-adds whole test files, the same
ones again and again, so the plain JSON is ~43 KB an instance and compresses a few hundredfold
(``python -m envgym_swe.inject export --lib NAME`` writes the plain JSON; so does ``xz -dk``)."""


def suite_dir(lib: Library) -> Path:
    """The folder of suite ``swe-<lib>`` as the registry knows it (a new one goes under ``tasks/``); a library of
    the scaled set: ``tasks/swe-injected/<lib>/``."""
    if lib.name in SCALED_LIBRARIES:
        return suites_root() / INJECTED / lib.name
    return suites_root(f"swe-{lib.name}")


def split_of(instance_id: str) -> str:
    """A stable train/test split: about ``TEST_FRACTION`` of the ids go to test."""
    bucket = int(hashlib.sha256(instance_id.encode()).hexdigest()[:8], 16) % 100
    return "test" if bucket < TEST_FRACTION * 100 else "train"


def test_files_for(lib: Library, repo: Path, source_path: str) -> list[str]:
    stem = Path(source_path).stem
    globs = lib.tests_for.get(stem, lib.test_globs)
    return sorted({p.relative_to(repo).as_posix() for g in globs for p in repo.glob(g)})


def _add(names: dict[str, list[str]], name: str, spelling: str) -> None:
    if spelling not in names.setdefault(name, []):
        names[name].append(spelling)


def public_names(lib: Library, repo: Path) -> dict[str, list[str]]:
    """Bare name -> every way users spell it (``partition`` -> ``[toolz.partition]``, ``to_text`` ->
    ``[boltons.tableutils.Table.to_text, boltons.urlutils.URL.to_text]``), from the mutable source files."""
    init = repo / lib.package / "__init__.py"
    init_text = init.read_text() if init.is_file() else ""
    names: dict[str, list[str]] = {}
    for path in sorted(p for g in lib.source_globs for p in repo.glob(g)):  # not test helpers (toolz.utils)
        rel = path.relative_to(repo)
        module = ".".join(rel.with_suffix("").parts).removesuffix(".__init__")
        if f"from .{path.stem} import *" in init_text:
            module = lib.package
        try:
            tree = ast.parse(path.read_text())
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                _add(names, node.name, f"{module}.{node.name}")
            if isinstance(node, ast.ClassDef):
                for sub in node.body:
                    if isinstance(sub, ast.FunctionDef) and not sub.name.startswith("_"):
                        _add(names, sub.name, f"{module}.{node.name}.{sub.name}")
    return names


@dataclass
class BuildReport:
    lib: str
    tried: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    instances: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    run: int = 0
    """Candidates validated in all (the parallel build runs some ahead of the ones its walk reaches)."""
    worker_seconds: float = 0.0
    """Container time those took, summed over workers and resumed runs (the parallel build's journal)."""
    complete: bool = True
    """False when written from a journal whose walk had not finished (``build --from-journal``)."""


def _usable(test_id: str) -> bool:
    """Ids the graders' ``-rA`` parsing reads back unambiguously."""
    return " - " not in test_id and "\n" not in test_id


def _detail_rank(detail: dict[str, Any]) -> tuple[int, int]:
    return (0 if detail.get("exc_type") == "AssertionError" and detail.get("raised_in_test") else 1,
            0 if detail.get("statement") else 1)


@dataclass
class _Plan:
    lib: Library
    repo: Path
    clean: str
    names: dict[str, list[str]]
    sources: dict[str, str]
    pool: list[Mutation]


def _candidates(path: str, text: str, cache: Path) -> list[Mutation]:
    """:func:`.mutations.candidates`, cached by file text and mutator source: a big module (pyparsing's
    ``core.py``) takes minutes, since each mutant is parsed to check that it changes the AST."""
    import envgym_swe.inject.mutations as mutations

    key = hashlib.sha256(f"{path}\0{text}\0{Path(mutations.__file__).read_text()}".encode()).hexdigest()[:20]
    stored = cache / "inject" / "candidates" / f"{key}.json"
    if stored.is_file():
        return [Mutation(**{**m, "edits": tuple(Edit(**e) for e in m["edits"])})
                for m in json.loads(stored.read_text())]
    found = candidates(path, text)
    stored.parent.mkdir(parents=True, exist_ok=True)
    tmp = stored.with_suffix(".tmp")
    tmp.write_text(json.dumps([asdict(m) for m in found]))
    tmp.replace(stored)
    return found


def _plan(name: str, seed: int, cache: Path) -> _Plan:
    """The repository from the sdist and the seeded order of every candidate mutation (host work)."""
    lib = library(name)
    repo, clean = build_repo(lib, cache=cache)
    sources = {p.relative_to(repo).as_posix(): p.read_text()
               for g in lib.source_globs for p in sorted(repo.glob(g))}
    pool = [m for path, text in sources.items() for m in _candidates(path, text, cache)]
    random.Random(f"{lib.name}:{seed}").shuffle(pool)
    return _Plan(lib, repo, clean, public_names(lib, repo), sources, pool)


def _record(plan: _Plan, mutation: Mutation, result: RunResult, f2p: list[str], p2p: list[str],
            seed: int) -> dict[str, Any]:
    """Commit a kept bug and return its SWE-bench instance (host work)."""
    lib, repo = plan.lib, plan.repo
    owner, project = lib.repo.split("/")
    iid = f"{owner}__{project}-{lib.version}-{mutation.key}"
    hidden = sorted({t.split("::", 1)[0] for t in f2p})
    commit = add_task_commit(repo, iid, {mutation.path: mutation.apply(plan.sources[mutation.path])}, hidden)
    details = sorted((dict(result.details.get(t, {}), file=t.split("::", 1)[0]) for t in f2p), key=_detail_rank)
    modules = {f: (repo / f).read_text() for f in hidden}
    return {
        "instance_id": iid, "repo": lib.repo, "base_commit": commit,
        "patch": diff(repo, commit, plan.clean, [mutation.path]),
        "test_patch": diff(repo, commit, plan.clean, hidden),
        "problem_statement": write_statement(details, lib.package, plan.names, modules, len(f2p)),
        "FAIL_TO_PASS": f2p, "PASS_TO_PASS": p2p, "version": lib.version,
        "requirements": list(lib.requirements), "install": lib.install,
        "test_cmd": " ".join([TEST_CMD, *lib.deselect_args]),
        "environment_setup_commit": plan.clean, "created_at": "2024-01-01T00:00:00Z", "split": split_of(iid),
        "injection": {"kind": mutation.kind, "file": mutation.path, "function": mutation.function, "seed": seed},
    }


async def build_suite(name: str, n: int, seed: int, image: str, *, max_fail: int = 20, per_function: int = 1,
                      test_timeout: float = 60, max_tries: int = 400, cache: Path = CACHE,
                      log: Callable[[str], None] = print) -> BuildReport:
    """Find up to ``n`` validated bugs in library ``name``; see the module docstring."""
    started = time.monotonic()
    plan = await asyncio.to_thread(_plan, name, seed, cache)
    lib = plan.lib
    report = BuildReport(lib.name)
    per_func: Counter[tuple[str, str]] = Counter()
    baselines: dict[tuple[str, ...], set[str]] = {}
    async with TestRunner(image, plan.repo, pythonpath=lib.pythonpath, deselect=lib.deselect) as runner:
        for mutation in plan.pool:
            if len(report.instances) >= n or report.tried >= max_tries:
                break
            if per_func[(mutation.path, mutation.function)] >= per_function:
                continue
            files = tuple(test_files_for(lib, plan.repo, mutation.path))
            if files not in baselines:
                first = await runner.run(files, timeout=test_timeout * 2)
                second = await runner.run(files, timeout=test_timeout * 2)
                if first.broken:
                    raise RuntimeError(f"{lib.name}: the clean test run is broken: {first.output[-1500:]}")
                baselines[files] = first.passed() & second.passed()
            report.tried += 1
            mutated = {mutation.path: mutation.apply(plan.sources[mutation.path])}
            result = await runner.run(files, mutated, timeout=test_timeout)
            verdict = _judge(result, baselines[files], max_fail)
            if isinstance(verdict, str):
                report.rejected[verdict] += 1
                continue
            f2p, p2p = verdict
            again = await runner.run(files, mutated, timeout=test_timeout)
            if _judge(again, baselines[files], max_fail) != verdict:
                report.rejected["flaky"] += 1
                continue
            per_func[(mutation.path, mutation.function)] += 1
            report.instances.append(await asyncio.to_thread(_record, plan, mutation, result, f2p, p2p, seed))
            log(f"{lib.name}: kept {len(report.instances)}/{n} ({mutation.kind} in {mutation.function or '<module>'}"
                f", {len(f2p)} F2P, {len(p2p)} P2P) after {report.tried} tries")
    report.seconds = time.monotonic() - started
    return report


def _judge(result: RunResult, baseline: set[str], max_fail: int) -> tuple[list[str], list[str]] | str:
    """(FAIL_TO_PASS, PASS_TO_PASS) of a run with the bug, or why the bug is dropped."""
    if result.timed_out:
        return "timeout"
    if result.broken:
        return "import or collection error"
    f2p = sorted(t for t in baseline if result.status.get(t) == "failed")
    if not f2p:
        return "no test fails"
    if len(f2p) > max_fail:
        return f"more than {max_fail} tests fail"
    if not all(_usable(t) for t in f2p):
        return "unparseable test id"
    hidden = {t.split("::", 1)[0] for t in f2p}
    p2p = sorted(t for t in baseline if t.split("::", 1)[0] in hidden and result.status.get(t) == "passed"
                 and _usable(t))
    return f2p, p2p


def instances_file(folder: Path) -> Path:
    """The instances file of a suite folder: :data:`PACKED` where present, else :data:`INSTANCES`."""
    return folder / PACKED if (folder / PACKED).is_file() else folder / INSTANCES


def save_instances(lib: Library, instances: list[dict[str, Any]], out: Path) -> Path:
    """Write ``instances`` to ``out``: xz-compressed for the scaled set (:data:`PACKED`), plain JSON for the
    bundled suites (whose folders also hold ``tasks.jsonl``). The other form, if any, is removed."""
    text = json.dumps(instances, indent=1) + "\n"
    packed = lib.name in SCALED_LIBRARIES
    path, other = (out / PACKED, out / INSTANCES) if packed else (out / INSTANCES, out / PACKED)
    if packed:
        # check=CHECK_CRC64 and a fixed preset: the same instances give the same bytes (xz(1)'s defaults)
        path.write_bytes(lzma.compress(text.encode(), format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, preset=9))
    else:
        path.write_text(text)
    other.unlink(missing_ok=True)
    return path


def write_build(lib: Library, report: BuildReport, seed: int, out_dir: Path | None = None, *,
                per_function: int = 1, max_fail: int = 20, test_timeout: float | None = None,
                from_journal: bool = False) -> Path:
    """The instances (:func:`save_instances`) and ``build.json`` in the suite folder.

    ``from_journal``: nothing was validated now (``build --from-journal``), so the run's own seconds say nothing
    about the build; ``worker_seconds`` (the journal's validation time) does."""
    out = out_dir or suite_dir(lib)
    out.mkdir(parents=True, exist_ok=True)
    save_instances(lib, report.instances, out)
    meta = {"library": lib.dist, "version": lib.version, "sdist_sha256": lib.sha256, "repo": lib.repo,
            "seed": seed, "per_function": per_function, "max_fail": max_fail,
            **({"test_timeout": test_timeout} if test_timeout is not None else {}), "tried": report.tried,
            "kept": len(report.instances),
            "rejected": dict(sorted(report.rejected.items())),
            **({"written_from_journal": True} if from_journal else {"build_seconds": round(report.seconds, 1)}),
            **({"candidates_run": report.run, "worker_seconds": round(report.worker_seconds, 1),
                "complete": report.complete} if report.run else {}),
            "kinds": dict(sorted(Counter(i["injection"]["kind"] for i in report.instances).items())),
            "splits": dict(sorted(Counter(i["split"] for i in report.instances).items()))}
    (out / "build.json").write_text(json.dumps(meta, indent=1) + "\n")
    return out


def load_instances(lib: Library, out_dir: Path | None = None) -> list[dict[str, Any]]:
    """The stored instances of ``lib`` (either form, see :func:`save_instances`)."""
    path = instances_file(out_dir or suite_dir(lib))
    data = lzma.decompress(path.read_bytes()) if path.suffix == ".xz" else path.read_bytes()
    return json.loads(data)


def write_readme(lib: Library, out: Path) -> None:
    """The suite's README: where the tasks come from and how to rebuild, import and check them."""
    meta = json.loads((out / "build.json").read_text())
    instances = load_instances(lib, out)
    suite = f"swe-{lib.name}"
    env_id = f"swe/{lib.name}-v1"
    kinds = ", ".join(f"{k} {v}" for k, v in meta["kinds"].items())
    lines = [
        f"# {suite}", "",
        f"{len(instances)} SWE tasks (env `{env_id}`) made by injecting bugs into `{lib.dist}=={lib.version}` "
        f"(upstream `{lib.repo}`), a pure-Python library whose sdist ships its own pytest suite. Each bug is a "
        "small AST-located edit of the library's source (SWE-smith's idea), kept only because some of the "
        "library's own tests fail with it and pass without it while the rest of those test files pass both "
        "ways, checked in a container with no network. The problem statement is written from the failing "
        "test's observed call, result and expectation, never from the diff. The gold patch is the reverse of "
        "the injection; the test files holding FAIL_TO_PASS tests are removed from the base commit and come "
        "back only at grading (`test_patch`).", "",
        f"- sdist sha256 `{lib.sha256}`; seed {meta['seed']}; {meta['kept']} kept of {meta['tried']} tried "
        f"(dropped: {', '.join(f'{k} {v}' for k, v in meta['rejected'].items()) or 'none'})",
        f"- bug kinds: {kinds}",
        f"- splits: {', '.join(f'{k} {v}' for k, v in meta['splits'].items())}", "",
        f"Files: `{instances_file(out).name}` (SWE-bench fields, plus `split` and `injection`"
        + ("; xz-compressed: `python -m envgym_swe.inject export --lib " + lib.name + "` writes the plain JSON"
           if instances_file(out).suffix == ".xz" else "")
        + "), `build.json` (how the suite was built), `tasks.jsonl` (the TaskSpecs `envgym swe import` wrote, "
        "once imported).", "",
        "    python -m envgym_swe.inject import --lib " + lib.name + "      # repo from the sdist (same commit ids), "
        "image, tasks.jsonl",
        f"    python -m envgym_swe.inject validate --suite {suite} --sample 5",
        f"    envgym check {env_id}",
        f"    python -m envgym_swe.inject build --lib {lib.name} --n {len(instances)} --seed {meta['seed']} "
        f"--per-function {meta.get('per_function', 1)}   # regenerate from scratch", "",
    ]
    (out / "README.md").write_text("\n".join(lines))


def write_injected_readme(root: Path | None = None) -> Path:
    """``tasks/swe-injected/README.md``: what the scaled set is and a row per library shipped so far."""
    from envgym_swe.sources import SCALED_LIBRARIES

    folder = root or suites_root() / INJECTED
    rows, kept, tried = [], 0, 0
    for sub in sorted(p for p in folder.glob("*") if (p / "build.json").is_file()):
        meta = json.loads((sub / "build.json").read_text())
        lib = SCALED_LIBRARIES[sub.name]
        dropped = ", ".join(f"{k} {v}" for k, v in meta["rejected"].items()) or "none"
        partial = " (walk unfinished)" if meta.get("complete") is False else ""
        rows.append(f"| `{sub.name}` | `{lib.dist}=={lib.version}` | `{lib.repo}` | {meta['kept']}{partial} | "
                    f"{meta['tried']} | {meta['per_function']} | {dropped} |")
        kept, tried = kept + meta["kept"], tried + meta["tried"]
    lines = [
        "# swe-injected: bugs injected into pure-Python libraries, at scale", "",
        f"{kept} SWE-bench instances over {len(rows)} libraries ({tried} candidates tried), made like the bundled "
        "`swe-<lib>` suites (see `environments/swe/envgym_swe/inject/README.md`): a small AST edit of the "
        "library's source from its pinned PyPI sdist, kept only when 1 to `max_fail` of its own tests fail with "
        "it, the same ones in two runs, while the other tests of those files that passed before still pass, checked "
        "in a container with no network. Data only: no suite is registered per library. Each folder holds "
        f"`{PACKED}` (the SWE-bench instances, xz-compressed: `python -m envgym_swe.inject export --lib NAME` "
        "writes the plain JSON), `build.json` and a README. *cap*: at most this many bugs per function.", "",
        "| library | sdist | upstream | kept | tried | cap | dropped |", "|---|---|---|---|---|---|---|", *rows, "",
        "    python -m envgym_swe.inject import --lib NAME                  # image + tasks.jsonl: suite swe-NAME",
        "    python -m envgym_swe.inject validate --suite swe-NAME --sample 5",
        "    python -m envgym_swe.inject export --lib NAME --out NAME.swebench.json  # plain JSON",
        "    python -m envgym_swe.inject build --libs NAME --n 300 --per-function CAP --max-tries 3000 "
        "--test-timeout 20 --workers 2   # continue (journal)", "",
    ]
    (folder / "README.md").write_text("\n".join(lines))
    return folder / "README.md"


async def restate_suite(name: str, image: str, *, test_timeout: float = 60,
                        log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Rewrite the problem statements of ``name``'s stored instances from a fresh run of each bug.

    Nothing else changes (same commits, patches and test lists); a bug whose FAIL_TO_PASS tests no longer
    all fail raises, since the suite would then be invalid.
    """
    from envgym_swe.sources import file_at, rebuild_repo, repo_path

    lib = library(name)
    instances = load_instances(lib)
    repo = repo_path(lib)
    await asyncio.to_thread(rebuild_repo, lib, instances, repo)
    names = public_names(lib, repo)
    async with TestRunner(image, repo, pythonpath=lib.pythonpath, deselect=lib.deselect) as runner:
        for inst in instances:
            path = inst["injection"]["file"]
            buggy = await asyncio.to_thread(file_at, repo, inst["base_commit"], path)
            files = sorted({t.split("::", 1)[0] for t in inst["FAIL_TO_PASS"] + inst["PASS_TO_PASS"]})
            result = await runner.run(files, {path: buggy}, timeout=test_timeout)
            f2p = inst["FAIL_TO_PASS"]
            if any(result.status.get(t) != "failed" for t in f2p):
                raise RuntimeError(f"{inst['instance_id']}: FAIL_TO_PASS no longer all fail with the bug")
            details = sorted((dict(result.details.get(t, {}), file=t.split("::", 1)[0]) for t in f2p),
                             key=_detail_rank)
            modules = {f: (repo / f).read_text() for f in {d["file"] for d in details}}
            inst["problem_statement"] = write_statement(details, lib.package, names, modules, len(f2p))
            log(f"{lib.name}: restated {inst['instance_id']}")
    save_instances(lib, instances, suite_dir(lib))
    return instances
