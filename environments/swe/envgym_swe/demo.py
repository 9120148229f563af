"""A tiny repository and SWE-bench instances for it, made locally: try the family with no download.

``make_demo(root)`` creates ``root/demo-calc`` (a git repository: a three-function package and its tests)
with two buggy base commits, and returns the repository path and four instances in SWE-bench's format:

* ``demo__calc-1``: ``mean`` divides by ``len - 1``; hidden test ``tests/test_mean.py``;
* ``demo__calc-2``: ``clamp`` swaps its bounds; hidden tests added to ``tests/test_calc.py``;
* ``demo__calc-3-stale``: a gold patch that does not apply (skipped at import, with the reason);
* ``demo__calc-4-hang``: its hidden test never ends (graded as a failure with reason ``timeout``).

``make_history(root)`` creates ``root/demo-shop``: a package with a history of real fixes, the input of
``envgym swe mine`` (``python -m envgym_swe.demo --history DIR`` makes it and prints the command). Its
commits, oldest first:

1. ``shop`` 0.1 (flat layout; ``pytest`` and ``six`` as the ``test`` extra): ``cart``, ``client``; tests,
   among them ``test_checkout_is_flaky`` (each run draws PASSED, FAILED, SKIPPED, XFAIL or ERROR);
2. *fix*: ``total`` ignored quantities (+ a test in ``tests/test_cart.py``, beside the flaky one);
3. *fix*: ``fetch`` asked for the wrong path; its test serves a page on ``localhost`` and prints the time
   and the port (so its log differs from run to run);
4. docs only; 5. tests only (neither is a candidate);
6. the move to a ``src/`` layout (another environment: another image);
7. *fix*: ``discount`` of 0 % raised; its test imports ``six`` (a test requirement).

Used by the tests, the benchmark and the README's quick start (``python -m envgym_swe.demo DIR`` writes
``DIR/instances.jsonl``, the hanging instance left out, and prints the import command).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = "demo/calc"
_ENV = {"GIT_AUTHOR_NAME": "demo", "GIT_AUTHOR_EMAIL": "demo@localhost", "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
        "GIT_COMMITTER_NAME": "demo", "GIT_COMMITTER_EMAIL": "demo@localhost",
        "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}

CLEAN = '''"""calc: a few numeric helpers."""


def add(a, b):
    return a + b


def mean(values):
    """Arithmetic mean of a non-empty sequence."""
    values = list(values)
    return sum(values) / len(values)


def clamp(x, low, high):
    """x limited to [low, high]."""
    return max(low, min(x, high))
'''
TESTS = '''from calc import add, clamp


def test_add():
    assert add(2, 3) == 5


def test_add_negative():
    assert add(-2, 3) == 1


def test_clamp_inside():
    assert clamp(5, 0, 10) == 5
'''
MEAN_TESTS = '''from calc import mean


def test_mean():
    assert mean([1, 2, 3, 4]) == 2.5


def test_mean_single():
    assert mean([7]) == 7
'''
CLAMP_TESTS = '''

def test_clamp_high():
    assert clamp(15, 0, 10) == 10


def test_clamp_low():
    assert clamp(-5, 0, 10) == 0
'''
HANG_TESTS = '''def test_hangs():
    while True:
        pass
'''
PYPROJECT = '''[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "calc"
version = "0.1.0"
'''


def _git(repo: Path, *args: str, stdin: str | None = None) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], input=stdin, capture_output=True, text=True, check=True,
                          env={**os.environ, **_ENV}).stdout


def _commit(repo: Path, files: dict[str, str], message: str, parent: str | None = None) -> str:
    if parent:
        _git(repo, "checkout", "-q", "--detach", parent)
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD").strip()


def _diff(repo: Path, a: str, b: str, *paths: str) -> str:
    return _git(repo, "diff", a, b, "--", *paths)


def make_demo(root: str | Path) -> tuple[Path, list[dict[str, Any]]]:
    """Create the demo repository under ``root``; return (its path, the instances)."""
    repo = Path(root) / "demo-calc"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    clean = _commit(repo, {"pyproject.toml": PYPROJECT, "calc/__init__.py": CLEAN, "tests/test_calc.py": TESTS},
                    "calc 0.1.0")
    # Task commits hold the bug; the hidden tests are absent there and come back through test_patch.
    bug1 = _commit(repo, {"calc/__init__.py": CLEAN.replace("/ len(values)", "/ (len(values) - 1)")}, "task 1")
    _git(repo, "tag", "task-1")
    fixed1 = _commit(repo, {"calc/__init__.py": CLEAN, "tests/test_mean.py": MEAN_TESTS}, "fix 1")
    bug2 = _commit(repo, {"calc/__init__.py": CLEAN.replace("max(low, min(x, high))", "max(high, min(x, low))")},
                   "task 2", parent=clean)
    _git(repo, "tag", "task-2")
    fixed2 = _commit(repo, {"calc/__init__.py": CLEAN, "tests/test_calc.py": TESTS + CLAMP_TESTS}, "fix 2")
    hang = _commit(repo, {"tests/test_hang.py": HANG_TESTS}, "hang", parent=clean)
    _git(repo, "checkout", "-q", "main")
    p2p = ["tests/test_calc.py::test_add", "tests/test_calc.py::test_add_negative"]
    instances = [
        {"instance_id": "demo__calc-1", "repo": REPO, "base_commit": bug1, "version": "0.1",
         "patch": _diff(repo, bug1, fixed1, "calc"), "test_patch": _diff(repo, bug1, fixed1, "tests"),
         "problem_statement": "calc.mean([1, 2, 3, 4]) returns 3.3333333333333335; expected 2.5.",
         "FAIL_TO_PASS": json.dumps(["tests/test_mean.py::test_mean", "tests/test_mean.py::test_mean_single"]),
         "PASS_TO_PASS": json.dumps(p2p)},
        {"instance_id": "demo__calc-2", "repo": REPO, "base_commit": bug2, "version": "0.1",
         "patch": _diff(repo, bug2, fixed2, "calc"), "test_patch": _diff(repo, bug2, fixed2, "tests"),
         "problem_statement": "calc.clamp(15, 0, 10) returns 0; expected 10 (the value limited to [low, high]).",
         "FAIL_TO_PASS": ["tests/test_calc.py::test_clamp_high", "tests/test_calc.py::test_clamp_low"],
         "PASS_TO_PASS": [*p2p, "tests/test_calc.py::test_clamp_inside"]},
        {"instance_id": "demo__calc-3-stale", "repo": REPO, "base_commit": bug1, "version": "0.1",
         "patch": _diff(repo, bug2, fixed2, "calc"), "test_patch": "",
         "problem_statement": "A gold patch written for another commit.",
         "FAIL_TO_PASS": ["tests/test_calc.py::test_add"], "PASS_TO_PASS": []},
        {"instance_id": "demo__calc-4-hang", "repo": REPO, "base_commit": clean, "version": "0.1",
         "patch": _diff(repo, clean, bug1, "calc"), "test_patch": _diff(repo, clean, hang),
         "problem_statement": "A task whose hidden test never ends.",
         "FAIL_TO_PASS": ["tests/test_hang.py::test_hangs"], "PASS_TO_PASS": []},
    ]
    return repo, instances


SHOP_PYPROJECT = '''[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "shop"
version = "0.1.0"
requires-python = ">=3.9"

[project.optional-dependencies]
test = ["pytest", "six"]
'''
CART = '''"""Shopping cart arithmetic."""


def total(items):
    """Sum of price * quantity over (price, quantity) pairs."""
    return sum(price for price, quantity in items)


def discount(amount, percent):
    """``amount`` less ``percent`` per cent."""
    if not percent:
        raise ValueError("no discount")
    return round(amount * (100 - percent) / 100, 2)
'''
CLIENT = '''"""A tiny HTTP client for the price service."""
import urllib.request


def fetch(host, port, path):
    """The body of http://host:port/path as text."""
    with urllib.request.urlopen(f"http://{host}:{port}/{path.lstrip('/')}x", timeout=5) as response:
        return response.read().decode()
