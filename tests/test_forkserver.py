"""envgym.forkserver: the workers' fork server, started early (by ``envgym eval`` before its own imports)."""

import multiprocessing
import multiprocessing.forkserver
import subprocess
import sys
import textwrap

import pytest

from envgym import forkserver

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
    assert "envgym.eval_workers" in forkserver.PRELOAD and "envgym.cli" in forkserver.PRELOAD


def test_start_is_a_no_op_in_a_worker_importing_its_parents_main_script(fresh, monkeypatch):
    monkeypatch.setattr(multiprocessing.current_process(), "_inheriting", True, raising=False)
    forkserver.start()
    assert forkserver._thread is None and fresh == []


@pytest.mark.parametrize(("flags", "expected"), [
    (["--workers", "2", "--concurrency", "2"], "[False]"),  # started, before envgym.eval was imported
    (["--workers", "1", "--concurrency", "8"], "[]"),
    (["--workers", "2", "--concurrency", "1"], "[]"),  # one episode at a time: no workers are started
])
def test_envgym_eval_starts_the_server_before_its_imports(tmp_path, flags, expected):
    code = textwrap.dedent(f"""
        import sys
        import envgym.forkserver
        seen = []
        envgym.forkserver.start = lambda: seen.append("envgym.eval" in sys.modules)
        from envgym.cli import main
        code = main(["eval", "--suite", "no-such-suite", "--agent", "oracle", *{flags!r},
                     "--out", {str(tmp_path / "run")!r}])
        print(code, seen)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip().endswith(f"2 {expected}"), proc  # exit 2: the unknown suite, after the start
