"""The web suites as data: generators reproduce the committed files; counts, splits and solutions."""

from __future__ import annotations

from collections import Counter

import pytest

from envgym.task import load_suite
from envgym.verify.spec import WriteActionSpec
from envgym_web.apps import load_app
from envgym_web.apps.base import replay
from envgym_web.authoring import forum, shop


@pytest.mark.parametrize("module", [shop, forum])
def test_generator_matches_committed_suite(module) -> None:
    assert [t.model_dump(mode="json") for t in module.build()] == \
        [t.model_dump(mode="json") for t in load_suite(module.SUITE)]


def test_web_app_suites_have_sixty_tasks_in_both_splits() -> None:
    tasks = load_suite("web-shop") + load_suite("web-forum")
    assert len(tasks) >= 60
    assert all(t.solution for t in tasks)
    for suite in ("web-shop", "web-forum"):
        splits = Counter(t.split for t in load_suite(suite))
        assert splits["train"] > 0 and splits["test"] > 0


@pytest.mark.parametrize("suite,app", [("web-shop", "shop"), ("web-forum", "forum")])
def test_reference_writes_replay_and_change_the_database(suite: str, app: str) -> None:
    definition = load_app(app)
    for task in load_suite(suite):
        writes = task.metadata["reference_writes"]
        before = replay(definition, task.initial_state, [], None)
        after = replay(definition, task.initial_state, writes, None)
        assert (after != before) == bool(writes), task.id
        if writes:  # every write task grades the writes the reference makes
            assert any(isinstance(v, WriteActionSpec) and v.expected for v in task.verifiers), task.id
