"""What a commit of a Python repository needs to be installed and tested, read from its own files.

::

    env = infer_environment(Path("~/src/mylib"), "3f2a…")
    env.layout, env.python, env.install, env.requirements   # "src", ">=3.9", "pip install … -e .", ("pytest>=7", …)
    env.problem                                             # None, or why no image here can hold this commit
    env.version                                             # "env-<hash>": commits with equal versions share an image

Read at the commit (``git show``, the work tree is never touched): ``pyproject.toml`` (``[project]``
``requires-python``, ``dependencies``, the ``test``/``tests``/``testing``/``dev`` extras, PEP 735
``[dependency-groups]`` of those names, ``[build-system]``), ``setup.cfg`` (``python_requires``,
``install_requires``, the same extras), ``setup.py`` (the same keywords when they are literals) and the
requirement files a repository keeps for its tests (``requirements-test.txt``, ``test-requirements.txt``,
``requirements-dev.txt``, ``requirements/test.txt`` …, ``-r`` includes followed inside the repository).
Nothing is guessed from the code.

The layout (``src`` when ``src/`` holds a package, else ``flat``), the install command, the requirements and
whether the image's Python (:data:`IMAGE_PYTHON`, Debian bookworm's) satisfies ``requires-python`` make up
the environment; :attr:`Environment.version` hashes them. pytest ``addopts`` (``pyproject.toml``,
``pytest.ini``, ``setup.cfg``, ``tox.ini``) that ask for coverage give the test command
:data:`NO_ADDOPTS`. A ``pytest`` pin older than 7 (with its ``py``) is
replaced by the image's pytest: such pytests do not run on the image's Python, nor does the grader's runner.
A repository whose history moves from a flat to a ``src/`` layout, or changes its pins, gets one image
per environment, never one install shared by commits it does not fit (the install of an image runs at one
of its commits).

:func:`resolved_environment` goes further: the requirements as the build backend reports them
(:mod:`envgym_swe.metadata`, in a sandbox) plus those read here, pinned as of the era's date
(:mod:`envgym_swe.resolve`); the pins become the requirements, so an era of equal pins is one environment.
"""

from __future__ import annotations

import ast
import configparser
import hashlib
import json
import re
import subprocess
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name

from envgym_swe.instances import DEFAULT_INSTALL

IMAGE_PYTHON = "3.11"
"""The Python of ``envgym/swe-python`` (Debian bookworm's ``python3``): the only one an image can offer."""
IMAGE_PACKAGES = {"pytest": "8.3.5", "setuptools": "75.8.0", "wheel": "0.45.1"}
"""What ``envgym/swe-python`` installs (``sandboxes/swe-python/requirements.txt``): a requirement these
versions satisfy is left out, so an unpinned ``pytest`` keeps the image's rather than fetching the newest."""
TEST_EXTRAS = ("test", "tests", "testing", "dev")
REQUIREMENT_FILES = ("requirements-test.txt", "requirements_test.txt", "test-requirements.txt",
                     "test_requirements.txt", "requirements-tests.txt", "requirements-dev.txt", "dev-requirements.txt",
                     "requirements/test.txt", "requirements/tests.txt", "requirements/testing.txt",
                     "requirements/dev.txt", "requirements.txt")
FLAT_INSTALL = DEFAULT_INSTALL + " || echo 'envgym: the editable install failed; the tests import from /testbed'"
"""A flat layout's install: when the repository's packaging does not build with the image's tools (a
``license`` string older setuptools refuse, say), the package still imports from ``/testbed``; labelling
then tells whether the tests run."""
NO_ADDOPTS = "python3 -m pytest -rA --tb=short -p no:cacheprovider -o addopts="
"""The test command of a repository whose pytest ``addopts`` name coverage options (``--cov…``): coverage
plugins are not installed and coverage is not what grading measures (the bundled suites run the same way)."""
NO_INSTALL = "true"
"""The install command of a repository with no packaging files: nothing to install, the tests import from
``/testbed`` (the grader's runner puts it on ``sys.path``)."""


@dataclass(frozen=True)
class Environment:
    """One commit's environment (see the module docstring)."""

    layout: str
    python: str
    """``requires-python`` as the repository states it ("" when it does not)."""
    install: str
    requirements: tuple[str, ...]
    problem: str | None = None
    test_cmd: str | None = None
    """None: the grader's default; :data:`NO_ADDOPTS` when the repository's pytest ``addopts`` asks for coverage."""
    pinned_at: str = ""
    """The cut-off date of :attr:`requirements` when :func:`resolved_environment` pinned them ("" when not)."""
    newer: tuple[str, ...] = ()
    """Packages pinned newer than :attr:`pinned_at`: their dated releases do not build for the image's Python."""

    @property
    def version(self) -> str:
        data = json.dumps([self.layout, self.install, list(self.requirements), self.problem is None])
        return "env-" + hashlib.sha256(data.encode()).hexdigest()[:10]


