import pytest

import envgym
from envgym import registry
from envgym.errors import PluginError, RegistryError


def test_list_and_spec_include_plugin_envs():
    ids = envgym.list_envs()
    assert "tool/retail-v1" in ids and "tool/assistant-v1" in ids
    assert envgym.spec("tool/retail-v1").family == "tool"
    assert envgym.spec("tool/retail-v1").version == 1


@pytest.mark.parametrize("bad", ["retail", "tool/retail", "Tool/retail-v1", "tool/retail-vx", "a/b/c-v1"])
def test_malformed_ids(bad):
    with pytest.raises(RegistryError, match="malformed env id"):
        envgym.spec(bad)


def test_unknown_id_did_you_mean():
    with pytest.raises(RegistryError, match="did you mean 'tool/retail-v1'"):
        envgym.make("tool/retial-v1")
    with pytest.raises(RegistryError, match="versions registered: tool/retail-v1"):
        envgym.make("tool/retail-v9")
    with pytest.raises(KeyError):  # also the builtin it resembles
        envgym.spec("nope/nothing-v1")


def test_duplicate_registration_refused_unless_override():
    registry.register("test/dup-v1", "envgym_tool.env:ToolEnv")
    try:
        with pytest.raises(RegistryError, match="already registered"):
            registry.register("test/dup-v1", "envgym_tool.env:ToolEnv")
        registry.register("test/dup-v1", "envgym_tool.env:ToolEnv", override=True)
    finally:
        registry._registry.pop("test/dup-v1")


def test_bad_entry_point_is_a_plugin_error():
    registry.register("test/broken-v1", "envgym_no_such_module:Env")
    try:
        with pytest.raises(PluginError, match="cannot import"):
            envgym.make("test/broken-v1")
    finally:
        registry._registry.pop("test/broken-v1")


def test_failing_plugin_hook_is_loud(monkeypatch):
    class EP:
        name, value = "boom", "boom:register"

        def load(self):
            def hook():
                raise RuntimeError("plugin bug")

            return hook

    monkeypatch.setattr(registry, "installed", lambda group: [EP()])
    with pytest.raises(PluginError, match="plugin bug"):
        registry.list_envs("boom")
    assert "boom" not in registry._loaded
