"""text-scienceworld-gen keeps one JVM for a process's generations, and a kept JVM makes the gold path a fresh one
makes: ScienceWorld caches a gold path's search route through the rooms across loads (PathFinder), which
play_gold empties; left in place, test-conductivity variation 0 took another route after paint mixing's."""

from __future__ import annotations

import pytest

pytest.importorskip("scienceworld", reason="the scienceworld extra is not installed")
import envgym_textgames.scienceworld as scienceworld
from envgym.generate import generate
from envgym_textgames import scienceworld_gen

pytestmark = pytest.mark.slow
LEAKY = ("test-conductivity", 0)
BEFORE = ("chemistry-mix-paint-secondary-color", 0)  # its route, cached, changed LEAKY's


def test_a_kept_jvm_makes_the_gold_path_a_fresh_jvm_makes() -> None:
    fresh = scienceworld.new_simulator(scienceworld_gen.JVM_OPTIONS)
    try:
        expected = scienceworld_gen.play_gold(fresh, *LEAKY)
    finally:
        scienceworld_gen._stop(fresh)
    with scienceworld_gen._simulator() as kept:
        scienceworld_gen.play_gold(kept, *BEFORE)
        assert scienceworld_gen.play_gold(kept, *LEAKY) == expected
    assert expected[2] == 100 and expected[3]


def test_one_jvm_serves_the_process_generations(monkeypatch) -> None:
    started = []
    real = scienceworld.new_simulator

    def recording(*args, **kwargs):
        sim = real(*args, **kwargs)
        started.append(sim)
        return sim

    monkeypatch.setattr(scienceworld, "new_simulator", recording)
    scienceworld_gen._task.cache_clear()  # made anew, not read from this process's cache
    tasks = [generate(scienceworld_gen.NAME, seed, level=1, split="train") for seed in (3, 4)]
    assert all(t.solution for t in tasks)
    assert len(started) <= 1  # none if an earlier test of this process started it
    kept = scienceworld_gen._simulator.sim
    assert kept is not None and kept._gateway.java_process.poll() is None
    assert not started or started[0] is kept