def _show(repo: Path, commit: str, path: str) -> str | None:
    proc = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{path}"], capture_output=True, text=True)
    return proc.stdout if proc.returncode == 0 else None


def _names(repo: Path, commit: str, folder: str = "") -> list[str]:
    where = [folder + "/"] if folder else []
    proc = subprocess.run(["git", "-C", str(repo), "ls-tree", "--name-only", commit, *where], capture_output=True,
                          text=True)
    return proc.stdout.split() if proc.returncode == 0 else []


def _requirement_lines(repo: Path, commit: str, path: str, seen: set[str]) -> list[str]:
    if path in seen or len(seen) > 20:
        return []
    seen.add(path)
    text = _show(repo, commit, path)
    found: list[str] = []
    for raw in (text or "").splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith(("-r ", "--requirement ")):
            include = line.split(None, 1)[1].strip()
            found += _requirement_lines(repo, commit, str(Path(path).parent / include).removeprefix("./"), seen)
        elif not line.startswith("-"):  # -e, --index-url, -c ...: not requirements of the tests
            found.append(line)
    return found


def _setup_py(text: str) -> dict[str, object]:
    """Keyword arguments of the ``setup(...)`` call that are literals, or names a module-level assignment binds
    to a literal (``install_requires=requires``); anything else is left out (the build backend reads it:
    :func:`resolved_environment`)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {}
    bound: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                bound[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                continue
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "setup":
            found = {}
            for kw in node.keywords:
                if isinstance(kw.value, ast.Name) and kw.value.id in bound:
                    found[kw.arg] = bound[kw.value.id]
                    continue
                try:
                    found[kw.arg] = ast.literal_eval(kw.value)
                except ValueError:
                    continue
            return found
    return {}


def _poetry_spec(spec: str) -> str:
    """A Poetry version constraint as a PEP 440 specifier (``^1.2`` -> ``>=1.2,<2``; ``~1.2`` -> ``>=1.2,<1.3``)."""
    out = []
    for part in (p.strip() for p in spec.split(",")):
        if part in ("", "*") or "||" in part:
            continue  # any version; an either-or constraint has no PEP 440 spelling: left to the resolver
        if part[0] in "^~" and not part.startswith("~="):
            version = [int(x) for x in re.findall(r"\d+", part)[:3]] or [0]
            if part[0] == "^":
                first = next((i for i, x in enumerate(version) if x), len(version) - 1)
            else:
                first = min(1, len(version) - 1)
            upper = [*version[:first], version[first] + 1]
            out += [">=" + ".".join(map(str, version)), "<" + ".".join(map(str, upper))]
        else:
            out.append(("==" + part) if part[0].isdigit() else part)
    return ",".join(out)


def _poetry(table: object) -> list[str]:
    """Requirements of a Poetry dependency table (git, path and url dependencies and ``python`` left out)."""
    found = []
    for name, spec in (table.items() if isinstance(table, dict) else ()):
        if name.lower() == "python":
            continue
        extras: list[str] = []
        if isinstance(spec, list):
            spec = spec[0] if spec else "*"  # constraints per Python: the first
        if isinstance(spec, dict):
            if {"git", "path", "url"} & set(spec):
                continue
            extras, spec = list(spec.get("extras", [])), spec.get("version", "*")
        found.append(name + (f"[{','.join(extras)}]" if extras else "") + _poetry_spec(str(spec)))
    return found


def _tox_deps(repo: Path, commit: str, seen: set[str]) -> list[str]:
    """``[testenv] deps`` of ``tox.ini``: plain requirements and ``-r`` files (factor-conditional and
    substituted lines are left out: which factor the tests need is not known)."""
    ini = configparser.ConfigParser(interpolation=None)
    try:
        ini.read_string(_show(repo, commit, "tox.ini") or "")
    except configparser.Error:
        return []
    found = []
    for line in (x.strip() for x in ini.get("testenv", "deps", fallback="").splitlines()):
        if line.startswith("-r"):
            found += _requirement_lines(repo, commit, line[2:].strip().removeprefix("./"), seen)
        elif line and not line.startswith(("-", "#", ".")) and "{" not in line and not re.match(r"^[\w,!-]+:", line):
            found.append(line)
    return found


def _too_old_pytest(req: Requirement) -> bool:
    """A pytest pin no pytest from 7 on satisfies: those do not run on the image's Python, nor the grader's runner."""
    return canonicalize_name(req.name) == "pytest" and not any(
        req.specifier.contains(v, prereleases=True) for v in ("7.0", "7.4.4", IMAGE_PACKAGES["pytest"], "9.0"))


def _valid(reqs: list[str], own: str | None) -> list[str]:
    kept = []
    parsed = []
    for text in reqs:
        try:
            parsed.append(Requirement(text))
        except InvalidRequirement:
            continue
    old_pytest = any(map(_too_old_pytest, parsed))
    for req in parsed:
        name = canonicalize_name(req.name)
        if req.marker is not None and not req.marker.evaluate({"python_version": IMAGE_PYTHON,
                                                               "python_full_version": IMAGE_PYTHON + ".0"}):
            continue  # for other Pythons than the image's
        if old_pytest and name in ("pytest", "py"):
            continue  # the image's pytest instead (``py`` was the old pytest's companion)
        if own is not None and name == own:
            continue  # the project itself (an extra naming its own extras)
        if name in IMAGE_PACKAGES and not req.extras and req.specifier.contains(IMAGE_PACKAGES[name]):
            continue  # the image has it
        kept.append(str(req))
    return kept


def infer_environment(repo: Path, commit: str) -> Environment:
    """The environment of ``repo`` at ``commit`` (see the module docstring)."""
    top = _names(repo, commit)
    src = [n for n in _names(repo, commit, "src") if n != "src/"] if "src" in top else []
    layout = "src" if src else "flat"
    python, runtime, tests = "", [], []
    weak: list[str] = []  # setup(tests_require=...): the files CI installs from name the same packages better
    own = None
    packaged = any(n in top for n in ("pyproject.toml", "setup.py", "setup.cfg"))
    pyproject = _show(repo, commit, "pyproject.toml") if "pyproject.toml" in top else None
    data: dict = {}
    if pyproject:
        try:
            data = tomllib.loads(pyproject)
        except tomllib.TOMLDecodeError:
            data = {}
        project = data.get("project", {})
        if project.get("name"):
            own = canonicalize_name(str(project["name"]))
        python = str(project.get("requires-python", ""))
        runtime += [str(r) for r in project.get("dependencies", [])]
        extras = project.get("optional-dependencies", {})
        groups = data.get("dependency-groups", {})
        for name in TEST_EXTRAS:
            tests += [str(r) for r in extras.get(name, [])]
            tests += [str(r) for r in groups.get(name, []) if isinstance(r, str)]
        tool = data.get("tool", {})
        poetry = tool.get("poetry", {})
        if poetry.get("name") and own is None:
            own = canonicalize_name(str(poetry["name"]))
        runtime += _poetry(poetry.get("dependencies"))
        python = python or _poetry_spec(str(poetry.get("dependencies", {}).get("python", "")))
        tests += _poetry(poetry.get("dev-dependencies"))
        hatch = tool.get("hatch", {}).get("envs", {})
        for name in ("default", *TEST_EXTRAS):
            tests += _poetry(poetry.get("group", {}).get(name, {}).get("dependencies"))
            env = hatch.get(name, {})
            tests += [str(r) for r in [*env.get("dependencies", []), *env.get("extra-dependencies", [])]]
        if not ("build-system" in data or "project" in data) and not {"setup.py", "setup.cfg"} & set(top):
            packaged = False  # a pyproject.toml holding only tool settings
    if "setup.cfg" in top:
        cfg = configparser.ConfigParser(interpolation=None)
        try:
            cfg.read_string(_show(repo, commit, "setup.cfg") or "")
        except configparser.Error:
            cfg = configparser.ConfigParser()
        if cfg.has_option("metadata", "name") and own is None:
            own = canonicalize_name(cfg.get("metadata", "name"))
        python = python or (cfg.get("options", "python_requires", fallback="") or "")
        runtime += cfg.get("options", "install_requires", fallback="").split("\n")
        for name in TEST_EXTRAS:
            tests += cfg.get("options.extras_require", name, fallback="").split("\n")
    if "setup.py" in top:
        kw = _setup_py(_show(repo, commit, "setup.py") or "")
        if isinstance(kw.get("name"), str) and own is None:
            own = canonicalize_name(kw["name"])
        python = python or (kw["python_requires"] if isinstance(kw.get("python_requires"), str) else "")
        for key in ("install_requires", "tests_require"):
            if isinstance(kw.get(key), list | tuple):
                (runtime if key == "install_requires" else weak).extend(str(r) for r in kw[key])
        extras = kw.get("extras_require")
        if isinstance(extras, dict):
            for name in TEST_EXTRAS:
                if isinstance(extras.get(name), list | tuple):
                    tests.extend(str(r) for r in extras[name])
    seen: set[str] = set()
    for path in REQUIREMENT_FILES:
        folder, _, name = path.rpartition("/")
        if (name in top) if not folder else (folder in top and path in _names(repo, commit, folder)):
            tests += _requirement_lines(repo, commit, path, seen)
    if "tox.ini" in top:
        tests += _tox_deps(repo, commit, seen)
    named = {_name(r.strip()) for r in runtime + tests}
    tests += [r for r in weak if _name(r.strip()) not in named]  # a stale tests_require gives way (see below)
    requirements = tuple(sorted(set(_valid([r.strip() for r in runtime + tests if r.strip()], own))))
    problem = None
    if python:
        try:
            if IMAGE_PYTHON + ".0" not in SpecifierSet(python):
                problem = f"requires-python {python!r} excludes the image's Python {IMAGE_PYTHON}"
        except InvalidSpecifier:
            problem = f"requires-python {python!r} is not a version specifier"
    if layout == "src" and not packaged:
        problem = problem or "a src/ layout without packaging files: nothing installs it"
    install = NO_INSTALL if not packaged else DEFAULT_INSTALL if layout == "src" else FLAT_INSTALL
    addopts = str(data.get("tool", {}).get("pytest", {}).get("ini_options", {}).get("addopts", ""))
    for name, section in (("pytest.ini", "pytest"), ("setup.cfg", "tool:pytest"), ("tox.ini", "pytest")):
        if name in top:
            ini = configparser.ConfigParser(interpolation=None)
            try:
                ini.read_string(_show(repo, commit, name) or "")
            except configparser.Error:
                continue
            addopts += " " + ini.get(section, "addopts", fallback="")
    return Environment(layout=layout, python=python, install=install, requirements=requirements, problem=problem,
                       test_cmd=NO_ADDOPTS if "--cov" in addopts else None)



ERA_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "tox.ini", "Pipfile", "requirements",
             *(p for p in REQUIREMENT_FILES if "/" not in p))
"""The files a commit's requirements come from: while none of them changes, the commits are one era."""


