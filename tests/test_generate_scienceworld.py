"""text-scienceworld-gen makes each task on a JVM of its own: one JVM kept for a process's generations gave gold
paths that depended on what it had loaded before (made in reverse order in another process, 5 of 20 level-1
tasks had another route or other wires), which envgym check's determinism check now catches."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("scienceworld", reason="the scienceworld extra is not installed")
import envgym_textgames.scienceworld as scienceworld
from envgym.generate import generate
from envgym_textgames import scienceworld_gen

pytestmark = pytest.mark.slow


def test_every_generation_starts_a_jvm_and_stops_it(monkeypatch) -> None:
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
    assert len({id(sim) for sim in started}) == len(started) >= 2  # one JVM a generation (more if one was skipped)
    deadline = time.monotonic() + 30
    while any(sim._gateway.java_process.poll() is None for sim in started) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert all(sim._gateway.java_process.poll() is not None for sim in started)  # each stopped after its task
