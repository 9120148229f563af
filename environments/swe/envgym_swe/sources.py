"""Pinned library sources: fetch an sdist, unpack it, and build a git repository with deterministic history.

A :class:`Library` names one pure-Python PyPI release whose sdist ships its own test suite. ``fetch_sdist``
downloads it with ``pip download --no-deps --no-binary :all:`` into ``~/.cache/envgym/sdists`` (once) and
checks it against the pinned sha256. ``build_repo`` unpacks it into a fresh git repository whose single
commit (the *clean* commit) is made with a fixed author, committer, date and config (``git -c``, no hooks,
no signing, no user config), so its id is the same on every machine. ``add_task_commit`` puts one commit per
task on top of the clean commit (the injected bug plus the removal of the hidden test files), tagged
``task/<instance_id>``; its id depends only on the clean commit and the edit, so rebuilding every task from
the sdist and the stored gold patches (:func:`rebuild_repo`) reproduces the ids that the task files store.
"""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
import tarfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from envgym.plugin import EnvgymError

CACHE = Path.home() / ".cache" / "envgym"
"""Sdists land in ``CACHE/sdists``, repositories in ``CACHE/repos/<name>-<version>``."""

GIT_DATE = "2024-01-01T00:00:00+0000"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "envgym", "GIT_AUTHOR_EMAIL": "envgym@localhost", "GIT_AUTHOR_DATE": GIT_DATE,
    "GIT_COMMITTER_NAME": "envgym", "GIT_COMMITTER_EMAIL": "envgym@localhost", "GIT_COMMITTER_DATE": GIT_DATE,
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C",
}
GIT_CONFIG = ["-c", "core.hooksPath=/dev/null", "-c", "commit.gpgSign=false", "-c", "tag.gpgSign=false",
              "-c", "core.autocrlf=false", "-c", "core.fileMode=true", "-c", "init.defaultBranch=main",
              "-c", "user.useConfigOnly=false"]


class SourceError(EnvgymError, RuntimeError):
    """An sdist could not be fetched or verified, or a git step failed."""

    blame = "infra"  # authoring: building a suite's repository, never an agent's doing


@dataclass(frozen=True)
class Library:
    """One pinned PyPI release used as a task source."""

    name: str
    """Short name, used in suite ids (``swe-<name>``) and instance ids."""
    dist: str
    """The PyPI distribution name."""
    version: str
    sha256: str
    repo: str
    """``owner/name`` of the upstream project (the SWE-bench ``repo`` field)."""
    package: str
    """Import name of the package under test (a folder or module at the sdist root)."""
    source_globs: tuple[str, ...]
    """Library source files the injector may mutate (relative to the repository root)."""
    test_globs: tuple[str, ...]
    """Test files of the library's own suite."""
    tests_for: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Module stem -> test-file globs to run for a bug in that module; modules absent run every test file."""
    exclude_sources: tuple[str, ...] = ()
    requirements: tuple[str, ...] = ("pytest==8.3.5",)
    """What the test image needs installed (the SWE-bench ``requirements`` list)."""
    sdist_file: str = ""
    """The sdist's file name when it is not ``<dist with _>-<version>.tar.gz`` (older uploads kept the dash)."""
    pythonpath: tuple[str, ...] = ()
    """Folders (relative to the root) that must be importable besides the root itself (``src`` layouts)."""
    deselect: tuple[str, ...] = field(default=(), repr=False)
    """Test node ids never run (``--deselect``): the few slow ones (a prime sieve, a random stress test) that
    alone would overrun a run's time limit. Out of ``repr`` so that adding the field left every other
    library's journal digest as it was; the digest names it when set."""

    @property
    def install(self) -> str:
        """The SWE-bench ``install`` command: nothing for a flat layout; for a ``src`` layout a ``.pth`` file
        naming the folders (no build backend is needed, and the tree under test stays the imported one)."""
        if not self.pythonpath:
            return "true"
        lines = "\\n".join(f"/testbed/{p}" for p in self.pythonpath)
        return (f"python3 -c \"import pathlib, site; pathlib.Path(site.getsitepackages()[0], 'envgym-src.pth')"
                f".write_text('{lines}\\n')\"")

    @property
    def deselect_args(self) -> tuple[str, ...]:
        """The pytest options that leave :attr:`deselect` out."""
        return tuple(f"--deselect={node}" for node in self.deselect)

    @property
    def sdist_name(self) -> str:
        return self.sdist_file or f"{self.dist.replace('-', '_')}-{self.version}.tar.gz"

    @property
    def slug(self) -> str:
        return f"{self.name}-{self.version}"


