"""envgym grades BFCL answers as BFCL's own evaluation does: a sample of every included category, gold and
perturbed answers (the full run is ``benchmarks/bfcl_parity.py``), and ``envgym check`` on two BFCL ids."""

from __future__ import annotations

import pytest

pytest.importorskip("bfcl_eval", reason="needs bfcl-eval: pip install 'envgym[bfcl]' && envgym bfcl setup")

import envgym
from envgym.check import check, tamper_sample
from envgym.task import load_suite
from envgym_bfcl import data
from envgym_bfcl.build import suite_name
from envgym_bfcl.parity import compare

PER_CATEGORY = {"multi_turn_base": 3, "multi_turn_long_context": 2}
"""Entries sampled per category (spread over the suite); 10 where not named (multi-turn grading is slower)."""


async def test_envgym_and_bfcl_agree_on_a_sample_of_gold_and_perturbed_answers() -> None:
    cases, disagreements, gold_failed = 0, [], []
    for category in data.CATEGORIES:
        tasks = tamper_sample(load_suite(suite_name(category)), PER_CATEGORY.get(category, 10))
        async with envgym.make(tasks[0].env_id) as env:
            parity = await compare(env, tasks)
        cases += parity.entries + parity.perturbed
        disagreements += parity.disagreements
        gold_failed += parity.gold_failed
        assert parity.perturbed >= parity.entries or data.MULTI_TURN, category  # every entry has a wrong answer
    assert not disagreements and not gold_failed
    assert cases >= 300


@pytest.mark.parametrize(("env_id", "accepted"), [("bfcl/irrelevance-v1", 240), ("bfcl/multi-turn-base-v1", 0)])
async def test_envgym_check_passes_with_the_null_gate_inverted_only_on_irrelevance(env_id: str, accepted: int) -> None:
    report = await check(env_id, gymnasium_check=False)
    assert report.ok, (report.failed, report.gate_failures[:5], report.tamper_failures)
    assert len(report.null_accepted) == accepted and report.gated == report.tasks
    assert report.tamper_runs  # the hack probes ran (on irrelevance: their text answers are correct there)
