"""envgym._forkserver: the workers' fork server, started early (by ``envgym eval`` before its own imports)."""

import multiprocessing
import multiprocessing.forkserver
import os
import subprocess
import sys
import textwrap

import pytest

from envgym import _forkserver as forkserver

pytestmark = pytest.mark.skipif("forkserver" not in multiprocessing.get_all_start_methods(),
                                reason="no forkserver start method here")


@pytest.fixture
def fresh(monkeypatch):
    """forkserver as if nothing had started it; ensure_running counted, not run."""
    calls = []
    monkeypatch.setattr(forkserver, "_thread", None)
    monkeypatch.setattr(multiprocessing.forkserver, "ensure_running", lambda: calls.append(1))
    return calls


def test_start_runs_the_server_once_in_a_thread_with_what_workers_import(fresh):
    forkserver.start()
    first = forkserver._thread
    forkserver.start()
    assert forkserver._thread is first  # a second start is a no-op
    first.join(10)
    assert fresh == [1]
    assert multiprocessing.forkserver._forkserver._preload_modules == list(forkserver.PRELOAD)
    assert "envgym._eval_workers" in forkserver.PRELOAD and "envgym.cli" in forkserver.PRELOAD


def test_start_is_a_no_op_in_a_worker_importing_its_parents_main_script(fresh, monkeypatch):
    monkeypatch.setattr(multiprocessing.current_process(), "_inheriting", True, raising=False)
    forkserver.start()
    assert forkserver._thread is None and fresh == []


@pytest.mark.parametrize(("flags", "expected"), [
    (["--workers", "2", "--concurrency", "2"], "[(False, ['no-such-suite'])]"),  # started, before envgym.eval was
    # imported, told the run's suites
    (["--workers", "1", "--concurrency", "8"], "[]"),
    (["--workers", "2", "--concurrency", "1"], "[]"),  # one episode at a time: no workers are started
])
def test_envgym_eval_starts_the_server_before_its_imports(tmp_path, flags, expected):
    code = textwrap.dedent(f"""
        import sys
        import envgym._forkserver
        seen = []
        envgym._forkserver.start = lambda suites=(): seen.append(("envgym.eval" in sys.modules, list(suites)))
        from envgym.cli import main
        code = main(["eval", "--suite", "no-such-suite", "--agent", "oracle", *{flags!r},
                     "--out", {str(tmp_path / "run")!r}])
        print(code, seen)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip().endswith(f"2 {expected}"), proc  # exit 2: the unknown suite, after the start


def _fresh_interpreter(code):
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1]


def test_the_server_loads_every_environment_plugin_so_that_no_worker_does():
    assert "envgym._forkserver_preload" in forkserver.PRELOAD
    loaded = _fresh_interpreter("""
        import envgym.registry as registry
        from envgym._entry_points import installed
        before = set(registry._loaded)
        import envgym._forkserver_preload
        names = sorted(ep.name for ep in installed(registry.ENTRY_POINT_GROUP))
        print(before == set(), sorted(registry._loaded) == names and len(names) > 1)
    """)
    assert loaded == "True True"


def test_a_plugin_that_fails_to_load_in_the_server_is_left_for_the_worker():
    out = _fresh_interpreter("""
        import envgym.registry as registry
        from envgym.errors import PluginError

        class Broken:
            name, value = "broken", "no_such_module:register"
            def load(self):
                raise ImportError("no module named no_such_module")

        registry.installed = lambda group: [Broken()]
        import envgym._forkserver_preload  # the server starts regardless
        try:
            registry.list_envs()
        except PluginError as exc:  # the worker's first make() reports it, naming the plug-in
            print("broken" in str(exc), "broken" in registry._loaded)
    """)
    assert out == "True False"


def test_the_server_is_told_the_runs_suites_and_no_other_process_is(fresh, monkeypatch):
    seen = []
    monkeypatch.setattr(multiprocessing.forkserver, "ensure_running",
                        lambda: seen.append(os.environ.get(forkserver.SUITES_VAR)))
    forkserver.start(["tool-retail", "tasks/tool-assistant"])
    forkserver._thread.join(10)
    assert seen == ['["tool-retail", "tasks/tool-assistant"]']  # in the environment the server is spawned with
    assert forkserver.SUITES_VAR not in os.environ  # and gone once it is


def test_the_server_warms_the_envs_of_the_runs_suites_and_skips_what_it_cannot():
    code = """
        import sys
        import envgym._forkserver_preload
        from envgym_tool.domains.retail import DOMAIN
        print("envgym_tool.domains.assistant" in sys.modules, "schemas" in DOMAIN.__dict__)
    """
    unwarmed = _fresh_interpreter(code)
    env = {**os.environ, forkserver.SUITES_VAR: '["no-such-suite", "tool-retail", "tool-assistant"]'}
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120,
                          env=env)
    assert proc.returncode == 0, proc.stderr
    assert unwarmed == "False False"  # without suites: plug-ins only
    assert proc.stdout.strip() == "True True"  # each domain's module, and its tools' schemas worked out
