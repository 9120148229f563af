"""Test extras that name the project's own extras (attrs' setup.py era: ``tests = ["attrs[tests-no-zope]",
"zope.interface"]``): their requirements are the tests', not the project's released version."""

from __future__ import annotations

from envgym_swe.environment import split_requires_dist

# Requires-Dist as setuptools wrote it for attrs at 67dc8cc2 (2022-12; trimmed): setuptools keeps the self-references
ATTRS_2022 = (
    'furo; extra == "docs"',
    'zope.interface; extra == "docs"',
    'cloudpickle; platform_python_implementation == "CPython" and extra == "tests-no-zope"',
    'hypothesis; extra == "tests-no-zope"',
    'pympler; extra == "tests-no-zope"',
    'pytest>=4.3.0; extra == "tests-no-zope"',
    'pytest-mypy-plugins; (platform_python_implementation == "CPython" and python_version < "3.11") and '
    'extra == "tests-no-zope"',
    'attrs[tests-no-zope]; extra == "tests"',
    'zope.interface; extra == "tests"',
    'attrs[tests]; extra == "cov"',
    'coverage[toml]>=5.3; extra == "cov"',
    'attrs[docs,tests]; extra == "dev"',
    'hypothesis; extra == "tests-no-zope"',  # setuptools lists an extra's lines twice when two keys share them
)


def test_a_test_extra_naming_the_projects_own_extras_brings_their_requirements():
    runtime, tests = split_requires_dist(ATTRS_2022, "attrs")
    assert runtime == []
    # tests -> tests-no-zope (+ zope.interface); dev -> docs and tests; cov is no test extra; py<3.11 plugins left out
    assert tests == ["zope.interface", "cloudpickle", "hypothesis", "pympler", "pytest>=4.3.0", "furo"]


def test_without_the_projects_name_a_self_reference_stays_as_written():
    _, tests = split_requires_dist(ATTRS_2022)
    assert "attrs[tests-no-zope]" in tests and "hypothesis" not in tests