'''
CART_TESTS = '''import random

import pytest

from shop.cart import discount, total


def test_total_empty():
    assert total([]) == 0


def test_discount_half():
    assert discount(10, 50) == 5


@pytest.fixture
def draw():
    outcome = random.SystemRandom().randrange(5)
    if outcome == 4:
        raise RuntimeError("the fixture failed this time")
    return outcome


def test_checkout_is_flaky(draw):
    if draw == 1:
        pytest.skip("skipped this time")
    if draw == 2:
        pytest.xfail("expected to fail this time")
    assert draw == 0
'''
QTY_TEST = '''

def test_total_counts_quantities():
    assert total([(2.5, 2), (1, 3)]) == 8
'''
CLIENT_TESTS = '''import datetime
import http.server
import threading

from shop.client import fetch


class Prices(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"42" if self.path == "/price" else b"?"
        self.send_response(200 if body == b"42" else 404)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_fetch_from_a_local_server():
    server = http.server.HTTPServer(("localhost", 0), Prices)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        print(f"serving on localhost:{port} at {datetime.datetime.now().isoformat()}")
        assert fetch("localhost", port, "/price") == "42"
    finally:
        server.shutdown()
'''
DISCOUNT_TESTS = '''import six

from shop.cart import discount


def test_zero_discount_is_the_amount():
    assert discount(10, 0) == 10


def test_discount_quarter():
    assert discount(six.moves.reduce(lambda a, b: a + b, [4, 4]), 25) == 6
'''


def make_history(root: str | Path) -> Path:
    """Create the ``demo-shop`` repository under ``root`` (see the module docstring); returns its path."""
    repo = Path(root) / "demo-shop"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    _commit(repo, {"pyproject.toml": SHOP_PYPROJECT, "shop/__init__.py": '"""shop."""\n', "shop/cart.py": CART,
                   "shop/client.py": CLIENT, "tests/test_cart.py": CART_TESTS, "README.md": "# shop\n"},
            "shop 0.1: cart and price client")
    _commit(repo, {"shop/cart.py": CART.replace("sum(price for", "sum(price * quantity for"),
                   "tests/test_cart.py": CART_TESTS + QTY_TEST},
            "Fix total() ignoring quantities\n\ntotal([(2.5, 2)]) returned 2.5 instead of 5: the quantity of each "
            "line was dropped.\n\nSigned-off-by: demo <demo@localhost>")
    _commit(repo, {"shop/client.py": CLIENT.replace("lstrip('/')}x", "lstrip('/')}"),
                   "tests/test_client.py": CLIENT_TESTS},
            "Fix fetch() requesting the wrong path\n\nfetch('localhost', port, '/price') asked the server for "
            "/pricex and got a 404 error.")
    _commit(repo, {"README.md": "# shop\n\nCart arithmetic and a price client.\n"}, "Describe the package")
    _commit(repo, {"tests/test_cart.py": CART_TESTS + QTY_TEST + "\n\ndef test_total_single():\n"
                   "    assert total([(3, 1)]) == 3\n"}, "More cart tests")
    for name in ("__init__.py", "cart.py", "client.py"):
        (repo / "src" / "shop").mkdir(parents=True, exist_ok=True)
        (repo / "shop" / name).rename(repo / "src" / "shop" / name)
    (repo / "shop").rmdir()
    _commit(repo, {}, "Move the package to a src/ layout")
    _commit(repo, {"src/shop/cart.py": CART.replace("if not percent:", "if percent is None:"),
                   "tests/test_discount.py": DISCOUNT_TESTS},
            "Fix discount() raising for 0 %\n\ndiscount(10, 0) raised ValueError('no discount'); it should "
            "return the amount unchanged.")
    return repo


def main(argv: list[str] | None = None) -> int:
    args = list(argv if argv is not None else sys.argv[1:])
    if args[:1] == ["--history"]:
        root = Path((args[1:] or ["demo-swe"])[0])
        repo = make_history(root)
        print(f"envgym swe mine {repo} --suite swe-shop --repo-name demo/shop")
        return 0
    root = Path((args or ["demo-swe"])[0])
    repo, instances = make_demo(root)
    path = root / "instances.jsonl"
    path.write_text("".join(json.dumps(i) + "\n" for i in instances if "hang" not in i["instance_id"]))
    print(f"envgym swe import {path} --repo {REPO}={repo} --suite swe-demo --out {root / 'swe-demo'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