PYTEST = ("python3", "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=", "-q")
"""The test command: ``addopts`` is emptied because some sdists configure coverage plugins we do not install."""

LIBRARIES: dict[str, Library] = {lib.name: lib for lib in (
    Library("toolz", "toolz", "1.2.0", "9667a038e9d6ecba37995e26cb2f59ec6420b6ad8dd9677de59db9b956b08490",
            "pytoolz/toolz", "toolz",
            source_globs=("toolz/itertoolz.py", "toolz/dicttoolz.py", "toolz/functoolz.py", "toolz/recipes.py",
                          "toolz/sandbox/core.py"),
            test_globs=("toolz/tests/test_*.py", "toolz/sandbox/tests/test_*.py"),
            tests_for={"itertoolz": ("toolz/tests/test_itertoolz.py", "toolz/tests/test_recipes.py"),
                       "dicttoolz": ("toolz/tests/test_dicttoolz.py",),
                       "functoolz": ("toolz/tests/test_functoolz.py", "toolz/tests/test_inspect_args.py",
                                     "toolz/tests/test_serialization.py"),
                       "recipes": ("toolz/tests/test_recipes.py",),
                       "core": ("toolz/sandbox/tests/test_core.py",)}),
    Library("parse", "parse", "1.22.4", "706d458feed5a81b02768d3156e8070baf6cee7d150a3a3c0cd43101a875c3b5",
            "r1chardj0n3s/parse", "parse",
            source_globs=("parse/__init__.py",), test_globs=("tests/test_*.py",)),
    Library("inflection", "inflection", "0.5.1", "1a29730d366e996aaacffb2f1f1cb9593dc38e2ddd30c91250c6dde09ea9b417",
            "jpvanhal/inflection", "inflection",
            source_globs=("inflection/__init__.py",), test_globs=("test_inflection.py",)),
    Library("boltons", "boltons", "26.2.0", "d39cfd15c1a1c3bd4d705c82252fa9edb8e4f5e8cc039f8e39afac7b1b47e92c",
            "mahmoud/boltons", "boltons",
            source_globs=tuple(f"boltons/{m}.py" for m in (
                "strutils", "iterutils", "dictutils", "setutils", "listutils", "mathutils", "cacheutils",
                "queueutils", "formatutils", "tableutils", "timeutils", "urlutils", "statsutils")),
            test_globs=("tests/test_*.py",),
            tests_for={m: (f"tests/test_{m}*.py",) for m in (
                "strutils", "iterutils", "dictutils", "setutils", "listutils", "mathutils", "cacheutils",
                "queueutils", "formatutils", "tableutils", "timeutils", "urlutils", "statsutils")}),
)}

# The scaled-up set (issue 38): pure-Python sdists whose own tests need pytest only. Test files that need a
# package we do not install (hypothesis, freezegun, whatever, ...) are left out of test_globs / tests_for, and
# the modules only they test are left out of source_globs.
def _own_tests(folder: str, stems: tuple[str, ...], pattern: str = "test_{}.py") -> dict[str, tuple[str, ...]]:
    return {stem: (f"{folder}/{pattern.format(stem)}",) for stem in stems}


_FUNCY = ("calc", "debug", "decorators", "flow", "funcmakers", "objects", "strings", "types")
_HUMANIZE = ("number", "filesize", "lists")
_ITSDANGEROUS = ("encoding", "serializer", "signer")
_IDNA_CORE = ("tests/test_idna.py", "tests/test_idna_codec.py", "tests/test_idna_compat.py")

