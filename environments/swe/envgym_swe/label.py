"""``envgym swe label``: find FAIL_TO_PASS and PASS_TO_PASS by running the tests, N times, in containers.

::

    report = await label_instances(candidates, {"me/mylib": Path("~/src/mylib")}, runs=2,
                                   record_dir=Path("labelled.label"), progress=print)
    report.rows           # the usable instances, FAIL_TO_PASS / PASS_TO_PASS filled (plus "flaky")
    report.results        # a LabelResult per instance: the lists, the flaky tests, or why it was skipped

Each instance (SWE-bench fields; FAIL_TO_PASS may be empty) is checked on the host and grouped into images
exactly as ``envgym swe import`` does (:func:`envgym_swe.importer.check_instances`,
:func:`~envgym_swe.importer.image_groups`). Its test files (the ``.py`` test files its test patch adds or
changes) then run ``runs`` times without the gold patch and ``runs`` times with it, each run in a fresh
container of its image through the grader's own path (:func:`envgym.plugin.tests.run_tests`: the same
checkout, test patch, hijack protection and nonce-tagged runner that grade an agent). Then
(:func:`classify`):

* FAIL_TO_PASS: tests that fail, error or are missing in every run before and pass in every run after;
* PASS_TO_PASS: tests that pass in every run before and after;
* flaky: tests whose status changes between runs of the same side: reported, left out of both lists.

An instance is skipped, with the reason, when no test goes from failing to passing, when the gold patch
does not apply, or when a run with the gold patch did not end normally (timeout, killed interpreter); the
reason carries the cause read from the run's log and a hint (:mod:`envgym_swe.causes`).

**Following and stopping it.** Candidates are labelled one after another, each one's before and after runs
together (``concurrency`` runs at once, the earliest candidate's first), so results come in order as they
are made; ``progress`` gets a line per run and per candidate (with the ETA: the candidates left at this
invocation's rate). A run whose container fails (not its tests) is started again, up to ``runs`` times a
candidate. A candidate's ``seconds``
is its runs' own time, no waiting for a slot included. With ``record_dir``, each candidate's result is
appended to ``record_dir/records.jsonl`` (fsync'd) the moment it is known, under ``record_dir/run.json``'s
configuration; calling again with the same ``record_dir`` resumes the way ``envgym eval`` does: candidates
with a record are not run again, a torn last line is cut off, results whose containers kept failing
(``infra``) are retried as a new attempt, and a folder holding another configuration (``runs``, the test
timeout) is refused. Cancelling (Ctrl-C) stops the runs in flight, stops their containers and keeps every
recorded result.

:func:`validate_tasks` grades the gold patch and the empty patch of imported tasks through the verifier
itself (:func:`envgym.plugin.tests.grade_patch`): gold must resolve, empty must not.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import ValidationError

from envgym.plugin import EnvgymError, FrozenModel, SandboxError, SpecError, TaskSpec, canonical_json
from envgym.plugin.records import JsonlWriter, read_jsonl
from envgym.plugin.tests import PASSING, TestRun, grade_patch, patch_paths, run_tests
from envgym_swe import containers
from envgym_swe.causes import cause, explain, hint
from envgym_swe.env import task_image
from envgym_swe.grade import tests_spec
from envgym_swe.images import ImageSpec, ensure_image, image_tag
from envgym_swe.importer import check_instances, image_groups, sort_instances
from envgym_swe.instances import Instance
from envgym_swe.mine import is_test_path

NOT_PASSING_BEFORE = frozenset({"FAILED", "ERROR", "MISSING"})
"""Statuses a FAIL_TO_PASS test may have before the fix (a skipped or timed-out test tells nothing)."""
RECORDS, RUN = "records.jsonl", "run.json"
"""The files of a ``record_dir`` (see the module docstring)."""
_T = TypeVar("_T")


class LabelRecord(FrozenModel):
    """One line of ``records.jsonl``: a candidate's result, keyed by the content of what was labelled."""

    schema_version: Literal[1] = 1
    key: str
    """:func:`instance_key` of the instance: an edited instance is labelled again."""
    instance_id: str
    fail_to_pass: tuple[str, ...] = ()
    pass_to_pass: tuple[str, ...] = ()
    flaky: tuple[str, ...] = ()
    reason: str | None = None
    infra: bool = False
    """The containers kept failing (nothing the tests said): retried on resume."""
    seconds: float = 0.0
    attempt: int = 1


