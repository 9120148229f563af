"""``text-scienceworld-gen``: ScienceWorld's task variations as a generator, on ScienceWorld's own split.

:func:`generate` is the generator (registered in :func:`envgym_textgames.register_all`). ScienceWorld has 30
task types, each with a fixed number of *variations* (objects, substances, organisms, rooms), 7,207 in all,
which ScienceWorld itself divides into train, dev and test lists: the generator serves those and nothing
more, so it is finite (a seed past the end of a list wraps round; :func:`envgym.plugin.distinct` counts
what is really there). A task is built in two moves:

1. **Which variation**: the level's task types (:data:`TASK_TYPES`), each with the variations of the
   request's split (read from the simulator), interleaved round-robin: seeds 0, 1, 2, ... of one level take
   variation 0 of every type, then variation 1, ...; seeds 0 .. N-1 of ``NAME@0:N:level=L:split=S`` are
   the N variations of that level and split, each once.
2. **The reference solution** is ScienceWorld's gold path for that variation (the simulator generates it
   on load), replayed on a freshly loaded copy to prove it scores 100; a variation whose gold path does not
   (ScienceWorld has a few) is skipped for the next one of the order.

Splits and template families: ScienceWorld's split holds out variations, not task types (a test variation
of ``boil`` boils a substance no train variation of ``boil`` does). A template family is a task type's
variations of one split, ``boil:train``, ``boil:dev``, ``boil:test``: train, dev and test share none.

Levels group the task types by the length of their gold paths (:data:`TASK_TYPES`): 1: up to ~16 commands
(find, identify, lifespan, power, conductivity, thermometer, paint mixing); 2: ~20-70 (state changes, melt,
grow a plant, chemistry, melting point of a known substance); 3: longer (boil, freeze, grow fruit, inclined
planes, unknown melting points, Mendelian genetics).

Each task needs the JVM simulator: a process keeps one for its generations (see :class:`_simulator`), so a
generation takes from a fraction of a second to a couple of minutes (Mendelian genetics) of simulator time, plus
the JVM's start once per process; the tasks a process makes are kept in memory (the last 512).
"""

from __future__ import annotations

import atexit
import functools
import threading
from typing import Any

from envgym.plugin import TaskSpec

NAME = "text-scienceworld-gen"
SPLITS = ("train", "dev", "test")
TASK_TYPES: dict[str, int] = {
    # ScienceWorld 1.2.3's task types and the level of each (gold path of the first test variation:
    # up to 16 commands -> 1, up to 70 -> 2, more -> 3)
    "boil": 3, "change-the-state-of-matter-of": 2, "chemistry-mix": 2, "chemistry-mix-paint-secondary-color": 1,
    "chemistry-mix-paint-tertiary-color": 1, "find-animal": 1, "find-living-thing": 1,
    "find-non-living-thing": 1, "find-plant": 1, "freeze": 3, "grow-fruit": 3, "grow-plant": 2,
    "identify-life-stages-1": 2, "identify-life-stages-2": 1, "inclined-plane-determine-angle": 3,
    "inclined-plane-friction-named-surfaces": 3, "inclined-plane-friction-unnamed-surfaces": 3,
    "lifespan-longest-lived": 1, "lifespan-longest-lived-then-shortest-lived": 1, "lifespan-shortest-lived": 1,
    "measure-melting-point-known-substance": 2, "measure-melting-point-unknown-substance": 3, "melt": 2,
    "mendelian-genetics-known-plant": 3, "mendelian-genetics-unknown-plant": 3, "power-component": 1,
    "power-component-renewable-vs-nonrenewable-energy": 1, "test-conductivity": 1,
    "test-conductivity-of-unknown-substances": 2, "use-thermometer": 1,
}
TEMPLATES = {f"{name}:{split}": split for split in SPLITS for name in TASK_TYPES}
TRIES = 5
"""Variations tried (the seed's, then the next ones of the order) before a generation fails."""

JVM_OPTIONS = "-Xmx1536m -XX:+UseSerialGC -XX:+UnlockExperimentalVMOptions -XX:hashCode=2"
"""The generation simulator's JVM: the env's options, and every identity hash the same, so that hash tables
of world objects keep their insertion order. Without it the gold path depends on what the JVM did before
(after other task types were loaded, lifespan-shortest-lived's gold path went through the kitchen instead of
the greenhouse): not a function of the variation."""

_lock = threading.Lock()


def play_gold(sim: Any, name: str, variation: int) -> tuple[list[str], str, int, bool]:
    """Load a variation with its gold path, then replay the path on a fresh load: (gold path, task
    description, score, completed). Blocking; ``sim`` is a simulator (:func:`~envgym_textgames.scienceworld.
    new_simulator`) used by no one else meanwhile. The result does not depend on what ``sim`` loaded before
    (:func:`forget_paths`)."""
    forget_paths(sim)
    sim.load(name, variation, "", generateGoldPath=True)
    gold = list(sim.get_gold_action_sequence())
    # a plain load, not server.reset(): once a gold path was made, reset() makes it again (seconds), and both
    # end in the same load of the world (object ids and random numbers restarted)
    sim.load(name, variation, "")
    description = sim.server.freeActionTaskDesc()
    sim.server.step("look around")
    for command in gold:
        sim.server.step(command)
    return gold, description, round(100 * sim.server.getScore()), bool(sim.server.getCompleted())