SCALED: tuple[Library, ...] = (
    Library("cachetools", "cachetools", "8.0.3", "79245d0d90464e29355f13658cd769e57d98ed06242d3c6fbd71796ca0938ef9",
            "tkem/cachetools", "cachetools", source_globs=("src/cachetools/*.py",),
            test_globs=("tests/test_*.py",), pythonpath=("src",)),
    Library("colorama", "colorama", "0.4.6", "08695f5cb7ed6e0531a20572697297273c47b8cae5a63ffc6d6ed5c201be6e44",
            "tartley/colorama", "colorama",
            source_globs=("colorama/ansi.py", "colorama/ansitowin32.py", "colorama/initialise.py"),
            test_globs=("colorama/tests/*_test.py",)),
    Library("funcy", "funcy", "2.1", "8979feb3de7120afd1d00e5a8eae810c1942e4bfbc91697151e9ee1e49f79284",
            "Suor/funcy", "funcy", source_globs=tuple(f"funcy/{m}.py" for m in _FUNCY),
            test_globs=tuple(f"tests/test_{m}.py" for m in _FUNCY), tests_for=_own_tests("tests", _FUNCY)),
    Library("humanize", "humanize", "4.17.0", "1d6a36c453dbfbb3f0b34601d2e0b4ce5d48d780305cd45714843f0068fde6ac",
            "python-humanize/humanize", "humanize", source_globs=tuple(f"src/humanize/{m}.py" for m in _HUMANIZE),
            test_globs=tuple(f"tests/test_{m}.py" for m in _HUMANIZE), tests_for=_own_tests("tests", _HUMANIZE),
            pythonpath=("src",)),
    Library("idna", "idna", "3.21", "13c8b14853c5c336eaab526f3390817e9c8fcd8fa175abdd1a7480a5c94f99cb",
            "kjd/idna", "idna", source_globs=("idna/core.py", "idna/codec.py", "idna/intranges.py", "idna/compat.py"),
            test_globs=(*_IDNA_CORE, "tests/test_intranges.py"),
            tests_for={"core": _IDNA_CORE, "codec": ("tests/test_idna_codec.py",),
                       "compat": ("tests/test_idna_compat.py",), "intranges": ("tests/test_intranges.py",)}),
    Library("isodate", "isodate", "0.7.2", "4cd1aa0f43ca76f4a6c6c0292a85f40b35ec2e43e315b59f06e6d32171a953e6",
            "gweis/isodate", "isodate", source_globs=tuple(f"src/isodate/{m}.py" for m in (
                "isodates", "isodatetime", "isoduration", "isostrf", "isotime", "isotzinfo", "duration", "tzinfo")),
            test_globs=("tests/test_*.py",), pythonpath=("src",)),
    Library("itsdangerous", "itsdangerous", "2.2.0",
            "e0050c0b7da1eea53ffaf149c0cfbb5c6e2e2b69c4bef22c81fa6eb73e5f6173", "pallets/itsdangerous",
            "itsdangerous", source_globs=tuple(f"src/itsdangerous/{m}.py" for m in _ITSDANGEROUS),
            test_globs=tuple(f"tests/test_itsdangerous/test_{m}.py" for m in _ITSDANGEROUS),
            tests_for={m: tuple(f"tests/test_itsdangerous/test_{t}.py" for t in _ITSDANGEROUS)
                       for m in _ITSDANGEROUS}, pythonpath=("src",)),
    Library("jsonpointer", "jsonpointer", "3.12", "7a3dcc11b64053eaa9c549e85e413f8d40a075215f793a331bed9182a14251ae",
            "stefankoegl/python-json-pointer", "jsonpointer", source_globs=("jsonpointer.py",),
            test_globs=("tests.py",)),
    Library("markupsafe", "markupsafe", "3.0.4", "2e9ad7dd851bf45fab9f75cbff4cb493fee9979e8d8c7c9c3ee119022518edd6",
            "pallets/markupsafe", "markupsafe", source_globs=("src/markupsafe/__init__.py",),
            test_globs=("tests/test_*.py",), pythonpath=("src",)),
    Library("more-itertools", "more-itertools", "11.2.1",
            "cbf08fd0af284dc69718b9b76a8e6203df624d70209ea511e4219d350c856f63", "more-itertools/more-itertools",
            "more_itertools", source_globs=("more_itertools/more.py", "more_itertools/recipes.py"),
            test_globs=("tests/test_*.py",), tests_for=_own_tests("tests", ("more", "recipes")),
            deselect=(*(f"tests/test_more.py::{t}" for t in (
                "DiscreteFourierTransformTests::test_roundtrip", "TestConcurrentTee::test_concurrent_consumers",
                "TestSerialize::test_concurrent_calls", "TestRandomOrderedRange::test_lcg_mitigation")),
                      *(f"tests/test_recipes.py::{t}" for t in (
                "PrimeFunctionTests::test_primes", "PrimeFunctionTests::test_nth_prime_approximate",
                "PrimeFunctionTests::test_nth_prime_tightened_bound", "PolynomialFromRootsTests::test_large",
                "RunningMedianTests::test_vs_statistics_median")))),
    Library("pathspec", "pathspec", "1.1.1", "17db5ecd524104a120e173814c90367a96a98d07c45b2e10c2f3919fff91bf5a",
            "cpburnz/python-pathspec", "pathspec",
            source_globs=("pathspec/pathspec.py", "pathspec/pattern.py", "pathspec/util.py", "pathspec/gitignore.py",
                          "pathspec/patterns/gitignore/*.py", "pathspec/_backends/simple/*.py"),
            test_globs=("tests/test_*.py",)),
    Library("pyparsing", "pyparsing", "3.3.3", "928ae7e20211f3b6f3915a72f06a0cfd29ab9d24279dd6346b6b1a7146397d36",
            "pyparsing/pyparsing", "pyparsing",
            source_globs=tuple(f"pyparsing/{m}.py" for m in (
                "core", "helpers", "results", "exceptions", "actions", "common", "util")),
            # tests/test_unit.py (11,700 lines, every test again with and without packrat) is left out: its
            # clean run alone overran a 40 s baseline limit by far on a loaded 2-core host.
            test_globs=("tests/test_simple_unit.py", "tests/test_util.py", "tests/test_testing.py",
                        "tests/test_pre_pep8_deprecation_warnings.py"),
            deselect=("tests/test_util.py::test_make_compressed_re_random",)),
    Library("semver", "semver", "3.2.0", "adf2c822d2d8908a1dce0121da7da6511851fbd33080e61da8d2ba1e0677e8f3",
            "python-semver/python-semver", "semver",
            source_globs=("src/semver/version.py", "src/semver/_deprecated.py"),
            test_globs=("tests/test_*.py",), pythonpath=("src",)),
    Library("six", "six", "1.17.0", "ff70335d468e7eb6ec65b95b99d3a2836546063f63acc5171de367e834932a81",
            "benjaminp/six", "six", source_globs=("six.py",), test_globs=("test_six.py",)),
    Library("tabulate", "tabulate", "0.10.0", "e2cfde8f79420f6deeffdeda9aaec3b6bc5abce947655d17ac662b126e48a60d",
            "astanin/python-tabulate", "tabulate", source_globs=("tabulate/__init__.py",),
            test_globs=("test/test_*.py",)),
    Library("text-unidecode", "text-unidecode", "1.3",
            "bad6603bb14d279193107714b288be206cac565dfa49aa5b105294dd5c4aab93", "kmike/text-unidecode",
            "text_unidecode", source_globs=("src/text_unidecode/__init__.py",), test_globs=("test_unidecode.py",),
            sdist_file="text-unidecode-1.3.tar.gz", pythonpath=("src",)),
    Library("toml", "toml", "0.10.2", "b3bda1d108d5dd99f4a20d24d9c348e91c4db7ab1b749200bded2f839ccbe68f",
            "uiri/toml", "toml", source_globs=("toml/decoder.py", "toml/encoder.py", "toml/tz.py"),
            test_globs=("tests/test_api.py", "tests/decoding_test.py")),
    # Added to reach issue 38's 2,000 instances (the first eighteen had run out of candidates at --per-function 3).
    Library("decorator", "decorator", "5.3.2", "d9883f1b8259e3bfc42565d0bc6fdc760012008552aa449f75efd2d48319b82b",
            "micheles/decorator", "decorator", source_globs=("src/decorator/__init__.py",),
            test_globs=("tests/test.py",), pythonpath=("src",)),
    # tests/test_general.py and test_examples.py run a C preprocessor; they are left out.
    Library("pycparser", "pycparser", "3.12", "f03387877eab82ce01bbdfd0ba7252ee55a90b1c708d5129e2ce915475cf1db6",
            "eliben/pycparser", "pycparser", source_globs=tuple(f"pycparser/{m}.py" for m in (
                "c_parser", "c_lexer", "c_generator", "c_ast", "ast_transforms")),
            test_globs=tuple(f"tests/test_{m}.py" for m in (
                "c_parser", "c_lexer", "c_generator", "c_ast", "c23_attributes"))),
    Library("sqlparse", "sqlparse", "0.6.1", "ca722573f848ff2d30e40ea30f53a104b7dea7635ea9285891263eb2c58fb6e7",
            "andialbrecht/sqlparse", "sqlparse",
            source_globs=("sqlparse/[!_]*.py", "sqlparse/engine/[!_]*.py", "sqlparse/filters/[!_]*.py"),
            # tests/test_dos_prevention.py times itself (its clean run overran the limit on a loaded host) and
            # test_cli.py starts subprocesses; both are left out.
            test_globs=tuple(f"tests/test_{m}.py" for m in (
                "format", "grouping", "keywords", "parse", "regressions", "split", "tokenize", "utils"))),
    Library("xmltodict", "xmltodict", "1.0.4", "6d94c9f834dd9e44514162799d344d815a3a4faec913717a9ecbfa5be1bb8e61",
            "martinblech/xmltodict", "xmltodict", source_globs=("xmltodict.py",), test_globs=("tests/test_*.py",)),
)
SCALED_LIBRARIES: dict[str, Library] = {lib.name: lib for lib in SCALED}
"""The scaled-up set: shipped as SWE-bench instances under ``tasks/swe-injected/<name>/`` (no registered suite
each: ``python -m envgym_swe.inject import --lib NAME`` makes one locally)."""


