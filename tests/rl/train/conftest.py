"""Fixtures of the trainer tests: SmolLM2's tokenizer, built once per session (tiny policies are per test)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tokenizer():
    from envgym.rl.models import load_tokenizer

    return load_tokenizer()
