"""The first-party GUI suites: committed files equal the generators' output, the suites' shape, and the
admission gates checked offline against the verifier: the untouched desktop (what the null agent leaves)
scores 0, an infeasible task passes only on ``fail``, and the files a correct episode leaves score 1."""

from __future__ import annotations

import json
from typing import Any

import pytest

from envgym.task import load_suite, suites_root
from envgym.verify import VerifyContext
from envgym_gui.actions import TOOL_NAMES
from envgym_gui.authoring import calc, fileops, writer
from envgym_gui.files import materialize
from envgym_gui.state import DesktopState
from envgym_gui.verify import DesktopSpec, check_desktop

MODULES = (calc, writer, fileops)
BUILT = {module.SUITE: module.build() for module in MODULES}
EXPECTED = {**calc.EXPECTED, **writer.EXPECTED, **fileops.EXPECTED}
ALL = [t for tasks in BUILT.values() for t in tasks]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.SUITE)
def test_committed_suite_equals_the_generator(module: Any) -> None:
    committed = (suites_root() / module.SUITE / "tasks.jsonl").read_text(encoding="utf-8")
    generated = "\n".join(json.dumps(t.model_dump(mode="json"), ensure_ascii=False) for t in BUILT[module.SUITE])
    assert committed == generated + "\n", f"regenerate with python -m envgym_gui.authoring ({module.SUITE})"
    assert [t.id for t in load_suite(module.SUITE)] == [t.id for t in BUILT[module.SUITE]]
    assert (suites_root() / module.SUITE / "README.md").is_file()


def test_the_suites_cover_enough_apps_splits_and_kinds() -> None:
    assert len(ALL) >= 80 and len({t.id for t in ALL}) == len(ALL)
    apps = {t.initial_state["open"]["app"] for t in ALL}
    assert {"calc", "writer", "editor", "terminal", "files"} <= apps
    for tasks in BUILT.values():
        assert {t.split for t in tasks} == {"train", "test"}
    infeasible = [t for t in ALL if t.verifiers[0].expect == "fail"]
    assert len(infeasible) >= 8
    assert sum("distractor" in t.tags for t in ALL) >= 10


@pytest.mark.parametrize("task", ALL, ids=lambda t: t.id)
def test_reference_solutions_are_short_keyboard_scripts(task: Any) -> None:
    names = [call.name for action in task.solution for call in action.tool_calls]
    assert len(names) == len(task.solution) <= 15 < task.limits.max_steps
    assert set(names) <= TOOL_NAMES and not {"left_click", "double_click", "click_element"} & set(names)
    spec: DesktopSpec = task.verifiers[0]
    assert names[-1] == ("fail" if spec.expect == "fail" else "done")
    assert spec.unchanged, "every task names its collateral"
    materialize(task.initial_state["files"])  # builds


def _state(files: dict[str, bytes], dirs: set[str], initial: dict[str, bytes], final: str | None,
           answer: str | None) -> DesktopState:
    async def read_file(path: str) -> bytes | None:
        return files.get(path)

    async def list_dir(path: str) -> list[str] | None:
        prefix = path.rstrip("/") + "/"
        names = {p[len(prefix):].split("/")[0] for p in [*files, *dirs] if p.startswith(prefix)}
        return sorted(names) if names or path in dirs else None

    async def nothing() -> list[dict[str, Any]]:
        return []

    async def clipboard() -> str | None:
        return None

    return DesktopState(final=final, answer=answer, initial_files=initial, _read_file=read_file,
                        _list_dir=list_dir, _windows=nothing, _clipboard=clipboard)


async def _grade(task: Any, files: dict[str, bytes], dirs: set[str], final: str | None, answer: str | None) -> Any:
    initial = materialize(task.initial_state["files"])
    st = _state(files, dirs, initial, final, answer)
    return await check_desktop(task.verifiers[0], VerifyContext(calls=[], final_answer=answer, state=st))


@pytest.mark.parametrize("task", ALL, ids=lambda t: t.id)
async def test_offline_gates(task: Any) -> None:
    initial = materialize(task.initial_state["files"])
    expected = EXPECTED[task.id]
    for final in (None, "done"):  # the null agent, and one that claims success without doing anything
        untouched = await _grade(task, dict(initial), set(), final, None)
        assert not untouched.passed, f"{task.id}: the untouched desktop passes ({final})"
    if expected.get("fail"):
        assert (await _grade(task, dict(initial), set(), "fail", "impossible")).passed
        return
    assert not (await _grade(task, dict(initial), set(), "fail", None)).passed
    after = {**initial, **materialize(expected["files"])}
    for path in expected.get("remove", []):
        after.pop(path)
    answer = expected.get("answer")
    verdict = await _grade(task, after, set(expected.get("dirs", [])), "done", answer)
    assert verdict.passed, verdict.evidence
