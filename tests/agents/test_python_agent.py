"""How ``--agent`` names a user's own agent (envgym.agents.python), beside the built-in kinds."""

from __future__ import annotations

import pytest

from envgym.agents import HFConfig, PythonConfig, RandomConfig, agent_id, parse_agent
from envgym.errors import SpecError


@pytest.mark.parametrize(("spec", "config", "name"), [
    ("pkg.agents:make", PythonConfig(ref="pkg.agents:make"), "py:pkg.agents:make"),
    ("./agents/../mine.py:Agent", PythonConfig(ref="mine.py:Agent"), "py:mine.py:Agent"),
    ("py:hf:make", PythonConfig(ref="hf:make"), "py:hf:make"),  # a module named like a kind
    ("hf:model.gguf", HFConfig(model_path="model.gguf"), "hf:model.gguf"),
    ("random:3", RandomConfig(seed=3), "random:3"),
])
def test_agent_names(spec, config, name):
    assert parse_agent(spec) == config and agent_id(config) == name


def test_a_python_agent_ignores_the_endpoint_options():
    assert parse_agent("pkg:make", base_url="http://127.0.0.1:1/v1", api_key_env=None) == PythonConfig(ref="pkg:make")


@pytest.mark.parametrize("spec", ["pkg:", ":make", "py:pkg"])
def test_incomplete_references_are_refused(spec):
    with pytest.raises(SpecError, match="MODULE:CALLABLE"):
        parse_agent(spec)
