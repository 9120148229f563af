"""``gui-desktop-gen`` (envgym_gui.authoring.desktop_gen): deterministic across processes, its levels lengthen the
reference solution and grow the world, its splits share no template family, its tasks are distinct, the
admission gates hold offline for every family and level (the untouched desktop and a bare ``done`` score 0,
the files a correct episode leaves score 1, ending with ``fail`` scores 0), and on real desktops the oracle
passes and the null agent fails (the editor and terminal families here; Calc and Writer by ``envgym check``)."""

from __future__ import annotations

import os
import subprocess
import sys
from statistics import mean
from typing import Any

import pytest

import envgym
from envgym.agents.baseline import NullAgent, OracleAgent
from envgym.generate import GenerationRequest, distinct, generate
from envgym.registry import generator_spec
from envgym.rollout import run_episode
from envgym.task import load_suite
from envgym.types import Outcome
from envgym.verify import VerifyContext
from envgym_gui import GENERATOR_TEMPLATES
from envgym_gui.actions import TOOL_NAMES
from envgym_gui.authoring.desktop_gen import FAMILIES, NAME, draft
from envgym_gui.files import materialize
from envgym_gui.state import DesktopState
from envgym_gui.verify import check_desktop


def request(family: str, level: int, seed: int = 0) -> GenerationRequest:
    """A request whose split offers only ``family`` (the generator draws the family from the split's list)."""
    return GenerationRequest(generator=NAME, seed=seed, level=level, split=GENERATOR_TEMPLATES[family],
                             env_id="gui/desktop-v1", templates=(family,))


