import subprocess
import sys

import envgym


def test_all_is_sorted_and_complete():
    assert envgym.__all__ == sorted(envgym.__all__)
    for name in envgym.__all__:
        assert hasattr(envgym, name), name


def run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


LAZY = ("numpy", "gymnasium", "pydantic", "httpx", "rich", "asyncio", "torch", "transformers", "playwright",
        "docker", "envgym.registry", "envgym.types", "envgym.gym", "envgym_tool", "envgym_web", "envgym_gui",
        "envgym_swe", "envgym_timed")


def test_import_envgym_loads_nothing_until_used():
    # every name of __all__ is imported on first use: no family, model, numpy, Gymnasium or extra before
    code = f"import envgym, sys; print(sorted(m for m in {LAZY!r} if m in sys.modules))"
    assert run(code) == "[]"


def test_first_use_imports_the_name_and_keeps_it():
    code = ("import envgym, sys; from envgym import Action; before = 'Action' in vars(envgym); "
            "print(Action is envgym.Action is sys.modules['envgym.types'].Action, before, "
            "'envgym.types' in sys.modules, 'gymnasium' in sys.modules)")
    assert run(code) == "True True True False"


def test_an_unknown_name_is_an_attribute_error():
    code = ("import envgym\ntry:\n    envgym.nothing_here\nexcept AttributeError as e:\n    print(e)\n"
            "try:\n    from envgym import nothing_here\nexcept ImportError:\n    print('import error')")
    assert run(code) == "module 'envgym' has no attribute 'nothing_here'\nimport error"


def test_gymnasium_knows_the_ids_whichever_is_imported_first():
    check = ("print('envgym/tool-retail-v1' in gymnasium.registry, "
             "gymnasium.registry['envgym/gui-osworld-v1'].nondeterministic)")  # the spec's flag is kept
    for first in ("import envgym, gymnasium", "import gymnasium, envgym", "import envgym.gym, gymnasium",
                  "import envgym; from gymnasium.utils.env_checker import check_env; import gymnasium",
                  "import envgym; envgym.list_envs(); import gymnasium"):
        assert run(f"{first}; {check}") == "True True", first


def test_loading_every_plugin_imports_no_gymnasium():
    assert run("import envgym, sys; envgym.list_envs(); print('gymnasium' in sys.modules)") == "False"


def test_gymnasium_learns_ids_registered_after_its_import():
    code = ("import envgym, gymnasium; envgym.register('late/thing-v1', 'x:Y'); "
            "print('envgym/late-thing-v1' in gymnasium.registry)")
    assert run(code) == "True"


def test_making_a_tool_env_loads_only_its_family():
    code = ("import envgym, sys; envgym.make('tool/retail-v1'); print(sorted(m for m in ('numpy', 'gymnasium', "
            "'httpx', 'rich', 'envgym_web', 'envgym_gui', 'envgym_swe', 'envgym.timed.world') if m in sys.modules))")
    assert run(code) == "[]"