def forget_paths(sim: Any) -> None:
    """Empty ScienceWorld's one cache that outlives a ``load``: ``PathFinder.precomputedExhaustivePaths``, the
    search route through every room from a start room, made with the random numbers of the first gold path that
    asked for it in that JVM and reused by every later one (test-conductivity's route to the workshop, a paint
    task's). ``load`` restarts the rest (random numbers, object ids, the task maker); the other state the JVM
    keeps is constant (word lists) or only grows with object types the shipped table lacks (none in 1.2.3).
    Emptied before each gold path, a reused JVM makes the gold path a fresh one makes."""
    sim._gateway.jvm.scienceworld.goldagent.PathFinder.precomputedExhaustivePaths().clear()


@functools.lru_cache(maxsize=4)
def _order(split: str, level: int) -> tuple[tuple[str, int], ...]:
    """(task type, variation) of ``split`` at ``level``, interleaved round-robin over the task types."""
    lists = [[(name, v) for v in variations] for name, variations in _variations(split) if TASK_TYPES[name] == level]
    return tuple(pair for k in range(max(map(len, lists))) for pairs in lists if k < len(pairs)
                 for pair in [pairs[k]])


@functools.lru_cache(maxsize=3)
def _variations(split: str) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Each task type's variations of ``split``, as the simulator lists them (kept on disk per scienceworld
    version: listing them loads all 30 task types, a minute of simulator time)."""
    import json
    import os
    from importlib.metadata import version

    from envgym_textgames.textworld import cache_root

    path = cache_root().parent / "scienceworld" / f"variations-{version('scienceworld')}.json"
    try:
        lists = json.loads(path.read_text())
    except (OSError, ValueError):
        lists = _list_variations()
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f".{path.name}.{os.getpid()}")
        part.write_text(json.dumps(lists, sort_keys=True))
        os.replace(part, path)
    return tuple((name, tuple(lists[split][name])) for name in sorted(lists[split]))


def _list_variations() -> dict[str, dict[str, list[int]]]:
    with _simulator() as sim:
        names = list(sim.get_task_names())
        if sorted(names) != sorted(TASK_TYPES):
            raise RuntimeError(f"{NAME}: ScienceWorld's task types differ from the generator's ({len(names)} "
                               f"vs {len(TASK_TYPES)}): the scienceworld package is not the version it knows")
        lists: dict[str, dict[str, list[int]]] = {split: {} for split in SPLITS}
        for name in names:
            sim.load(name, 0, "")
            for split in SPLITS:
                lists[split][name] = list(getattr(sim, f"get_variations_{split}")())
        return lists


class _simulator:
    """The process's generation simulator, one generation at a time: a JVM started with :data:`JVM_OPTIONS` for
    the first generation and kept for the next ones (stopped at exit, or after a generation that raised).
    Reusing it is safe because :func:`play_gold` empties the cache that carried one gold path's route into the
    next (:func:`forget_paths`; without that, tasks made in reverse order in another process had other gold
    paths); ``envgym check``'s determinism check and tests/textgames/test_scienceworld_gen_jvm.py make tasks in
    both orders to catch another such leak. A JVM per generation paid its start and a cold simulator each time."""

    sim: Any = None

    def __enter__(self) -> Any:
        _lock.acquire()
        try:
            if _simulator.sim is None:
                from envgym_textgames.scienceworld import new_simulator

                _simulator.sim = new_simulator(JVM_OPTIONS)
        except BaseException:
            _lock.release()
            raise
        return _simulator.sim

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        try:
            if kind is not None:  # its state is unknown: the next generation starts another
                sim, _simulator.sim = _simulator.sim, None
                _stop(sim)
        finally:
            _lock.release()


@atexit.register
def _stop_kept() -> None:
    with _lock:
        sim, _simulator.sim = _simulator.sim, None
    if sim is not None:
        _stop(sim)


def _stop(sim: Any) -> None:
    """Stop a simulator and wait for its JVM: the package's ``close`` asks the JVM to exit but leaves its pipes
    and its temporary folder (``_obj_tree_tempdir``) to the garbage collector (ResourceWarnings)."""
    import subprocess

    sim.close()
    process = sim._gateway.java_process
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    for pipe in (process.stdin, process.stdout, process.stderr):
        if pipe is not None:
            pipe.close()
    sim._obj_tree_tempdir.cleanup()


@functools.lru_cache(maxsize=512)
def _task(task_id: str, env_id: str, split: str, level: int, seed: int) -> TaskSpec:
    from envgym_textgames.scienceworld import scienceworld_task

    order = _order(split, level)
    for k in range(TRIES):
        name, variation = order[(seed + k) % len(order)]
        with _simulator() as sim:
            gold, description, score, completed = play_gold(sim, name, variation)
        if score >= 100 and completed:
            break
    else:
        raise RuntimeError(f"{NAME}: {task_id}: no gold path of {TRIES} variations from seed {seed} scores 100")
    return scienceworld_task(name, variation, split, gold, description, task_id=task_id,
                             tags=("generated", f"level-{level}"),
                             metadata={"templates": [f"{name}:{split}"], "level": level, "seed": seed,
                                       "generator": NAME})


def generate(request: Any) -> TaskSpec:
    """The task of ``request`` (a :class:`~envgym.plugin.GenerationRequest`); see the module docstring."""
    return _task(request.task_id, request.env_id, request.split, request.level, request.seed)
