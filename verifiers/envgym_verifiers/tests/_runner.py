"""envgym's test runner: pytest in a grading sandbox, its verdict on a channel the tested code cannot read.

Not imported by envgym: :mod:`envgym_verifiers.tests` writes this file's text into a fresh grading sandbox and
runs it there as ``python3 -P -s run.py PLAN`` in a cleared environment (``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``).
Only the standard library and the image's own pytest are used, and everything happens before any code of the
work tree is imported:

1. ``PLAN`` (a JSON file the grader wrote: nonce, work tree, files, pytest arguments) is read and deleted.
   Nothing secret is in ``argv`` or the environment.
2. The report channel is the process's original stderr: the runner keeps a private copy of that descriptor and
   points fd 2 at stdout, so everything the tests print is the log (stdout) and the channel is a pipe to the
   grader that nothing in the container can read back. Each report line is ``NONCE JSON``.
3. pytest is imported (the image's: site-packages come before the work tree on ``sys.path``).
4. The configuration: the file pytest itself would pick at the base commit (the grader restored every
   configuration file the patch touched before this runs) is copied verbatim to ``.envgym-pytest.<ext>`` beside
   it (or an empty ``[pytest]`` file is written at the work tree's root) and named with ``-c``, ``--rootdir``
   and ``--confcutdir``; ``-o addopts=`` and ``-p no:cacheprovider`` follow, then the task's own options.
5. Plugins: autoload is off; the ``pytest11`` entry points of distributions installed in site-packages (never
   metadata in the work tree) are loaded now and handed to ``pytest.main`` as objects.
6. Canaries: one new test module per test directory (at most 3) holding a test that fails, under a name made of
   the words of that directory's own test names (none when the task's options stop at the first failure).
   Their node ids are reported first. A run in which a canary
   comes out passing (or pytest's exit status says every test passed although one failed) was rewritten from
   inside: the grader throws the whole run away.
7. ``pytest.main`` runs with a reporter whose state lives in this function's closure (no module global of
   ``__main__`` to replace); an ``END <exit status>`` line closes the report.
"""

import json
import os
import random
import re
import sys

CONFIG_NAMES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
CONFIG_NAMES_9 = ("pytest.toml", ".pytest.toml", *CONFIG_NAMES)
"""pytest's configuration files in the order it looks for them in each folder (pytest 9 reads TOML ones first)."""
_SECTION = {".ini": re.compile(r"^\s*\[pytest\]\s*$", re.M), ".cfg": re.compile(r"^\s*\[tool:pytest\]\s*$", re.M)}
_TEST_NAME = re.compile(r"^def test_(\w+)\s*\(", re.M)
_WORDS = ("value", "result", "empty", "order", "default", "none", "basic", "type", "list", "dict", "keys", "args",
          "nested", "string", "error", "missing", "single", "many", "repr", "copy")


def _counts(path, pytest9):
    """Whether pytest takes ``path`` as its configuration file (what its ``load_config_dict_from_file`` checks)."""
    name = os.path.basename(path)
    with open(path, "rb") as f:
        raw = f.read()
    if name == "pytest.ini" or (pytest9 and name == ".pytest.ini"):
        return True
    if name.endswith(".toml"):
        import tomllib

        try:
            data = tomllib.loads(raw.decode("utf-8", "replace"))
        except ValueError:
            return False
        if name in ("pytest.toml", ".pytest.toml"):
            return pytest9
        tool = data.get("tool", {}).get("pytest", {})
        return "ini_options" in tool or (pytest9 and bool(tool))
    return bool(_SECTION[os.path.splitext(name)[1]].search(raw.decode("utf-8", "replace")))


def _config(workdir, files, pytest9):
    """The folder and file pytest would take its configuration from, searched as its ``locate_config`` does
    (each argument, then its parents; the grading sandbox has nothing above ``workdir``): the first file that
    counts; else the first ``pyproject.toml`` seen (an empty configuration, as pytest 8.1+ takes it); else
    (folder, None), the folder being the nearest one with a ``setup.py`` above the arguments' common folder,
    or ``workdir``."""
    paths = [os.path.abspath(os.path.join(workdir, f)) for f in files] or [workdir]
    pyproject = None
    for arg in paths:
        here = arg
        while here.startswith(workdir):
            for name in CONFIG_NAMES_9 if pytest9 else CONFIG_NAMES:
                path = os.path.join(here, name)
                if os.path.isfile(path) and not os.path.islink(path):
                    if _counts(path, pytest9):
                        return here, path
                    if name == "pyproject.toml" and pyproject is None:
                        pyproject = here
            if here == workdir:
                break
            here = os.path.dirname(here)
    if pyproject is not None:
        return pyproject, None
    here = os.path.commonpath([os.path.dirname(p) for p in paths])
    while here.startswith(workdir) and here != workdir and not os.path.isfile(os.path.join(here, "setup.py")):
        here = os.path.dirname(here)
    return (here if here.startswith(workdir) else workdir), None