@dataclass
class LabelResult:
    instance_id: str
    fail_to_pass: list[str] = field(default_factory=list)
    pass_to_pass: list[str] = field(default_factory=list)
    flaky: list[str] = field(default_factory=list)
    reason: str | None = None
    """Why the instance is not usable; None when it is."""
    seconds: float = 0.0
    """The candidate's runs' own time (each run from taking its container to giving it back), no queueing."""
    infra: bool = False
    retries: int = 0
    """Runs started again because their container failed."""
    recorded: bool = False
    """Taken from an earlier invocation's records (not run now)."""
    attempt: int = 1


@dataclass
class LabelReport:
    results: list[LabelResult] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    images: list[tuple[str, bool]] = field(default_factory=list)
    specs: dict[str, ImageSpec] = field(default_factory=dict)
    """instance_id -> the image it ran in (``import_instances(..., images=report.specs)`` builds no other)."""
    resumed: int = 0
    """Candidates whose result an earlier invocation recorded."""

    @property
    def skipped(self) -> list[tuple[str, str]]:
        return [(r.instance_id, r.reason) for r in self.results if r.reason is not None]


def runnable_test_files(test_patch: str) -> list[str]:
    """The test files a test patch adds or changes (``.py``, named as tests; deleted ones left out). Where some
    are named as pytest collects by default (``test_*.py``, ``*_test.py``), only those: a file named on pytest's
    command line is collected whatever its name, and a test folder's other modules are helpers or examples for
    a type checker (attrs' ``tests/dataclass_transform_example.py`` calls ``reveal_type``: its collection error
    hid the real test's outcome)."""
    deleted = set()
    for block in test_patch.split("diff --git ")[1:]:
        if "\n+++ /dev/null" in block:
            deleted.update(patch_paths("diff --git " + block.split("\n", 1)[0]))
    files = sorted(p for p in patch_paths(test_patch) if p not in deleted and p.endswith(".py") and is_test_path(p)
                   and p.rsplit("/", 1)[-1] != "conftest.py")
    named = [p for p in files if fnmatch.fnmatch(p.rsplit("/", 1)[-1], "test_*.py") or p.endswith("_test.py")]
    return named or files  # none so named: a project that collects other names (its own python_files)


def classify(before: Sequence[Mapping[str, str]], after: Sequence[Mapping[str, str]],
             ) -> tuple[list[str], list[str], list[str]]:
    """(FAIL_TO_PASS, PASS_TO_PASS, flaky) from each run's node id -> status (module docstring)."""
    tests = sorted({t for run in [*before, *after] for t in run})
    f2p, p2p, flaky = [], [], []
    for t in tests:
        was = {run.get(t, "MISSING") for run in before}
        now = {run.get(t, "MISSING") for run in after}
        if len(was) > 1 or len(now) > 1:
            flaky.append(t)
        elif now <= PASSING and was <= NOT_PASSING_BEFORE:
            f2p.append(t)
        elif now <= PASSING and was <= PASSING:
            p2p.append(t)
    return f2p, p2p, flaky


def instance_key(inst: Instance) -> str:
    """The content hash of what labelling an instance reads (every field of it, as given)."""
    return hashlib.sha256(canonical_json(inst.model_dump(mode="json")).encode()).hexdigest()[:24]


def open_records(record_dir: Path, config: Mapping[str, Any]) -> dict[str, LabelRecord]:
    """The latest record per instance key in ``record_dir`` (made, with ``run.json``, when new); SpecError when
    the folder holds another configuration or a line that is not a record (file and line named)."""
    record_dir.mkdir(parents=True, exist_ok=True)
    meta_path = record_dir / RUN
    if meta_path.exists():
        try:
            meta = json.loads(meta_path.read_bytes())
        except (ValueError, RecursionError) as exc:
            raise SpecError(f"corrupt labelling metadata ({type(exc).__name__}); choose another --out or delete it",
                            path=str(meta_path)) from None
        if not isinstance(meta, dict) or meta.get("config") != dict(config):
            found = meta.get("config") if isinstance(meta, dict) else None
            raise SpecError(f"{record_dir} holds a labelling with another configuration ({found} != {dict(config)}); "
                            "choose another --out or delete it", path=str(meta_path))
    else:
        tmp = meta_path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"config": dict(config), "created_at": time.time()}, indent=2))
        tmp.replace(meta_path)
    rows, _ = read_jsonl(record_dir / RECORDS, repair=True) if (record_dir / RECORDS).exists() else ([], False)
    found: dict[str, LabelRecord] = {}
    for number, row in enumerate(rows, start=1):
        try:
            record = LabelRecord.model_validate(row)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "?"
            raise SpecError(f"not a labelling record: field {where!r}: {first['msg']}", path=str(record_dir / RECORDS),
                            line=number, field=where) from None
        found[record.key] = record
    return found


