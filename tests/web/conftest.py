"""Helpers for the web tests: a task of each app and a scripted agent."""

from __future__ import annotations

import pytest

from envgym.task import TaskSpec, load_suite


def task_by_id(suite: str, task_id: str) -> TaskSpec:
    return next(t for t in load_suite(suite) if t.id == task_id)


@pytest.fixture
def shop_task() -> TaskSpec:
    return task_by_id("web-shop", "shop-buy-00")


@pytest.fixture
def forum_tasks() -> tuple[TaskSpec, TaskSpec]:
    return task_by_id("web-forum", "forum-reply-00"), task_by_id("web-forum", "forum-pin-00")
