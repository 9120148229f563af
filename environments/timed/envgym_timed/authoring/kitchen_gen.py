"""``timed-kitchen-gen``: kitchen services by the thousand, each a seeded menu, its cooking jobs and a deadline.

:func:`generate` is the generator (registered in :func:`envgym_timed.register_all`); every choice comes from
the request's seeded ``rng``. A task is built in three moves:

1. **A menu**: ``level`` dishes, each from a different template family (a cuisine) of the request's split.
   A dish needs 1-4 of its cuisine's jobs (with their prerequisites: water boils before the pasta cooks),
   each job with a seeded duration, station and keeping time (``hold_s``: how long it stays good once ready
   before it burns, a *delayed effect*). Levels 2-3 may add a decoy job no dish needs, which must not be
   started; level 3 shares two burners between more burner jobs.
2. **The reference solution**: a greedy plan (start every startable job the menu needs, longest critical
   path first; wait for the job due first; collect; serve a dish as soon as it can be), *played on the
   generated world itself*: a :class:`~envgym_timed.world.World` of the task, its scheduler run by hand with
   the default thinking charge (2 s a step), the scenario's own tools called. A refused call or a burnt job
   there is a bug here (:class:`RuntimeError`).
3. **Grading**: one ``timed_write`` verifier: every dish served by the deadline (the plan's last serve plus
   60-180 s, on the minute), the decoy never started, the dishes' final state ``served``.

Template families and their splits (:data:`envgym_timed.KITCHEN_TEMPLATES`; train and test share none)::

    train: pasta, roast, breakfast, stir-fry, bakery
    test:  curry, soup, grill, dessert

Every task is the ``async`` variant (jobs take their time).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from envgym.plugin import Action, Limits, TaskSpec, ToolCall
from envgym.plugin.timed import TimedWriteSpec
from envgym_timed.scenarios.kitchen import SCENARIO
from envgym_timed.toolkit import ToolFailure
from envgym_timed.world import World

NAME = "timed-kitchen-gen"
THINK_S = 2.0
"""The default thinking charge per step (``fixed:2``), which the plan is played with."""


@dataclass(frozen=True)
class Job:
    station: str
    seconds: tuple[int, int]
    hold: tuple[int, int] | None
    needs: tuple[str, ...] = ()


CUISINES: dict[str, tuple[tuple[str, ...], dict[str, Job]]] = {
    # cuisine: (dish names, jobs); seconds and hold are seeded ranges (30 s steps)
    "pasta": (("spaghetti", "penne", "linguine", "rigatoni", "lasagne"), {
        "boil_water": Job("burner", (300, 600), (600, 900)),
        "cook_pasta": Job("burner", (420, 720), (120, 300), ("boil_water",)),
        "tomato_sauce": Job("burner", (600, 1200), (180, 420)),
        "grate_cheese": Job("board", (60, 240), None),
        "garlic_bread": Job("oven", (420, 720), (150, 300)),
        "pesto": Job("board", (180, 360), None)}),
    "roast": (("sunday_roast", "roast_chicken", "pot_roast", "roast_pork"), {
        "roast_meat": Job("oven", (1800, 3000), (300, 900)),
        "gravy": Job("burner", (300, 600), (120, 300), ("roast_meat",)),
        "carve": Job("board", (120, 300), None, ("roast_meat",)),
        "boil_potatoes": Job("burner", (900, 1320), (300, 600)),
        "mash": Job("board", (180, 300), None, ("boil_potatoes",)),
        "greens": Job("burner", (240, 420), (120, 240))}),
    "breakfast": (("full_breakfast", "brunch_plate", "egg_muffin", "pancake_stack"), {
        "fry_eggs": Job("burner", (180, 360), (90, 180)),
        "bacon": Job("burner", (300, 600), (120, 240)),
        "toast": Job("oven", (120, 300), (120, 300)),
        "pancakes": Job("burner", (360, 600), (120, 240)),
        "brew_coffee": Job("burner", (240, 420), (600, 1200)),
        "slice_fruit": Job("board", (120, 300), None)}),
    "stir-fry": (("chow_mein", "fried_rice", "kung_pao", "veg_stir_fry"), {
        "jasmine_rice": Job("burner", (900, 1200), (300, 600)),
        "chop_veg": Job("board", (240, 480), None),
        "wok_veg": Job("burner", (300, 480), (90, 180), ("chop_veg",)),
        "marinate_tofu": Job("board", (300, 600), None),
        "fry_tofu": Job("burner", (300, 540), (120, 240), ("marinate_tofu",)),
        "noodles": Job("burner", (240, 420), (120, 240))}),
    "bakery": (("bread_basket", "fruit_tart", "scone_plate", "cream_bun"), {
        "proof_dough": Job("board", (600, 1200), None),
        "bake_bread": Job("oven", (1200, 1800), (300, 600), ("proof_dough",)),
        "tart_case": Job("oven", (900, 1500), (300, 600)),
        "whip_cream": Job("board", (180, 300), None),
        "scones": Job("oven", (720, 1080), (240, 480)),
        "jam": Job("burner", (600, 900), (300, 600))}),
    "curry": (("dal", "korma", "vindaloo", "thali"), {
        "toast_spices": Job("burner", (120, 240), (90, 150)),
        "simmer_curry": Job("burner", (1200, 1800), (300, 600), ("toast_spices",)),
        "basmati": Job("burner", (900, 1200), (300, 600)),
        "naan": Job("oven", (300, 600), (180, 300)),
        "raita": Job("board", (180, 300), None),
        "chop_coriander": Job("board", (60, 180), None)}),
    "soup": (("onion_soup", "minestrone", "leek_soup", "chowder"), {
        "chop_onions": Job("board", (180, 360), None),
        "sweat_onions": Job("burner", (300, 600), (120, 240), ("chop_onions",)),
        "simmer_soup": Job("burner", (1200, 2100), (600, 900), ("sweat_onions",)),
        "croutons": Job("oven", (420, 720), (180, 300)),
        "stock": Job("burner", (900, 1500), (600, 1200)),
        "herb_oil": Job("board", (120, 240), None)}),
    "grill": (("surf_and_turf", "mixed_grill", "fish_supper", "steak_frites"), {
        "grill_fish": Job("burner", (360, 600), (90, 180)),
        "grill_steak": Job("burner", (420, 720), (120, 240)),
        "salsa": Job("board", (240, 480), None),
        "bake_potato": Job("oven", (1800, 2700), (600, 900)),
        "corn": Job("burner", (480, 720), (180, 300)),
        "slaw": Job("board", (180, 360), None)}),
    "dessert": (("chocolate_cake", "trifle", "creme_brulee", "sundae"), {
        "melt_chocolate": Job("burner", (180, 300), (120, 240)),
        "bake_sponge": Job("oven", (1500, 2400), (300, 600)),
        "chantilly": Job("board", (180, 300), None),
        "custard": Job("burner", (600, 900), (180, 300)),
        "caramel": Job("burner", (300, 480), (90, 180), ("melt_chocolate",)),
        "berries": Job("board", (120, 240), None)}),
}
DISH_JOBS = {1: (2, 3), 2: (2, 3), 3: (2, 4)}
"""Per level: the least and most jobs a dish asks for (before prerequisites)."""
MARGIN = {1: (120, 180), 2: (90, 150), 3: (60, 120)}
"""Per level: the deadline's margin over the plan's last serve, seconds."""


def _closure(jobs: dict[str, Job], names: list[str] | tuple[str, ...]) -> list[str]:
    """``names`` with their prerequisites (transitively), each prerequisite before the job needing it."""
    out: list[str] = []
    for name in names:
        for need in (*_closure(jobs, jobs[name].needs), name):
            if need not in out:
                out.append(need)
    return out


def _draw(rng: Any, low_high: tuple[int, int]) -> int:
    low, high = low_high
    return rng.randrange(low, high + 1, 30) if high > low else low


def _menu(rng: Any, level: int, cuisines: list[str], spare: list[str]) -> dict[str, Any]:
    world: dict[str, dict[str, dict[str, Any]]] = {"stations": {}, "jobs": {}, "dishes": {}}
    burners = 2 if level < 3 else rng.choice((2, 2, 3))
    for station, capacity in (("burner", burners), ("oven", 1), ("board", 1)):
        world["stations"][station] = {"id": station, "capacity": capacity}
    for cuisine in cuisines:
        dishes, jobs = CUISINES[cuisine]
        low, high = DISH_JOBS[level]
        picked = rng.sample(sorted(jobs), rng.randint(low, high))
        for name in _closure(jobs, picked):
            _add_job(world, rng, name, jobs[name])
        dish = rng.choice(dishes)
        world["dishes"][dish] = {"id": dish, "needs": _closure(jobs, picked), "status": "pending"}
    decoys: list[str] = []
    if level >= 2 and (level == 3 or rng.random() < 0.5):
        _, jobs = CUISINES[rng.choice(spare)]
        name = rng.choice([n for n in sorted(jobs) if not jobs[n].needs])
        _add_job(world, rng, name, jobs[name])
        decoys.append(name)
    return {"world": world, "decoys": decoys}


def _add_job(world: dict[str, Any], rng: Any, name: str, job: Job) -> None:
    world["jobs"][name] = {"id": name, "station": job.station, "seconds": _draw(rng, job.seconds),
                           "needs": list(job.needs), "hold_s": None if job.hold is None else _draw(rng, job.hold),
                           "status": "idle"}


# --- the plan, played on the world -----------------------------------------------------------------------

class _Kitchen:
    """The task's world, played step by step as the env plays it: thinking first, then the step's calls."""

    def __init__(self, state: dict[str, Any]) -> None:
        self.world = World(state, seed=0, variant="async")
        self.steps: list[list[tuple[str, dict[str, Any]]]] = []

    def step(self, *calls: tuple[str, dict[str, Any]]) -> None:
        self.world.scheduler.run_until(self.world.now + THINK_S)
        for name, args in calls:
            if name == "wait_for_notification":
                while args["source"] not in self.world.finished_sources:
                    if self.world.scheduler.step() is None and self.world.scheduler.next_time() is None:
                        raise RuntimeError(f"{NAME}: nothing will come from {args['source']}")
                continue
            tool = SCENARIO.by_name[name]
            try:
                tool.fn(self.world, tool.args_model.model_validate(args))
            except ToolFailure as exc:
                raise RuntimeError(f"{NAME}: the reference call {name}({args}) was refused: {exc}") from None
        self.steps.append(list(calls))

    def jobs(self) -> dict[str, dict[str, Any]]:
        return self.world.table("jobs")


def _plan(state: dict[str, Any], decoys: list[str]) -> tuple[list[list[tuple[str, dict[str, Any]]]], float]:
    """The reference steps and when the last dish was served (virtual seconds)."""
    k = _Kitchen(state)
    jobs, dishes = k.jobs(), k.world.table("dishes")
    needed = [n for n in jobs if n not in decoys]
    ready_at: dict[str, float] = {}
    last = 0.0

    def tail(name: str) -> float:  # the job's own time plus the longest chain of jobs waiting on it
        after = [tail(n) for n in needed if name in jobs[n]["needs"]]
        return jobs[name]["seconds"] + max(after, default=0.0)

    while any(d["status"] != "served" for d in dishes.values()):
        on = {s: sum(1 for j in jobs.values() if j["station"] == s and j["status"] in ("running", "ready"))
              for s in k.world.table("stations")}
        start = []
        for name in sorted(needed, key=lambda n: (-tail(n), n)):
            job = jobs[name]
            if job["status"] == "idle" and all(jobs[m]["status"] == "collected" for m in job["needs"]) \
                    and on[job["station"]] < k.world.table("stations")[job["station"]]["capacity"]:
                on[job["station"]] += 1
                start.append(name)
        if start:
            now = k.world.now + THINK_S
            for name in start:
                ready_at[name] = now + jobs[name]["seconds"]
            k.step(*(("start_job", {"job": n}) for n in start))
            continue
        servable = sorted(d for d, row in dishes.items() if row["status"] != "served"
                          and all(jobs[n]["status"] == "collected" for n in row["needs"]))
        if servable:
            k.step(("serve", {"dish": servable[0]}))
            last = k.world.now
            continue
        cooking = sorted((ready_at[n], n) for n in needed if jobs[n]["status"] in ("running", "ready"))
        if not cooking:
            raise RuntimeError(f"{NAME}: the plan is stuck (no job to start, wait for or serve)")
        name = cooking[0][1]
        k.step(("wait_for_notification", {"source": name, "timeout": 3600}))
        k.step(("collect", {"job": name}))
    burnt = [n for n, j in jobs.items() if j["status"] == "burnt"]
    if burnt:
        raise RuntimeError(f"{NAME}: the plan burnt {', '.join(burnt)}")
    return k.steps, last


def _actions(steps: list[list[tuple[str, dict[str, Any]]]], summary: str) -> tuple[Action, ...]:
    out = [Action(tool_calls=tuple(ToolCall(id=f"call_{i}_{j}", name=n, arguments=json.dumps(a, sort_keys=True))
                                   for j, (n, a) in enumerate(step))) for i, step in enumerate(steps)]
    return (*out, Action(text=summary))


def generate(request: Any) -> TaskSpec:
    """The task of ``request`` (a :class:`~envgym.plugin.GenerationRequest`)."""
    rng, level = request.rng(), request.level
    cuisines = rng.sample(list(request.templates), level)
    spare = [c for c in request.templates if c not in cuisines] or list(request.templates)
    menu = _menu(rng, level, cuisines, spare)
    state = {"variant": "async", "start": "09:00", "horizon_s": 6 * 3600.0, "seed": 0, "world": menu["world"],
             "events": [], "latency": {}}
    steps, last = _plan(state, menu["decoys"])
    minutes = int((last + rng.randint(*MARGIN[level]) + 59) // 60)
    deadline = f"{9 + minutes // 60:02d}:{minutes % 60:02d}"
    dishes = list(menu["world"]["dishes"])
    verifier = TimedWriteSpec.model_validate({
        "type": "timed_write", "allow_collateral": True,
        "expected": [{"tool": "serve", "args": {"dish": d}, "not_after": deadline} for d in dishes],
        "forbidden": [{"tool": "start_job", "args": {"job": j}} for j in menu["decoys"]],
        "final_state": [{"path": f"dishes.{d}.status", "equals": "served"} for d in dishes]})
    listed = dishes[0] if len(dishes) == 1 else ", ".join(dishes[:-1]) + f" and {dishes[-1]}"
    decoy = f" ({', '.join(menu['decoys'])} is not on today's menu: do not start it.)" if menu["decoys"] else ""
    instruction = (f"Serve {listed} by {deadline}. Start the jobs they need, collect each job when it is ready "
                   f"(before it burns), then serve.{decoy}")
    return TaskSpec(id=request.task_id, env_id=request.env_id, split=request.split, instruction=instruction,
                    initial_state=state, limits=Limits(max_steps=len(steps) + 20),
                    verifiers=(verifier,), solution=_actions(steps, f"Served {listed}."),
                    tags=("kitchen", "generated", "async", f"level-{level}", *cuisines),
                    metadata={"templates": cuisines, "level": level, "seed": request.seed, "generator": NAME,
                              "deadline": deadline, "plan_s": round(last, 3)})
