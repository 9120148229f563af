"""The per-answer parity names a plug-in written before parity went through BFCL's public ``evaluate_task``
used (``bfcl_handler``, ``bfcl_valid``, ``compare(env, handler, tasks)``) still work, and warn."""

from __future__ import annotations

import pytest

pytest.importorskip("bfcl_eval", reason="needs bfcl-eval: pip install 'envgym[bfcl]' && envgym bfcl setup")

import envgym
from envgym.task import load_suite
from envgym_bfcl import parity
from envgym_bfcl.build import suite_name


def test_bfcl_handler_and_bfcl_valid_warn_and_give_bfcls_verdict() -> None:
    task = load_suite(suite_name("simple_python"))[0]
    with pytest.warns(DeprecationWarning, match=r"bfcl_handler\(\) is deprecated.*goes in 0\.3\.0"):
        handler = parity.bfcl_handler()
    gold = parity.bfcl_result(task, task.solution)
    with pytest.warns(DeprecationWarning, match=r"bfcl_valid\(handler, task, result\) is deprecated"):
        assert parity.bfcl_valid(handler, task, gold) is True
    [(_, wrong)] = parity.perturbations(task)[:1]
    with pytest.warns(DeprecationWarning):
        assert parity.bfcl_valid(handler, task, parity.bfcl_result(task, wrong)) is False


async def test_compare_in_its_old_form_warns_and_compares() -> None:
    tasks = load_suite(suite_name("simple_python"))[:2]
    async with envgym.make(tasks[0].env_id) as env:
        with pytest.warns(DeprecationWarning, match=r"compare\(env, handler, tasks\)"):
            result = await parity.compare(env, object(), tasks)
    assert result.entries == 2 and not result.disagreements and result.agree_gold == 2