def test_same_hashes_in_processes_with_other_hash_seeds() -> None:
    tasks = load_suite(f"{NAME}@0:12")
    ids, here = [t.id for t in tasks], [t.hash for t in tasks]
    code = ("import sys; from envgym.generate import generate, parse_task_id\n"
            "for i in sys.argv[1:]:\n    n, s, lv, seed = parse_task_id(i)\n"
            "    print(generate(n, seed, level=lv, split=s).hash)")
    for hash_seed in ("1", "987654"):
        out = subprocess.run([sys.executable, "-c", code, *ids], capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": hash_seed}).stdout.split()
        assert out == here


def test_registration_matches_the_families() -> None:
    spec = generator_spec(NAME)
    assert spec is not None and spec.env_id == "gui/desktop-v1" and spec.levels == (1, 2, 3)
    assert spec.templates == GENERATOR_TEMPLATES and set(FAMILIES) == set(GENERATOR_TEMPLATES)
    assert set(spec.templates_of("train")).isdisjoint(spec.templates_of("test"))


def test_levels_lengthen_the_reference_and_grow_the_world() -> None:
    for family in FAMILIES:
        steps = [mean(len(draft(request(family, level, seed))[0].solution) for seed in range(6)) for level in (1, 2, 3)]
        assert steps[0] < steps[1] < steps[2], (family, steps)
        size = [mean(len(str(draft(request(family, level, seed))[1].files)) for seed in range(6))
                for level in (1, 2, 3)]
        assert size[0] < size[2], (family, size)


def test_train_and_test_share_no_template_family_and_use_every_one() -> None:
    for split in ("train", "test"):
        tasks = load_suite(f"{NAME}@0:80", split=split)
        used = {f for t in tasks for f in t.metadata["templates"]}
        assert used == {f for f, s in GENERATOR_TEMPLATES.items() if s == split}
        assert {t.split for t in tasks} == {split}


def test_tasks_are_distinct() -> None:
    counted = distinct(load_suite(f"{NAME}@0:300"))
    assert counted.by_content == counted.total == 600
    assert counted.distinct >= 0.8 * counted.total, counted  # keys-only edits (alignment) repeat their solution


def _state(files: dict[str, bytes], dirs: set[str], initial: dict[str, bytes], final: str | None) -> DesktopState:
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

    return DesktopState(final=final, answer=None, initial_files=initial, _read_file=read_file, _list_dir=list_dir,
                        _windows=nothing, _clipboard=clipboard)


async def _grade(task: Any, files: dict[str, bytes], dirs: set[str], final: str | None) -> Any:
    initial = materialize(task.initial_state["files"])
    return await check_desktop(task.verifiers[0], VerifyContext(calls=[], final_answer=None,
                                                                state=_state(files, dirs, initial, final)))


@pytest.mark.parametrize("level", (1, 2, 3))
@pytest.mark.parametrize("family", sorted(FAMILIES))
async def test_offline_gates(family: str, level: int) -> None:
    for seed in range(2):
        task, made = draft(request(family, level, seed))
        names = [call.name for action in task.solution for call in action.tool_calls]
        assert set(names) <= TOOL_NAMES and names[-1] == "done" and "left_click" not in names
        assert len(task.solution) < task.limits.max_steps and task.verifiers[0].unchanged
        initial = materialize(task.initial_state["files"])
        for final in (None, "done"):  # the null agent, and one that claims success doing nothing
            assert not (await _grade(task, dict(initial), set(), final)).passed, (task.id, final)
        after = {**initial, **materialize(made.after)}
        for path in made.remove:
            after.pop(path)
        verdict = await _grade(task, after, set(made.dirs), "done")
        assert verdict.passed, (task.id, verdict.evidence)
        assert not (await _grade(task, after, set(made.dirs), "fail")).passed


@pytest.mark.parametrize("level", (1, 2, 3))
def test_list_rename_replaces_every_named_line_by_a_new_name(level: int) -> None:
    # a level-3 task once asked to "replace Ines Silva with Ines Silva": one spare name for ``level`` lines
    for seed in range(20):
        task, made = draft(request("list-rename", level, seed))
        path = task.initial_state["open"]["path"]
        before = task.initial_state["files"][path]["text"].splitlines()
        after = made.after[path]["text"].splitlines()
        changed = [(old, new) for old, new in zip(before, after, strict=True) if old != new]
        assert len(changed) == level, (task.id, task.instruction)
        assert not {new for _, new in changed} & set(before), task.id
        for old, new in changed:
            assert f"{old} with {new}" in task.instruction, task.id


@pytest.mark.parametrize("family", ("doc-append", "doc-rewrite"))
def test_new_paragraphs_open_unlike_the_body(family: str) -> None:
    # the body's subjects were once compared by their first two words, so "The head chef" was never taken
    for level in (1, 2, 3):
        for seed in range(20):
            task, made = draft(request(family, level, seed))
            path = task.initial_state["open"]["path"]
            body = task.initial_state["files"][path]["odt"]["paragraphs"][1:]
            new = [p for p in made.after[path]["odt"]["paragraphs"][1:] if p not in body]
            assert len(new) == level, task.id
            subjects = {" ".join(p.split()[:2]) for p in body}  # the first two words tell every subject apart
            assert not {" ".join(p.split()[:2]) for p in new} & subjects, (task.id, body, new)


def test_reset_ids_name_the_task_again() -> None:
    task = generate(NAME, 41, level=2, split="test")
    assert task.id == f"{NAME}.test.l2.s41" and task.metadata["templates"][0] in GENERATOR_TEMPLATES


@pytest.mark.docker
@pytest.mark.slow
async def test_oracle_passes_and_null_fails_on_real_desktops() -> None:
    # the editor and terminal families at level 3 (seconds each); Calc and Writer cost a LibreOffice start each
    tasks = [draft(request(family, 3, seed=5))[0] for family in ("config-set", "list-rename", "tree-organise",
                                                                  "tree-extract")]
    async with envgym.make("gui/desktop-v1") as env:
        for task in tasks:
            good = await run_episode(env, OracleAgent(task), task)
            assert good.outcome is Outcome.SUCCESS, (task.id, good.error, good.verdict)
            bad = await run_episode(env, NullAgent(), task)
            assert bad.outcome is Outcome.FAILURE and bad.verdict.score == 0, (task.id, bad.error)
