"""Fixtures of the envgym.rl tests: the tiny random policy (SmolLM2's tokenizer), built once per session."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny():
    from envgym.rl.models import tiny_policy

    return tiny_policy(seed=0)


@pytest.fixture(scope="session")
def tokenizer(tiny):
    return tiny.tokenizer
