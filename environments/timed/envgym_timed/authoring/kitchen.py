"""The ``timed-kitchen`` suite: eight menus to serve by a deadline, sync and async.

Jobs take minutes on a station (two burners, one oven, one board) and burn if left ready too long. Each
deadline is met only by overlapping jobs (doing them one after another is too slow), and some menus also
need an order that keeps the burners free. The reference plans were worked out by hand; the admission
gate (the oracle replays them) proves they work.
"""

from __future__ import annotations

from typing import Any

from envgym.plugin import Split, TaskSpec
from envgym_timed.authoring.common import Script, expect, pair
from envgym_timed.scenarios.kitchen import SCENARIO

FAMILY = "kitchen"
STATIONS = {"burner": 2, "oven": 1, "board": 1}
JOBS: dict[str, tuple[str, int, tuple[str, ...], int | None]] = {
    # job: (station, seconds, needs, hold_s)
    "roast": ("oven", 2400, (), 600),
    "bake_bread": ("oven", 1500, (), 600),
    "boil_water": ("burner", 480, (), 900),
    "cook_pasta": ("burner", 600, ("boil_water",), 300),
    "sauce": ("burner", 900, (), 300),
    "rice": ("burner", 1080, (), 300),
    "soup": ("burner", 1500, (), 600),
    "grill_fish": ("burner", 480, (), 180),
    "chop_salad": ("board", 300, (), None),
}
DISHES = {
    "pasta": ("cook_pasta", "sauce"),
    "roast_dinner": ("roast", "chop_salad"),
    "lunch": ("bake_bread", "soup"),
    "fish_plate": ("rice", "grill_fish", "chop_salad"),
    "rice_bowl": ("rice",),
    "starter": ("soup",),
}


def _world(jobs: tuple[str, ...], dishes: tuple[str, ...]) -> dict[str, Any]:
    return {
        "stations": {s: {"id": s, "capacity": c} for s, c in STATIONS.items()},
        "jobs": {j: {"id": j, "station": JOBS[j][0], "seconds": JOBS[j][1], "needs": list(JOBS[j][2]),
                     "hold_s": JOBS[j][3], "status": "idle"} for j in jobs},
        "dishes": {d: {"id": d, "needs": list(DISHES[d]), "status": "pending"} for d in dishes},
    }


class _Cook:
    def __init__(self) -> None:
        self.script = Script(SCENARIO)

    def start(self, *jobs: str) -> None:
        self.script.parallel(*(("start_job", {"job": j}) for j in jobs))

    def take(self, job: str) -> None:
        self.script.wait_for(job)
        self.script.call("collect", job=job)

    def serve(self, *dishes: str) -> None:
        for dish in dishes:
            self.script.call("serve", dish=dish)


def _menu(key: str, split: Split, dishes: tuple[str, ...], deadline: str, cook: _Cook, *,
          extra_jobs: tuple[str, ...] = ()) -> list[TaskSpec]:
    jobs = tuple(dict.fromkeys(job for d in dishes for needed in DISHES[d] for job in (*JOBS[needed][2], needed)))
    cook.script.say(f"Served {', '.join(dishes)}.")
    verifier = {"type": "timed_write", "allow_collateral": True,
                "expected": [expect("serve", not_after=deadline, dish=d) for d in dishes],
                "forbidden": [{"tool": "start_job", "args": {"job": j}} for j in extra_jobs],
                "final_state": [{"path": f"dishes.{d}.status", "equals": "served"} for d in dishes]}
    menu = " and ".join(dishes)
    decoy = f" ({', '.join(extra_jobs)} is not needed today.)" if extra_jobs else ""
    instruction = (f"Serve {menu} by {deadline}. Start the jobs they need, collect each job when it is ready "
                   f"(before it burns), then serve.{decoy}")
    return pair(family=FAMILY, key=key, instruction=instruction, world=_world((*jobs, *extra_jobs), dishes),
                events=[], latency={}, script=cook.script, verifiers=[verifier], split=split)


def pasta() -> list[TaskSpec]:
    c = _Cook()
    c.start("boil_water", "sauce")
    c.take("boil_water")
    c.start("cook_pasta")
    c.take("sauce")
    c.take("cook_pasta")
    c.serve("pasta")
    return _menu("pasta", "test", ("pasta",), "09:20", c)


def roast_dinner() -> list[TaskSpec]:
    c = _Cook()
    c.start("roast", "chop_salad")
    c.take("chop_salad")
    c.take("roast")
    c.serve("roast_dinner")
    return _menu("roast-dinner", "test", ("roast_dinner",), "09:42", c)


def dinner_for_two() -> list[TaskSpec]:
    c = _Cook()
    c.start("roast", "boil_water", "sauce")
    c.take("boil_water")
    c.start("cook_pasta")
    c.take("sauce")
    c.start("chop_salad")
    c.take("cook_pasta")
    c.take("chop_salad")
    c.serve("pasta")
    c.take("roast")
    c.serve("roast_dinner")
    return _menu("dinner-for-two", "test", ("pasta", "roast_dinner"), "09:42", c)


def lunch() -> list[TaskSpec]:
    c = _Cook()
    c.start("bake_bread", "soup")
    c.take("bake_bread")
    c.take("soup")
    c.serve("lunch")
    return _menu("lunch", "test", ("lunch",), "09:27", c)


def fish_plate() -> list[TaskSpec]:
    c = _Cook()
    c.start("rice", "grill_fish", "chop_salad")
    c.take("chop_salad")
    c.take("grill_fish")
    c.take("rice")
    c.serve("fish_plate")
    return _menu("fish-plate", "train", ("fish_plate",), "09:20", c)


def pasta_with_decoy() -> list[TaskSpec]:
    c = _Cook()
    c.start("sauce", "boil_water")
    c.take("boil_water")
    c.start("cook_pasta")
    c.take("sauce")
    c.take("cook_pasta")
    c.serve("pasta")
    return _menu("pasta-decoy", "test", ("pasta",), "09:20", c, extra_jobs=("rice",))


def soup_and_roast() -> list[TaskSpec]:
    c = _Cook()
    c.start("roast", "soup", "chop_salad")
    c.take("chop_salad")
    c.take("soup")
    c.serve("starter")
    c.take("roast")
    c.serve("roast_dinner")
    return _menu("soup-and-roast", "dev", ("starter", "roast_dinner"), "09:42", c)


def burner_puzzle() -> list[TaskSpec]:
    c = _Cook()
    c.start("boil_water", "sauce")
    c.take("boil_water")
    c.start("rice")
    c.take("sauce")
    c.start("cook_pasta")
    c.take("cook_pasta")
    c.serve("pasta")
    c.take("rice")
    c.serve("rice_bowl")
    return _menu("burner-puzzle", "train", ("pasta", "rice_bowl"), "09:28", c)


def tasks() -> list[TaskSpec]:
    return [t for make in (pasta, roast_dinner, dinner_for_two, lunch, fish_plate, pasta_with_decoy, soup_and_roast,
                           burner_puzzle) for t in make()]