def era_date(repo: Path, commit: str) -> str:
    """When the requirements of ``commit`` took their form: the committer date (UTC, RFC 3339) of the last commit
    at or before it that changed one of :data:`ERA_FILES` (``commit``'s own date when none did). Pinning as of
    this date never takes a release newer than ``commit``, and every commit of an era pins the same."""
    proc = subprocess.run(["git", "-C", str(repo), "log", "-1", "--format=%ct", commit, "--", *ERA_FILES],
                          capture_output=True, text=True)
    stamp = proc.stdout.strip()
    if not stamp:
        stamp = subprocess.run(["git", "-C", str(repo), "show", "-s", "--format=%ct", commit], capture_output=True,
                               text=True).stdout.strip()
    return datetime.fromtimestamp(int(stamp or 0), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _name(requirement: str) -> str:
    try:
        return canonicalize_name(Requirement(requirement).name)
    except InvalidRequirement:
        return requirement


def _marker_env(extra: str) -> dict[str, str]:
    return {"python_version": IMAGE_PYTHON, "python_full_version": IMAGE_PYTHON + ".0", "extra": extra}


def split_requires_dist(requires_dist: tuple[str, ...] | list[str],
                        own: str | None = None) -> tuple[list[str], list[str]]:
    """(runtime, test) requirements of ``Requires-Dist`` lines for the image's Python: a line without an
    ``extra`` marker is runtime, one of the :data:`TEST_EXTRAS` is a test requirement, other extras are left
    out; the markers are evaluated here, so the requirements come back without them. A test extra that names
    the project ``own`` itself with extras (attrs: ``tests = ["attrs[tests-no-zope]", "zope.interface"]``) brings
    in those extras' requirements, not the project: its released version would shadow the commit's."""
    parsed = []
    for text in requires_dist:
        try:
            parsed.append(Requirement(text))
        except InvalidRequirement:
            continue

    def bare(req: Requirement) -> str:
        return req.name + (f"[{','.join(sorted(req.extras))}]" if req.extras else "") + str(req.specifier)

    runtime = [bare(r) for r in parsed if r.marker is None or r.marker.evaluate(_marker_env(""))]
    tests: list[str] = []
    todo, seen = list(TEST_EXTRAS), set(TEST_EXTRAS)
    while todo:
        extra = todo.pop(0)
        for req in parsed:
            if req.marker is None or req.marker.evaluate(_marker_env("")) or not req.marker.evaluate(
                    _marker_env(extra)):
                continue
            if own is not None and canonicalize_name(req.name) == own:
                more = [e for e in sorted(req.extras) if e not in seen]
                seen.update(more)
                todo += more
            elif bare(req) not in tests:
                tests.append(bare(req))
    return runtime, tests


def resolved_environment(repo: Path, commit: str, *, log: Callable[[str], None] = lambda _: None) -> Environment:
    """:func:`infer_environment`'s layout, install and test command, with requirements read the way the build
    backend reads them and pinned as of the date the commit's era began (never after the commit).

    The runtime requirements and the test extras come from the backend's own metadata
    (:func:`envgym_swe.metadata.read_metadata`: a sandbox with no network), plus ``setup(tests_require=…)``
    and everything :func:`infer_environment` finds (requirement files, dependency groups, Poetry and Hatch
    dev dependencies, ``tox.ini`` deps). A test extra or ``tests_require`` naming a package those already name
    is dropped: the files a project's CI installs from are kept up to date, ``tests_require`` often is not
    (requests' 2022 ``setup.py`` pins ``pytest-httpbin==0.0.7``, its ``requirements-dev.txt`` ``==1.0.0``).
    All of them, with the image's pytest, are pinned by
    :func:`envgym_swe.resolve.resolve` with nothing newer than the era's date (:func:`era_date`: when the
    packaging files last changed, at or before the commit), for the image's
    one Python (:data:`IMAGE_PYTHON`). :attr:`Environment.problem` says when the era cannot be built: the
    backend's error (a ``src/`` layout needs its install; a flat one falls back to the files read here, the
    tests importing from ``/testbed``), a ``requires-python`` that excludes the image's Python, or the
    resolver's error lines. The pins are the requirements, so commits with equal pins share one environment
    (:attr:`Environment.version`) and one image. Synchronous: call it from a thread in async code.
    """
    from envgym_swe import metadata, resolve

    static = infer_environment(repo, commit)
    if static.problem:
        return static
    runtime: list[str] = []
    tests: list[str] = []
    python, own = static.python, None
    if static.install != NO_INSTALL:
        meta = metadata.read_metadata(repo, commit, cache=metadata.CACHE, log=log)
        if meta.error and static.layout == "src":
            return replace(static, problem=f"the build backend gives no metadata: {meta.error}\nhint: the image's "
                                           "editable install runs the same backend; -v shows the fetch and build")
        if meta.error:
            log(f"{commit[:12]}: the build backend gives no metadata; using the requirements read from the files "
                f"(the tests import from /testbed): {meta.error.splitlines()[0]}")
        own = canonicalize_name(meta.name) if meta.name else None
        runtime, tests = split_requires_dist(meta.requires_dist, own)
        tests += meta.tests_require
        python = meta.requires_python or python
    try:
        if python and IMAGE_PYTHON + ".0" not in SpecifierSet(python):
            return replace(static, python=python, problem=f"requires-python {python!r} excludes the image's only "
                                                          f"Python, {IMAGE_PYTHON} (Debian bookworm's python3)")
    except InvalidSpecifier:
        pass
    named = {_name(r) for r in [*runtime, *static.requirements]}
    tests = [r for r in tests if _name(r) not in named]  # the files CI installs from win over a stale tests_require
    # the grader runs the image's pytest whatever the commit pins: a pin it does not satisfy gives way (tomlkit's
    # Poetry group `pytest = "^7.2.0"` never resolved beside it), as a pin older than 7 does in _valid
    wanted = [*(r for r in _valid([*runtime, *static.requirements, *tests], own) if _name(r) != "pytest"),
              f"pytest=={IMAGE_PACKAGES['pytest']}"]
    date = era_date(repo, commit)
    res = resolve.resolve(wanted, date=date, python=IMAGE_PYTHON, cache=resolve.CACHE, check=resolve.fetch_pins)
    if res.error:
        return replace(static, python=python, problem=f"the requirements do not resolve as of {date} for Python "
                                                      f"{IMAGE_PYTHON}, the image's only one:\n{res.error}")
    image = {f"{name}=={version}" for name, version in IMAGE_PACKAGES.items()}
    pins = tuple(p for p in res.pins if p not in image)
    if res.newer:
        log(f"{commit[:12]}: newer than {date} (their releases of then do not build for Python {IMAGE_PYTHON}): "
            + ", ".join(res.newer))
    return replace(static, python=python, requirements=pins, pinned_at=date, newer=res.newer)
