"""The web generators as data (no browser): ``web-shop-gen`` and ``web-forum-gen`` make the same tasks in
processes with other hash seeds, their levels lengthen the reference, their splits share no template family,
their tasks are distinct, and their answers and writes come from the world replayed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from statistics import mean

import pytest

from envgym.generate import distinct, generate
from envgym.registry import generator_spec
from envgym.task import load_suite
from envgym_web.apps import load_app
from envgym_web.apps.base import replay
from envgym_web.authoring import forum_gen

GENERATORS = ("web-shop-gen", "web-forum-gen")


@pytest.mark.parametrize("name", GENERATORS)
def test_same_hashes_in_processes_with_other_hash_seeds(name: str) -> None:
    tasks = [generate(name, seed, level=level, split=split) for seed, level, split in
             ((3, 1, "train"), (8, 2, "test"), (21, 3, "train"), (34, 3, "test"))]
    code = ("import sys; from envgym.generate import generate, parse_task_id\n"
            "for i in sys.argv[1:]:\n    n, s, lv, seed = parse_task_id(i)\n"
            "    print(generate(n, seed, level=lv, split=s).hash)")
    for hash_seed in ("1", "987654"):
        out = subprocess.run([sys.executable, "-c", code, *(t.id for t in tasks)], capture_output=True, text=True,
                             check=True, env={**os.environ, "PYTHONHASHSEED": hash_seed}).stdout.split()
        assert out == [t.hash for t in tasks]


@pytest.mark.parametrize("name", GENERATORS)
def test_levels_lengthen_the_reference_and_grow_the_world(name: str) -> None:
    by_level = {level: load_suite(f"{name}@0:30:level={level}") for level in (1, 2, 3)}
    actions = {level: mean(len(t.solution) for t in tasks) for level, tasks in by_level.items()}
    rows = {level: mean(sum(len(v) for v in t.initial_state["db"].values()) for t in tasks)
            for level, tasks in by_level.items()}
    assert actions[1] < actions[2] < actions[3], actions
    assert rows[1] < rows[2] < rows[3], rows
    assert {len(t.metadata["templates"]) for t in by_level[3]} == {3}


@pytest.mark.parametrize("name", GENERATORS)
def test_train_and_test_share_no_template_family(name: str) -> None:
    spec = generator_spec(name)
    assert spec is not None and set(spec.templates_of("train")).isdisjoint(spec.templates_of("test"))
    for split in ("train", "test"):
        used = {f for t in load_suite(f"{name}@0:60", split=split) for f in t.metadata["templates"]}
        assert used == set(spec.templates_of(split))  # every family of the split shows up, and only those


@pytest.mark.parametrize("name", GENERATORS)
def test_tasks_are_distinct(name: str) -> None:
    counted = distinct(load_suite(f"{name}@0:150"))
    # by solution, a level-1 "how many orders are placed?" repeats (nav-orders, "2 orders"): that is all that may
    assert counted.total == counted.by_content == 300 and counted.distinct >= 285, counted


@pytest.mark.parametrize("name,app", [("web-shop-gen", "shop"), ("web-forum-gen", "forum")])
def test_reference_writes_replay_and_every_write_is_graded(name: str, app: str) -> None:
    definition = load_app(app)
    for task in load_suite(f"{name}@0:20"):
        writes = task.metadata["reference_writes"]
        before = replay(definition, task.initial_state, [], None)
        after = replay(definition, task.initial_state, writes, None)
        assert (after != before) == bool(writes), task.id
        graded = [e.tool for v in task.verifiers for e in getattr(v, "expected", ())]
        assert set(graded) <= {w["tool"] for w in writes}, task.id
        assert bool(graded) == bool(writes) or task.metadata["templates"][0] == "cart-fix", task.id


def test_stock_left_after_a_purchase_is_read_from_the_replay() -> None:
    tasks = load_suite("web-shop-gen@0:200:level=2", split="test")
    task = next(t for t in tasks if "left in stock now" in t.instruction)
    bought = {w["args"]["product_id"]: w["args"]["qty"] for w in task.metadata["reference_writes"]
              if w["tool"] == "add_to_cart"}
    asked = int(json.loads(task.solution[-2].tool_calls[0].arguments)["element_id"].removeprefix("product-"))
    product = next(p for p in task.initial_state["db"]["products"] if p["id"] == asked)
    for row in task.initial_state["db"].get("cart_items", ()):  # checked out from the initial cart
        bought.setdefault(row["product_id"], row["qty"])
    after = replay(load_app("shop"), task.initial_state, task.metadata["reference_writes"], None)
    left = next(p["stock"] for p in after["products"] if p["id"] == asked)
    assert asked in bought and left < product["stock"]
    assert json.loads(task.solution[-1].tool_calls[0].arguments)["text"] == f"{left} unit{'' if left == 1 else 's'}"


def test_level_three_forum_tasks_start_signed_out_with_the_credentials_given() -> None:
    task = generate("web-forum-gen", 5, level=3, split="train")
    assert "sign_in" not in task.initial_state and task.initial_state["start"] == "/login"
    user = next(u for u in task.initial_state["db"]["users"] if f"Sign in as {u['username']} " in task.instruction)
    assert f"(password: {user['password']})" in task.instruction and not user["banned"]


def test_no_name_is_part_of_another() -> None:
    # an author question rejects answers naming anyone else: one name inside another would refuse a right answer
    for names in (forum_gen.FIRST, forum_gen.LAST):
        assert not [(a, b) for a in names for b in names if a != b and a.lower() in b.lower()]
