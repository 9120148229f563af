"""``envgym.register_verifier`` by reference ("package.module:ATTR"): nothing imported until a task names the
kind, then checked as a class registration is; the families' hooks register theirs this way."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import envgym
from envgym.errors import RegistryError
from envgym.registry import list_verifier_kinds, verifier_kind
from envgym.task import TaskSpec

KIND = textwrap.dedent("""
    from typing import Literal
    from envgym.types import FrozenModel, Verdict

    class ShoutSpec(FrozenModel):
        type: Literal["shout"] = "shout"
        word: str

    async def check_shout(spec, ctx):
        passed = (ctx.final_answer or "").upper() == spec.word.upper() + "!"
        return Verdict(score=float(passed), passed=passed)

    class Untyped(FrozenModel):
        word: str

    def not_async(spec, ctx):
        return None
""")


@pytest.fixture
def module(tmp_path, monkeypatch):
    name = f"shout_kind_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(KIND)
    monkeypatch.syspath_prepend(str(tmp_path))
    with envgym.isolated():
        yield name
    sys.modules.pop(name, None)


def _task(kind: str) -> TaskSpec:
    return TaskSpec(id="t1", env_id="test/any-v1", instruction="shout", verifiers=[{"type": kind, "word": "hey"}])


def test_a_kind_registered_by_reference_is_imported_when_a_task_names_it(module):
    assert envgym.register_verifier("shout", f"{module}:ShoutSpec", f"{module}:check_shout") is None
    assert "shout" in list_verifier_kinds()
    assert module not in sys.modules  # registering and listing import nothing
    task = _task("shout")
    assert module in sys.modules
    spec = task.verifiers[0]
    assert type(spec).__name__ == "ShoutSpec" and spec.word == "hey"
    kind = verifier_kind("shout")
    assert kind is verifier_kind("shout")  # resolved once
    assert kind.model is type(spec) and kind.ref == f"{module}:ShoutSpec"


def test_registering_the_same_model_again_by_class_or_reference_is_no_conflict(module):
    envgym.register_verifier("shout", f"{module}:ShoutSpec", f"{module}:check_shout")
    envgym.register_verifier("shout", f"{module}:ShoutSpec", f"{module}:check_shout")
    kind = verifier_kind("shout")
    envgym.register_verifier("shout", kind.model, kind.fn)  # the class the reference named
    envgym.register_verifier("shout", f"{module}:ShoutSpec", f"{module}:check_shout")
    with pytest.raises(RegistryError, match="already registered"):
        envgym.register_verifier("shout", f"{module}:Untyped", f"{module}:check_shout")


@pytest.mark.parametrize(("model", "fn", "error"), [
    ("{m}:Missing", "{m}:check_shout", r"verifier type 'shout'.*has no attribute 'Missing'"),
    ("no_such_module_here:ShoutSpec", "{m}:check_shout", r"verifier type 'shout'.*cannot import"),
    ("{m}:Untyped", "{m}:check_shout", r"type: Literal\['shout'\]"),
    ("{m}:ShoutSpec", "{m}:not_async", "must be an async function"),
])
def test_a_bad_reference_is_named_when_the_kind_is_first_used(module, model, fn, error):
    envgym.register_verifier("shout", model.format(m=module), fn.format(m=module))
    with pytest.raises(RegistryError, match=error):
        verifier_kind("shout")


def test_a_reference_that_is_not_module_colon_attr_is_refused_at_once(module):
    with pytest.raises(RegistryError, match=r"is not a reference 'package\.module:ATTR'"):
        envgym.register_verifier("shout", "shout_kind.ShoutSpec", f"{module}:check_shout")


def test_loading_the_plugins_imports_no_familys_verifier_module():
    code = ("import sys, envgym.registry as r\nr._load_plugins()\n"
            "print(sorted(m for m in ('envgym_gui.verify', 'envgym_bfcl.verify', 'envgym_textgames.game') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "[]", out
    for kind in ("desktop", "bfcl", "game_score"):  # and each resolves when asked for
        assert verifier_kind(kind).model.model_fields["type"].default == kind
