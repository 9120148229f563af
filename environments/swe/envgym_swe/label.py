"""``envgym swe label``: find FAIL_TO_PASS and PASS_TO_PASS by running the tests, N times, in containers.

::

    report = await label_instances(candidates, {"me/mylib": Path("~/src/mylib")}, runs=2)
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
does not apply, or when a run with the gold patch did not end normally (timeout, killed interpreter).
:func:`validate_tasks` grades the gold patch and the empty patch of imported tasks through the verifier
itself (:func:`envgym.plugin.tests.grade_patch`): gold must resolve, empty must not.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envgym.plugin import EnvgymError, TaskSpec
from envgym.plugin.tests import PASSING, TestRun, grade_patch, patch_paths, run_tests
from envgym_swe import containers
from envgym_swe.env import task_image
from envgym_swe.grade import tests_spec
from envgym_swe.images import ImageSpec, ensure_image, image_tag
from envgym_swe.importer import check_instances, image_groups, sort_instances
from envgym_swe.instances import Instance
from envgym_swe.mine import is_test_path

NOT_PASSING_BEFORE = frozenset({"FAILED", "ERROR", "MISSING"})
"""Statuses a FAIL_TO_PASS test may have before the fix (a skipped or timed-out test tells nothing)."""


@dataclass
class LabelResult:
    instance_id: str
    fail_to_pass: list[str] = field(default_factory=list)
    pass_to_pass: list[str] = field(default_factory=list)
    flaky: list[str] = field(default_factory=list)
    reason: str | None = None
    """Why the instance is not usable; None when it is."""
    seconds: float = 0.0


@dataclass
class LabelReport:
    results: list[LabelResult] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    images: list[tuple[str, bool]] = field(default_factory=list)
    specs: dict[str, ImageSpec] = field(default_factory=dict)
    """instance_id -> the image it ran in (``import_instances(..., images=report.specs)`` builds no other)."""

    @property
    def skipped(self) -> list[tuple[str, str]]:
        return [(r.instance_id, r.reason) for r in self.results if r.reason is not None]


def runnable_test_files(test_patch: str) -> list[str]:
    """The test files a test patch adds or changes (``.py``, named as tests; deleted ones left out)."""
    deleted = set()
    for block in test_patch.split("diff --git ")[1:]:
        if "\n+++ /dev/null" in block:
            deleted.update(patch_paths("diff --git " + block.split("\n", 1)[0]))
    return sorted(p for p in patch_paths(test_patch) if p not in deleted and p.endswith(".py") and is_test_path(p)
                  and p.rsplit("/", 1)[-1] != "conftest.py")


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


async def label_one(inst: Instance, image: str, *, runs: int, semaphore: asyncio.Semaphore,
                    test_timeout_s: float) -> LabelResult:
    started = time.monotonic()
    result = LabelResult(inst.instance_id)
    files = runnable_test_files(inst.test_patch)
    if not files:
        result.reason = "the test patch adds or changes no test file to run"
        return result

    async def once(patch: str | None) -> TestRun:
        async with semaphore, containers.leased(image) as sandbox:
            return await run_tests(sandbox, base_commit=inst.base_commit, test_patch=inst.test_patch, files=files,
                                   patch=patch, test_cmd=inst.test_cmd, timeout_s=test_timeout_s)

    before = await asyncio.gather(*(once(None) for _ in range(runs)))
    after = await asyncio.gather(*(once(inst.patch) for _ in range(runs)))
    result.seconds = time.monotonic() - started
    bad = next((r for r in after if r.reason is not None), None)
    if bad is not None:
        result.reason = f"with the gold patch: {bad.reason}"
        return result
    result.fail_to_pass, result.pass_to_pass, result.flaky = classify([r.statuses for r in before],
                                                                     [r.statuses for r in after])
    if not result.fail_to_pass:
        result.reason = (f"no test fails before the gold patch and passes after it in all {runs} runs"
                         + (f" ({len(result.flaky)} flaky left out)" if result.flaky else ""))
    return result


async def label_instances(instances: Iterable[Instance | dict[str, Any]], repos: Mapping[str, str | Path], *,
                          runs: int = 2, concurrency: int = 2, build: bool = True, test_timeout_s: float = 300.0,
                          images: Mapping[str, ImageSpec] | None = None,
                          log: Callable[[str], None] = lambda _: None) -> LabelReport:
    """Label every instance (see the module docstring); the rows keep every field they came with. ``images``:
    instance_id -> the image spec to run it in (e.g. a bundled task's), as ``import_instances`` takes it."""
    if runs < 1:
        raise EnvgymError("runs must be at least 1")
    rows = list(instances)
    originals = {str(r.get("instance_id")): dict(r) for r in rows if isinstance(r, dict)}

    def prepare() -> tuple[dict[str, Path], list[Instance], list[tuple[str, str]], list[Any]]:
        parsed, skipped = sort_instances(rows)
        paths = {name: Path(p).expanduser().resolve() for name, p in repos.items()}
        accepted, problems = check_instances(parsed, paths, need_labels=False)
        return paths, accepted, skipped + problems, image_groups(accepted, paths, given=images)

    paths, accepted, unusable, groups = await asyncio.to_thread(prepare)  # git on the host: off the loop
    report = LabelReport(results=[LabelResult(i, reason=why) for i, why in unusable])
    jobs: list[tuple[Instance, str]] = []
    for spec, members in groups:
        if build:
            try:
                built = await asyncio.to_thread(ensure_image, spec, paths[spec.repo], log=log)
            except EnvgymError as exc:
                report.results += [LabelResult(i.instance_id, reason=f"image build failed: {exc}") for i in members]
                continue
            report.images.append(built)
        tag = image_tag(spec)
        jobs += [(inst, tag) for inst in members]
        report.specs.update((inst.instance_id, spec) for inst in members)
    semaphore = asyncio.Semaphore(max(1, concurrency))

    async def one(inst: Instance, image: str) -> LabelResult:
        res = await label_one(inst, image, runs=runs, semaphore=semaphore, test_timeout_s=test_timeout_s)
        log(f"{inst.instance_id}: " + (f"skipped: {res.reason}" if res.reason else
            f"{len(res.fail_to_pass)} FAIL_TO_PASS, {len(res.pass_to_pass)} PASS_TO_PASS, "
            f"{len(res.flaky)} flaky") + f" ({res.seconds:.0f}s)")
        return res

    done: list[LabelResult] = []
    for image in dict.fromkeys(tag for _, tag in jobs):  # one image's pool warm at a time: no idle spares
        await containers.hold(image)
        try:
            done += await asyncio.gather(*(one(inst, tag) for inst, tag in jobs if tag == image))
        finally:
            await containers.unhold(image)
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
        gold, empty = await asyncio.gather(grade(task, gold_patch(task)), grade(task, ""))
        detail = "; ".join([f"gold: {c.name} {c.detail}" for c in gold.criteria if not c.passed]
                           + (["the empty patch resolves it"] if empty.passed else []))
        return TaskValidation(str(task.metadata.get("instance_id", task.id)), gold.passed, empty.passed, detail)

    done: dict[str, TaskValidation] = {}
    for image in dict.fromkeys(task_image(t) for t in tasks):  # one image's pool warm at a time
        await containers.hold(image)
        try:
            mine = [t for t in tasks if task_image(t) == image]
            done.update((t.id, v) for t, v in zip(mine, await asyncio.gather(*map(one, mine)), strict=True))
        finally:
            await containers.unhold(image)
    return [done[t.id] for t in tasks]