def library(name: str) -> Library:
    """A pinned library by name: a bundled suite's (:data:`LIBRARIES`) or the scaled set's."""
    try:
        return LIBRARIES.get(name) or SCALED_LIBRARIES[name]
    except KeyError:
        known = ", ".join(sorted({*LIBRARIES, *SCALED_LIBRARIES}))
        raise SourceError(f"unknown library {name!r} (known: {known})") from None


# -- sdists ----------------------------------------------------------------------------------------------------
def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_sdist(lib: Library, cache: Path = CACHE) -> Path:
    """The verified sdist of ``lib`` in ``cache/sdists`` (downloaded with pip when missing)."""
    folder = cache / "sdists"
    path = folder / lib.sdist_name
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
                               ":all:", "-d", str(folder), f"{lib.dist}=={lib.version}"],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0 or not path.is_file():
            raise SourceError(f"pip download {lib.dist}=={lib.version} failed: {proc.stderr.strip()[-800:]}")
    actual = sha256_file(path)
    if actual != lib.sha256:
        raise SourceError(f"{path} has sha256 {actual}, pinned {lib.sha256}: delete it and fetch again")
    return path


def unpack(sdist: Path, dest: Path) -> None:
    """Extract the regular files of ``sdist`` (its top folder stripped) into ``dest``; modes are 644/755."""
    with tarfile.open(sdist, "r:gz") as tar:
        for member in tar.getmembers():
            parts = Path(member.name).parts[1:]
            if not member.isfile() or not parts or ".." in parts or Path(member.name).is_absolute():
                continue
            if any(p.endswith(".egg-info") for p in parts):
                continue  # build metadata, not source
            target = dest.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            data = tar.extractfile(member)
            assert data is not None
            target.write_bytes(data.read())
            target.chmod(0o755 if member.mode & 0o100 else 0o644)