def _write_config(workdir, files, pytest9):
    """Step 4: the grader's own copy of the configuration; returns the pytest options naming it."""
    folder, found = _config(workdir, files, pytest9)
    if found is None:
        body, ext = b"[pytest]\n", ".ini"
    else:
        name = os.path.basename(found)
        with open(found, "rb") as f:
            body = f.read()
        ext = {"pytest.ini": ".ini", ".pytest.ini": ".ini", "tox.ini": ".ini", "setup.cfg": ".cfg"}.get(name, ".toml")
        if name in ("pytest.toml", ".pytest.toml"):  # a [pytest] table, read as such only under that name
            import tomllib

            table = tomllib.loads(body.decode("utf-8", "replace"))["pytest"]
            body = ("[tool.pytest]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in table.items())).encode()
    copy = os.path.join(folder, ".envgym-pytest" + ext)
    if os.path.lexists(copy):
        os.unlink(copy)
    with open(copy, "wb") as f:
        f.write(body)
    return ["-c", copy, "--rootdir", folder, "--confcutdir", folder, "-o", "addopts=", "-p", "no:cacheprovider"]


def _basenames(workdir):
    names = set()
    for _, dirs, found in os.walk(workdir):
        dirs[:] = [d for d in dirs if d not in (".git", "__pycache__")]
        names.update(found)
    return names


def _plant_canaries(workdir, files, rng):
    """Step 6: one failing test module per test folder (at most 3); returns their node ids (cwd-relative). A
    module's name is unique in the whole tree (pytest's default import mode needs unique basenames)."""
    taken = _basenames(workdir)
    folders = []
    for f in files:
        d = os.path.dirname(f)
        if f.endswith(".py") and os.path.isfile(os.path.join(workdir, f)) and d not in folders:
            folders.append(d)
    planted = []
    for d in folders[:3]:
        words = set()
        for f in files:
            if os.path.dirname(f) == d and os.path.isfile(os.path.join(workdir, f)):
                with open(os.path.join(workdir, f), encoding="utf-8", errors="replace") as src:
                    for name in _TEST_NAME.findall(src.read()):
                        words.update(w for w in name.split("_") if w.isalpha() and len(w) > 2)
        pool = sorted(words) or list(_WORDS)
        for _ in range(100):
            stem = "_".join([*rng.sample(pool, min(2, len(pool))), rng.choice(_WORDS)])
            module = os.path.join(d, f"test_{stem}.py")
            if f"test_{stem}.py" not in taken:
                taken.add(f"test_{stem}.py")
                break
        else:
            continue
        body = f"def test_{stem}():\n    result = sum([2, 3, 4])\n    assert result == 10\n"
        with open(os.path.join(workdir, module), "w", encoding="utf-8") as out:
            out.write(body)
        planted.append(f"{module}::test_{stem}")
    return planted


def _site_plugins(skip):
    """Step 5: the pytest11 plugins of distributions in site-packages, loaded now (the work tree is not read)."""
    import importlib.metadata

    site = [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    plugins, seen = [], set()
    for dist in importlib.metadata.distributions(path=site):
        for ep in dist.entry_points:
            if ep.group == "pytest11" and ep.name not in seen and ep.name not in skip:
                seen.add(ep.name)
                plugins.append(ep.load())
    return plugins


def main(plan_path):
    with open(plan_path, encoding="utf-8") as f:
        plan = json.load(f)
    os.unlink(plan_path)
    nonce, workdir, files, task_args = plan["nonce"], plan["workdir"], plan["files"], plan["args"]
    channel = os.dup(2)  # step 2: not inheritable (PEP 446); subprocesses of the tests never get it
    os.dup2(1, 2)

    def emit(text):
        data = (nonce + " " + text + "\n").encode()
        while data:
            data = data[os.write(channel, data):]

    import pytest  # step 3, before anything of the work tree

    pytest9 = int(pytest.__version__.split(".")[0]) >= 9
    args = _write_config(workdir, files, pytest9)
    # a session that stops at its first failure could stop at a canary (plugins may reorder tests): none then
    stops = any(a in ("-x", "--exitfirst", "--sw", "--stepwise") or a.startswith("--maxfail") for a in task_args)
    canaries = [] if stops else _plant_canaries(workdir, files, random.SystemRandom())
    emit("CANARIES " + json.dumps(canaries))
    skip = {a.split("no:", 1)[1] for a in task_args if a.startswith(("no:", "-pno:"))}
    plugins = _site_plugins(skip)
    site = [i for i, p in enumerate(sys.path) if p.endswith(("site-packages", "dist-packages"))]
    sys.path.insert(site[0] if site else len(sys.path), workdir)  # after the standard library

    def status(report):
        xfail = hasattr(report, "wasxfail")
        if report.when == "call":
            if report.passed:
                return "XPASS" if xfail else "PASSED"
            if report.skipped:
                return "XFAIL" if xfail else "SKIPPED"
            return "FAILED"
        if report.failed:
            return "ERROR"
        if report.skipped:
            return "XFAIL" if xfail else "SKIPPED"
        return None

    configs = []

    class Reporter:
        @pytest.hookimpl(tryfirst=True)
        def pytest_configure(self, config):
            configs.append(config)

        @pytest.hookimpl(trylast=True)
        def pytest_runtest_logreport(self, report):
            found = status(report)
            if found is not None:
                test = configs[0].cwd_relative_nodeid(report.nodeid)
                emit(json.dumps({"test": test, "when": report.when, "status": found}))

    code = int(pytest.main([*args, *task_args, *files, *(c.split("::")[0] for c in canaries)],
                           plugins=[Reporter(), *plugins]))
    emit("END " + str(code))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
