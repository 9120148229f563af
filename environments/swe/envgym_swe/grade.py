"""``envgym swe grade``: grade SWE-bench predictions (``instance_id``, ``model_patch``) without an agent.

Each prediction is graded exactly as an episode is: by the kernel's :func:`envgym.verify.grade`, every verifier
of its task, with a :class:`~envgym.plugin.tests.TestsTarget` whose ``patch`` is the prediction's (no episode,
no final answer, no calls). The tests verifier grades it in a fresh container of its task's image (from the
shared pool, stopped afterwards): the model patch applied
(``git apply``, then ``patch --forward --fuzz=5``: SWE-bench's fallback, except that a patch that looks
reversed or already applied is refused rather than reversed), the paths of it that could hijack the runner
undone (``dropped_paths``), the hidden tests run by the grader's own runner. A patch that does not apply is a
failed result with the reason, never a crash; an empty patch is ``empty_patch``; a container that dies is
``error``. The report
follows SWE-bench's: counts, ``resolved_ids`` / ``unresolved_ids`` / ``empty_patch_ids`` / ``error_ids``,
and per instance ``patch_successfully_applied``, ``resolved`` and ``tests_status`` (success / failure
lists per FAIL_TO_PASS and PASS_TO_PASS) plus each test's status.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

from envgym.plugin import AllOfSpec, AnyOfSpec, EnvgymError, TaskSpec, VerifyContext, grade
from envgym.plugin.tests import PASSING, TestsSpec, TestsTarget
from envgym_swe import containers
from envgym_swe.env import task_image
from envgym_swe.instances import check_predictions

MODEL_PATCH_PATH = "/tmp/.envgym_model.patch"
_APPLY = (f"git apply --whitespace=nowarn {MODEL_PATCH_PATH} 2>&1 || "
          f"patch --batch --forward --fuzz=5 -p1 -i {MODEL_PATCH_PATH} 2>&1")


def instance_id(task: TaskSpec) -> str:
    return str(task.metadata.get("instance_id", task.id))


def tests_spec(task: TaskSpec) -> TestsSpec:
    for spec in task.verifiers:
        if isinstance(spec, TestsSpec):
            return spec
    raise EnvgymError(f"task {task.id} has no tests verifier")


def _has_tests(specs: Iterable[Any]) -> bool:
    return any(isinstance(s, TestsSpec) or (isinstance(s, AllOfSpec | AnyOfSpec) and _has_tests(s.verifiers))
               for s in specs)


async def grade_prediction(task: TaskSpec, model_patch: str | None) -> dict[str, Any]:
    """One instance's report entry (see the module docstring)."""
    entry: dict[str, Any] = {"patch_is_None": model_patch is None, "patch_exists": bool(model_patch),
                             "patch_successfully_applied": False, "resolved": False, "status": "empty_patch",
                             "reason": None}
    if not model_patch or not model_patch.strip():
        entry["reason"] = "empty patch"
        return entry
    if not _has_tests(task.verifiers):
        raise EnvgymError(f"task {task.id} has no tests verifier")
    image = task_image(task)
    target = TestsTarget(episode=None, fresh=lambda: containers.leased(image), patch=model_patch)
    try:  # the kernel's grading, every verifier of the task, as an episode's
        verdict = await grade(task, VerifyContext(calls=[], final_answer=None, sandbox=target, task=task))
    except EnvgymError as exc:
        entry.update(status="error", reason=f"{type(exc).__name__}: {exc}")
        return entry
    entry["dropped_paths"] = verdict.evidence["dropped_paths"]
    if not verdict.evidence["patch_applied"]:
        entry.update(status="patch_failed", reason=verdict.evidence["reason"])
        return entry
    entry["patch_successfully_applied"] = True
    tests = verdict.evidence["tests"]
    entry.update(resolved=verdict.passed, status="resolved" if verdict.passed else "unresolved",
                 reason=verdict.evidence.get("reason"), tests=tests,
                 tests_status={group: {"success": [t for t, s in statuses.items() if s in PASSING],
                                       "failure": [t for t, s in statuses.items() if s not in PASSING]}
                               for group, statuses in tests.items()})
    return entry


async def grade_predictions(predictions: Iterable[Mapping[str, Any]], tasks: Iterable[TaskSpec], *,
                            concurrency: int = 2) -> dict[str, Any]:
    """Grade every prediction against the task with its ``instance_id``; the SWE-bench-style report."""
    by_id = {instance_id(t): t for t in tasks}
    preds = check_predictions(list(predictions))
    semaphore = asyncio.Semaphore(max(1, concurrency))
    instances: dict[str, dict[str, Any]] = {}

    async def one(pred: Mapping[str, Any]) -> None:
        iid = str(pred.get("instance_id", ""))
        task = by_id.get(iid)
        if task is None:
            instances[iid] = {"resolved": False, "status": "error", "reason": f"unknown instance_id {iid!r}",
                              "patch_exists": bool(pred.get("model_patch")), "patch_successfully_applied": False}
            return
        async with semaphore:
            instances[iid] = await grade_prediction(task, pred.get("model_patch"))

    # The images' pools stay open and warm from the first grade to the last (each grade takes a fresh container).
    images = sorted({task_image(by_id[str(p.get("instance_id", ""))]) for p in preds
                     if str(p.get("instance_id", "")) in by_id and p.get("model_patch")})
    held: list[str] = []
    try:
        for image in images:
            await containers.hold(image)
            held.append(image)
        await asyncio.gather(*(one(p) for p in preds))
    finally:
        for image in held:
            await containers.unhold(image)
    ids = {status: sorted(i for i, e in instances.items() if e["status"] == status)
           for status in ("resolved", "unresolved", "empty_patch", "patch_failed", "error")}
    return {
        "total_instances": len(by_id), "submitted_instances": len(preds),
        "completed_instances": len(ids["resolved"]) + len(ids["unresolved"]) + len(ids["patch_failed"]),
        "resolved_instances": len(ids["resolved"]),
        "unresolved_instances": len(ids["unresolved"]) + len(ids["patch_failed"]),
        "empty_patch_instances": len(ids["empty_patch"]), "error_instances": len(ids["error"]),
        "resolved_ids": ids["resolved"], "unresolved_ids": sorted(ids["unresolved"] + ids["patch_failed"]),
        "patch_failed_ids": ids["patch_failed"], "empty_patch_ids": ids["empty_patch"], "error_ids": ids["error"],
        "model_name_or_path": sorted({str(p.get("model_name_or_path", "")) for p in preds}),
        "instances": dict(sorted(instances.items())),
    }