# -- git -------------------------------------------------------------------------------------------------------
def git(repo: Path, *args: str, stdin: str | None = None) -> str:
    """Run git in ``repo`` with the fixed identity and config; returns stdout."""
    proc = subprocess.run(["git", *GIT_CONFIG, *args], cwd=repo, env={**os.environ, **GIT_ENV}, input=stdin,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SourceError(f"git {' '.join(args)} in {repo} failed: {proc.stderr.strip()[-800:]}")
    return proc.stdout


def repo_path(lib: Library, cache: Path = CACHE) -> Path:
    return cache / "repos" / lib.slug


def build_repo(lib: Library, dest: Path | None = None, *, cache: Path = CACHE) -> tuple[Path, str]:
    """A fresh repository of ``lib``'s sdist at ``dest`` (replaced if present); returns (path, clean commit)."""
    import shutil

    dest = dest or repo_path(lib, cache)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    unpack(fetch_sdist(lib, cache), dest)
    git(dest, "init", "-q")
    # --force: the sdist is the source, whatever its own .gitignore says (humanize ships its generated
    # _version.py and isodate its version.py, both ignored upstream: without them the package does not import
    # from a checkout of the commit, while the build's containers, filled from the unpacked folder, had them)
    git(dest, "add", "-A", "--force")
    git(dest, "commit", "-q", "--no-verify", "-m", f"{lib.dist} {lib.version} from its sdist")
    git(dest, "tag", "clean")
    return dest, head(dest)


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def clean_commit(repo: Path) -> str:
    return git(repo, "rev-parse", "clean^{commit}").strip()


def add_task_commit(repo: Path, instance_id: str, files: Mapping[str, str], removed: Sequence[str]) -> str:
    """Commit ``files`` (path -> new text) and the removal of ``removed`` on top of the clean commit.

    The commit is tagged ``task/<instance_id>`` and the working tree is left at the clean commit.
    """
    git(repo, "checkout", "-q", "--detach", "clean")
    try:
        for rel, text in files.items():
            (repo / rel).write_bytes(text.encode())
        if removed:
            git(repo, "rm", "-q", "--", *removed)
        git(repo, "add", "--", *files)
        git(repo, "commit", "-q", "--no-verify", "-m", f"{instance_id}")
        commit = head(repo)
        git(repo, "tag", "-f", f"task/{instance_id}", commit)
    finally:
        git(repo, "checkout", "-q", "-f", "--detach", "clean")
    return commit


def diff(repo: Path, a: str, b: str, paths: Sequence[str] = ()) -> str:
    """``git diff a b`` (text, no renames, fixed context) limited to ``paths``."""
    return git(repo, "diff", "--no-color", "--no-renames", "--no-ext-diff", a, b, "--", *paths)


def file_at(repo: Path, commit: str, path: str) -> str:
    return git(repo, "show", f"{commit}:{path}")


def rebuild_repo(lib: Library, instances: Sequence[Mapping[str, object]], dest: Path | None = None, *,
                 cache: Path = CACHE) -> dict[str, str]:
    """Rebuild ``lib``'s repository from the sdist and re-create each instance's commit from its patches.

    The bug is the gold patch applied in reverse; the hidden test files are those ``test_patch`` adds back.
    Returns instance_id -> the commit id made now (equal to ``base_commit`` when the build is deterministic).
    """
    repo, _ = build_repo(lib, dest, cache=cache)
    made = {}
    for inst in instances:
        iid, patch, test_patch = str(inst["instance_id"]), str(inst["patch"]), str(inst["test_patch"])
        git(repo, "checkout", "-q", "--detach", "clean")
        git(repo, "apply", "--reverse", "--whitespace=nowarn", "-", stdin=patch)
        touched = patch_paths(patch)
        files = {p: (repo / p).read_bytes().decode() for p in touched}
        git(repo, "checkout", "-q", "-f", "--detach", "clean")
        made[iid] = add_task_commit(repo, iid, files, patch_paths(test_patch))
    return made


def patch_paths(patch: str) -> list[str]:
    """The files a unified git diff touches (``b/`` side, or ``a/`` for deletions)."""
    paths = []
    for line in io.StringIO(patch):
        if line.startswith("diff --git "):
            a, _, b = line[len("diff --git "):].rstrip("\n").partition(" b/")
            path = b or a.removeprefix("a/")
            if path not in paths:
                paths.append(path)
    return paths


def build_fix_history(lib: Library, instances: Sequence[Mapping[str, object]], dest: Path, *,
                      cache: Path = CACHE) -> Path:
    """A repository whose history fixes each instance's bug, the input ``envgym swe mine`` needs.

    Linear from the clean commit: per instance, a commit that brings the bug in (the gold patch reversed, the
    hidden test files removed), then one that fixes it (the gold patch and the test patch, back to the clean
    tree) with the instance's problem statement as its message. Mining it must find one candidate per instance.
    """
    repo, _ = build_repo(lib, dest, cache=cache)
    for inst in instances:
        iid, patch, test_patch = str(inst["instance_id"]), str(inst["patch"]), str(inst["test_patch"])
        git(repo, "apply", "--reverse", "--whitespace=nowarn", "-", stdin=patch)
        removed = patch_paths(test_patch)
        git(repo, "rm", "-q", "--", *removed)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--no-verify", "-m", f"Change {iid.rsplit('-', 1)[-1]} (brings a bug in)")
        git(repo, "apply", "--whitespace=nowarn", "-", stdin=patch)
        git(repo, "apply", "--whitespace=nowarn", "-", stdin=test_patch)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--no-verify", "--cleanup=verbatim", "-m", str(inst["problem_statement"]))
    return repo