async def _off_loop(fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """``fn`` in a daemon thread: unlike ``asyncio.to_thread``, a Ctrl-C does not wait for it (an image build
    can take minutes; the engine finishes or drops it on its own)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[_T] = loop.create_future()

    def settle(value: Any, error: BaseException | None) -> None:
        if done.done():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(value)

    def work() -> None:
        try:
            value, error = fn(*args, **kwargs), None
        except BaseException as exc:  # handed to the awaiting task
            value, error = None, exc
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=work, name=f"envgym-{getattr(fn, '__name__', 'work')}", daemon=True).start()
    return await done


async def _together(coros: list[Any]) -> list[Any]:
    """``gather``, except that the first error (or a cancellation) cancels the others and waits for them (their
    containers given back) before it propagates: ``gather`` returns at its first cancelled child."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        return await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def _counts(run: TestRun) -> str:
    tally: dict[str, int] = {}
    for status in run.statuses.values():
        tally[status.lower()] = tally.get(status.lower(), 0) + 1
    said = ", ".join(f"{n} {s}" for s, n in sorted(tally.items())) or "no test reported"
    return said + (f"; {run.reason}" if run.reason else "")


def _no_fix_detail(before: Sequence[TestRun], after: Sequence[TestRun], files: list[str]) -> str:
    """Why no test goes from failing to passing, from what the runs saw."""
    quiet = next((r for r in after if not r.statuses), None) or next((r for r in before if not r.statuses), None)
    if quiet is not None:
        side = "with" if quiet in after else "without"
        found = cause(quiet.log_tail)
        return f"no test was reported {side} the gold patch" + (f": {found}" if found else "")
    def failing(runs: Sequence[TestRun]) -> set[str]:  # a skip is neither (requests' Windows-only tests)
        return {t for r in runs for t, s in r.statuses.items() if s not in PASSING and s != "SKIPPED"}

    def some(tests: set[str]) -> str:
        return ", ".join(sorted(tests)[:3]) + (" ..." if len(tests) > 3 else "")

    before_failing, after_failing = failing(before), failing(after)
    broken = after_failing - before_failing
    if broken:
        found = cause(after[0].log_tail)
        return (f"with the gold patch {len(broken)} test(s) fail that pass without it ({some(broken)})"
                + (f": {found}" if found else ""))
    both = f"; {len(after_failing)} fail with and without it ({some(after_failing)})" if after_failing else ""
    return (f"the tests of {', '.join(files)} pass before the gold patch too: the test patch does not show the bug"
            f" on this image's Python{both}")


class _Progress:
    """Candidates done and the ETA at this invocation's rate; lines go to ``say``."""

    def __init__(self, total: int, say: Callable[[str], None]) -> None:
        self.total, self.done, self.ran, self.say = total, 0, 0, say
        self.started = time.monotonic()

    def finished(self, res: LabelResult) -> None:
        self.done += 1
        self.ran += 1
        left = self.total - self.done
        eta = (time.monotonic() - self.started) / self.ran * left
        tail = f"; ETA {eta / 60:.1f} min" if left else ""
        self.say(f"[{self.done}/{self.total}] " + describe(res) + f" ({res.seconds:.0f}s of runs"
                 + (f", {res.retries} container retr{'y' if res.retries == 1 else 'ies'}" if res.retries else "")
                 + ")" + tail)


def describe(res: LabelResult) -> str:
    """One candidate's result in a line (``skipped ID: why`` or ``labelled ID: counts``)."""
    if res.reason:
        return f"skipped {res.instance_id}: {res.reason}"
    return (f"labelled {res.instance_id}: {len(res.fail_to_pass)} FAIL_TO_PASS, {len(res.pass_to_pass)} PASS_TO_PASS"
            + (f", flaky (left out): {', '.join(res.flaky)}" if res.flaky else ""))


async def label_one(inst: Instance, image: str, *, runs: int, semaphore: asyncio.Semaphore,
                    test_timeout_s: float, say: Callable[[str], None] = lambda _: None,
                    log: Callable[[str], None] = lambda _: None) -> LabelResult:
    """Label one instance in ``image`` (the module docstring); containers that keep failing make an ``infra``
    result, a grading error is the instance's skip reason: neither stops the other candidates."""
    result = LabelResult(inst.instance_id)
    files = runnable_test_files(inst.test_patch)
    if not files:
        result.reason = "the test patch adds or changes no test file to run"
        return result

    async def once(side: str, n: int, patch: str | None) -> TestRun:
        while True:
            async with semaphore:
                started = time.monotonic()
                try:
                    async with containers.leased(image) as sandbox:
                        run = await run_tests(sandbox, base_commit=inst.base_commit, test_patch=inst.test_patch,
                                              files=files, patch=patch, test_cmd=inst.test_cmd,
                                              timeout_s=test_timeout_s)
                except SandboxError as exc:
                    if result.retries >= runs:  # one retry per run on average; more means a broken engine
                        raise
                    result.retries += 1
                    say(f"  {inst.instance_id} {side} {n}/{runs}: the container failed ({exc}); retrying")
                    continue
                finally:
                    result.seconds += time.monotonic() - started
            say(f"  {inst.instance_id} {side} {n}/{runs}: {_counts(run)} ({time.monotonic() - started:.1f}s)")
            if run.reason or not run.statuses:
                log(f"  {inst.instance_id} {side} {n}/{runs} log:\n{run.log_tail}")
            return run

    try:
        done = await _together([*(once("before", n, None) for n in range(1, runs + 1)),
                                *(once("after", n, inst.patch) for n in range(1, runs + 1))])
    except SandboxError as exc:
        result.reason, result.infra = f"the containers kept failing ({result.retries} retries): {exc}", True
        return result
    except EnvgymError as exc:
        result.reason = f"{type(exc).__name__}: {exc}"
        return result
    before, after = done[:runs], done[runs:]
    bad = next((r for r in after if r.reason is not None), None)
    if bad is not None:
        result.reason = explain(f"with the gold patch: {bad.reason}", bad.log_tail)
        return result
    result.fail_to_pass, result.pass_to_pass, result.flaky = classify([r.statuses for r in before],
                                                                     [r.statuses for r in after])
    if not result.fail_to_pass:
        result.reason = (f"no test fails before the gold patch and passes after it in all {runs} runs"
                         + (f" ({len(result.flaky)} flaky left out)" if result.flaky else "")
                         + f": {_no_fix_detail(before, after, files)}; "
                         + hint((after[0].log_tail if after else "") or (before[0].log_tail if before else "")))
    return result


async def label_instances(instances: Iterable[Instance | dict[str, Any]], repos: Mapping[str, str | Path], *,
                          runs: int = 2, concurrency: int = 2, build: bool = True, test_timeout_s: float = 300.0,
                          images: Mapping[str, ImageSpec] | None = None, record_dir: str | Path | None = None,
                          progress: Callable[[str], None] = lambda _: None,
                          log: Callable[[str], None] = lambda _: None) -> LabelReport:
    """Label every instance (see the module docstring); the rows keep every field they came with. ``images``:
    instance_id -> the image spec to run it in (e.g. a bundled task's), as ``import_instances`` takes it.
    ``record_dir``: where results are recorded as they come and resumed from. ``progress``: a line per run and
    per candidate; ``log``: image builds and the logs of runs that told nothing."""
    if runs < 1:
        raise EnvgymError("runs must be at least 1")
    rows = list(instances)
    originals = {str(r.get("instance_id")): dict(r) for r in rows if isinstance(r, dict)}
    config = {"runs": runs, "test_timeout_s": float(test_timeout_s)}
    recorded = await asyncio.to_thread(open_records, Path(record_dir), config) if record_dir is not None else {}

    def prepare() -> tuple[dict[str, Path], dict[str, str], list[Instance], list[tuple[str, str]], list[Any]]:
        parsed, skipped = sort_instances(rows)
        keys = {i.instance_id: instance_key(i) for i in parsed}
        paths = {name: Path(p).expanduser().resolve() for name, p in repos.items()}
        accepted, problems = check_instances(parsed, paths, need_labels=False)
        return paths, keys, accepted, skipped + problems, image_groups(accepted, paths, given=images)

    paths, keys, accepted, unusable, groups = await asyncio.to_thread(prepare)  # git on the host: off the loop
    report = LabelReport(results=[LabelResult(i, reason=why) for i, why in unusable])
    for res in report.results:
        progress(describe(res))
    earlier = {i.instance_id: recorded[keys[i.instance_id]] for i in accepted
               if keys[i.instance_id] in recorded and not recorded[keys[i.instance_id]].infra}
    for rec in earlier.values():
        report.results.append(LabelResult(rec.instance_id, list(rec.fail_to_pass), list(rec.pass_to_pass),
                                          list(rec.flaky), rec.reason, rec.seconds, recorded=True,
                                          attempt=rec.attempt))
    report.resumed = len(earlier)
    if earlier:
        progress(f"resuming: {len(earlier)} of {len(accepted)} candidates already labelled in {record_dir}")
    jobs: list[tuple[Instance, str]] = []
    for spec, members in groups:
        report.specs.update((inst.instance_id, spec) for inst in members)
        todo = [inst for inst in members if inst.instance_id not in earlier]
        if not todo:
            continue
        if build:
            try:
                built = await _off_loop(ensure_image, spec, paths[spec.repo], log=log)
            except EnvgymError as exc:
                for inst in todo:
                    res = LabelResult(inst.instance_id, reason=f"image build failed: {exc}; hint: rerun with -v "
                                                               "to see the build's output")
                    report.results.append(res)
                    progress(describe(res))
                continue
            report.images.append(built)
        tag = image_tag(spec)
        jobs += [(inst, tag) for inst in todo]
    semaphore = asyncio.Semaphore(max(1, concurrency))
    # a candidate's 2 x runs runs go together; one more candidate than fills the slots keeps them busy at its end
    admitted = asyncio.Semaphore(-(-max(1, concurrency) // (2 * runs)) + 1)
    tracker = _Progress(len(jobs), progress)
    writer = JsonlWriter(Path(record_dir) / RECORDS) if record_dir is not None else None

    async def one(inst: Instance, image: str) -> LabelResult:
        async with admitted:
            res = await label_one(inst, image, runs=runs, semaphore=semaphore, test_timeout_s=test_timeout_s,
                                  say=progress, log=log)
        old = recorded.get(keys[inst.instance_id])
        res.attempt = old.attempt + 1 if old is not None else 1
        if writer is not None:  # durable before it is reported
            await writer.append(LabelRecord(key=keys[inst.instance_id], instance_id=res.instance_id,
                                            fail_to_pass=tuple(res.fail_to_pass), pass_to_pass=tuple(res.pass_to_pass),
                                            flaky=tuple(res.flaky), reason=res.reason, infra=res.infra,
                                            seconds=round(res.seconds, 3), attempt=res.attempt))
        tracker.finished(res)
        return res

    done: list[LabelResult] = []
    try:
        for image in dict.fromkeys(tag for _, tag in jobs):  # one image's pool warm at a time: no idle spares
            await containers.hold(image)
            try:
                done += await _together([one(inst, tag) for inst, tag in jobs if tag == image])
            finally:
                await containers.unhold(image)
    finally:
        if writer is not None:
            writer.close()
    report.results += done
    order = {str(r.get("instance_id") if isinstance(r, dict) else r.instance_id): n for n, r in enumerate(rows)}
    report.results.sort(key=lambda r: order.get(r.instance_id, len(order)))
    by_id = {i.instance_id: i for i in accepted}
    for res in report.results:
        if res.reason is None:
            inst = by_id[res.instance_id]
            row = originals.get(res.instance_id) or json.loads(inst.model_dump_json())
            report.rows.append({**row, "base_commit": inst.base_commit, "FAIL_TO_PASS": res.fail_to_pass,
                                "PASS_TO_PASS": res.pass_to_pass, "flaky": res.flaky})
    return report


@dataclass
class TaskValidation:
    instance_id: str
    gold_resolved: bool
    empty_resolved: bool
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.gold_resolved and not self.empty_resolved


def gold_patch(task: TaskSpec) -> str:
    """The gold patch a task's reference solution writes (``create('/tmp/gold.patch', …)``)."""
    return str(json.loads(task.solution[0].tool_calls[0].arguments)["content"])


async def validate_tasks(tasks: Iterable[TaskSpec], *, concurrency: int = 2) -> list[TaskValidation]:
    """Grade each task's gold patch and the empty patch with its own verifier spec, each in a fresh container."""
    tasks = list(tasks)
    semaphore = asyncio.Semaphore(max(1, concurrency))

    async def grade(task: TaskSpec, patch: str) -> Any:
        async with semaphore, containers.leased(task_image(task)) as sandbox:
            return await grade_patch(tests_spec(task), sandbox, patch)

    async def one(task: TaskSpec) -> TaskValidation:
        gold, empty = await _together([grade(task, gold_patch(task)), grade(task, "")])
        detail = "; ".join([f"gold: {c.name} {c.detail}" for c in gold.criteria if not c.passed]
                           + (["the empty patch resolves it"] if empty.passed else []))
        return TaskValidation(str(task.metadata.get("instance_id", task.id)), gold.passed, empty.passed, detail)

    done: dict[str, TaskValidation] = {}
    for image in dict.fromkeys(task_image(t) for t in tasks):  # one image's pool warm at a time
        await containers.hold(image)
        try:
            mine = [t for t in tasks if task_image(t) == image]
            done.update((t.id, v) for t, v in zip(mine, await _together([one(t) for t in mine]), strict=True))
        finally:
            await containers.unhold(image)
    return [done[t.id] for t in tasks]
