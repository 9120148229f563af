"""The bundled non-generic verifier kinds are plug-in packages under ``verifiers/`` (``envgym_verifiers``):
registered through the entry point like a third party's, importing envgym only through ``envgym.plugin``, never
imported by the kernel; their old homes in ``envgym.verify`` are warning aliases."""

from __future__ import annotations

import ast
import importlib
import importlib.resources
import sys
from pathlib import Path

import pytest

import envgym
import envgym_verifiers
import envgym_verifiers.tests
import envgym_verifiers.timed_write
from envgym import registry
from envgym._entry_points import installed
from envgym.errors import SpecError
from envgym.task import TaskSpec

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "verifiers" / "envgym_verifiers"
MOVED = {"tests": envgym_verifiers.tests, "timed_write": envgym_verifiers.timed_write}


def _imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


@pytest.mark.parametrize("type_name", sorted(MOVED))
def test_the_kind_comes_from_the_entry_point_not_the_kernel(type_name):
    assert type_name not in registry.BUILTIN_VERIFIER_TYPES
    hooks = {ep.name: ep.value for ep in installed(registry.ENTRY_POINT_GROUP)}
    assert hooks.get("verifiers") == "envgym_verifiers:register_all"
    kind = registry.verifier_kind(type_name)
    assert kind is not None and kind.ref == envgym_verifiers.KINDS[type_name][0]
    assert kind.model.__module__ == MOVED[type_name].__name__ and kind.fn.__module__ == MOVED[type_name].__name__
    with envgym.isolated():  # no hook loads in here: the kind is a plug-in's like any other
        assert registry.verifier_kind(type_name) is None
    with envgym.isolated(plugins=True):
        assert registry.verifier_kind(type_name).ref == kind.ref


def test_a_task_naming_a_moved_kind_needs_the_plugin():
    entry = {"type": "timed_write", "expected": [{"tool": "bake"}]}
    task = TaskSpec(id="t", env_id="test/oven-v1", instruction="Bake.", verifiers=(entry,))
    assert type(task.verifiers[0]) is envgym_verifiers.timed_write.TimedWriteSpec
    with envgym.isolated(), pytest.raises((SpecError, ValueError), match="unknown verifier type 'timed_write'"):
        TaskSpec(id="t", env_id="test/oven-v1", instruction="Bake.", verifiers=(entry,))
    with envgym.isolated():
        envgym_verifiers.register_all()  # what the hook does: by reference, nothing imported yet
        assert TaskSpec(id="t", env_id="test/oven-v1", instruction="Bake.", verifiers=(entry,)).hash == task.hash


def test_a_plugin_may_not_take_a_generic_name_but_may_register_a_moved_one_again():
    with pytest.raises(registry.RegistryError, match="built in"):
        registry.register_verifier("rubric", "envgym_verifiers.tests:TestsSpec", "envgym_verifiers.tests:verify_tests")
    with envgym.isolated():
        envgym_verifiers.register_all()
        envgym_verifiers.register_all()  # the same references again: not a conflict
        with pytest.raises(registry.RegistryError, match="already registered"):
            registry.register_verifier("tests", "envgym_verifiers.timed_write:TimedWriteSpec",
                                       "envgym_verifiers.timed_write:verify_timed")


@pytest.mark.parametrize(("old", "new", "names"), [
    ("envgym.verify.tests", envgym_verifiers.tests, ("TestsSpec", "TestsTarget", "grade_patch", "run_tests", "RUNNER",
                                                     "verify_tests", "PLAN_PATH")),
    ("envgym.verify.timed", envgym_verifiers.timed_write, ("TimedWriteSpec", "TimedVerifyContext", "verify_timed")),
])
def test_the_old_module_warns_and_gives_the_same_objects(old, new, names, monkeypatch):
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.deprecated_call(match=rf"{old} moved to {new.__name__} \(since 0.2; the alias goes in 0.3\)"):
        module = importlib.import_module(old)
    for name in names:
        with pytest.deprecated_call(match=rf"{old}.{name} moved to {new.__name__}.{name}"):
            assert getattr(module, name) is getattr(new, name)


def test_the_spec_module_names_of_the_moved_models_warn():
    import envgym.verify.spec as spec

    with pytest.deprecated_call(match="envgym.verify.spec.TestsSpec moved to envgym_verifiers.tests.TestsSpec"):
        assert spec.TestsSpec is envgym_verifiers.tests.TestsSpec
    with pytest.deprecated_call(match="moved to envgym_verifiers.timed_write.TimedWriteSpec"):
        assert spec.TimedWriteSpec is envgym_verifiers.timed_write.TimedWriteSpec


def test_the_plugin_surface_gives_them_without_a_warning():
    import envgym.plugin.tests
    import envgym.plugin.timed

    assert envgym.plugin.tests.TestsSpec is envgym_verifiers.tests.TestsSpec
    assert envgym.plugin.tests.grade_patch is envgym_verifiers.tests.grade_patch
    assert envgym.plugin.timed.TimedWriteSpec is envgym_verifiers.timed_write.TimedWriteSpec
    assert envgym_verifiers.timed_write.TimedVerifyContext is envgym.plugin.timed.TimedVerifyContext


def test_the_runner_ships_inside_the_package():
    shipped = importlib.resources.files("envgym_verifiers.tests").joinpath("_runner.py")
    assert shipped.is_file() and shipped.read_text(encoding="utf-8") == envgym_verifiers.tests.RUNNER
    assert "def main" in envgym_verifiers.tests.RUNNER or "pytest.main" in envgym_verifiers.tests.RUNNER
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    for package in ("envgym_verifiers.tests", "envgym_verifiers.timed_write"):
        assert f'"{package}"' in pyproject, f"{package} is not in pyproject's packages: a wheel would miss it"


def test_the_kernel_never_imports_a_verifier_package():
    found = [f"{path.relative_to(REPO)}:{line}" for path in sorted((REPO / "envgym").rglob("*.py"))
             if (REPO / "envgym" / "plugin") not in path.parents
             for line, name in _imports(path) if name.partition(".")[0] == "envgym_verifiers"]
    assert found == []


def test_verifier_packages_import_envgym_only_through_the_plugin_surface():
    files = sorted(PACKAGE.rglob("*.py"))
    assert PACKAGE / "tests" / "_runner.py" in files
    found = [f"{path.relative_to(REPO)}:{line}: {name}" for path in files for line, name in _imports(path)
             if ((name == "envgym" or name.startswith("envgym.")) and not name.startswith("envgym.plugin"))
             or (name.partition(".")[0].startswith("envgym_") and name.partition(".")[0] != "envgym_verifiers")]
    assert found == []
    assert not [n for _, n in _imports(PACKAGE / "tests" / "_runner.py") if n.startswith("envgym")]


def test_the_folder_is_no_package_of_its_own():
    assert not (REPO / "verifiers" / "__init__.py").exists()  # `import verifiers` stays PyPI's package
