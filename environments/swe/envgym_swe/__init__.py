"""The SWE family: repositories in containers, graded by hidden tests (SWE-bench format in and out).

Every suite folder ``tasks/swe-<name>/`` registers ``swe/<name>-v1`` (and suites written by ``envgym swe
import`` or ``envgym swe mine``, in the user data directory by default, register the same way from
``~/.cache/envgym/swe/suites.json`` until ``envgym swe forget``). See ``README.md`` beside this file: the env
(:mod:`envgym_swe.env`), images (:mod:`envgym_swe.images`), import (:mod:`envgym_swe.importer`), mining and
labelling a repository's history (:mod:`envgym_swe.mine`, :mod:`envgym_swe.environment`,
:mod:`envgym_swe.label`), grading of predictions (:mod:`envgym_swe.grade`) and the CLI.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["register_all"]


def register_all() -> None:
    # Imported here: the hook may run while ``import envgym`` itself is still in progress.
    from envgym.plugin import register, register_suite, suites_root
    from envgym_swe.importer import env_id_for, imported_suites, suite_source

    # The bundled swe-* folders are named suites already (envgym_tasks registers its folders); imported ones
    # are named here, from where ``envgym swe import`` wrote them.
    names = [p.name for p in sorted(suites_root().glob("swe-*")) if p.is_dir() and any(p.glob("*.jsonl"))]
    for name in names:  # one imported into tasks/ (``--out tasks/NAME``) is the user's all the same
        if suite_source(suites_root() / name) is not None:
            register_suite(name, suites_root() / name, description="imported with envgym swe import",
                           override=True, user=True)
    for name, folder in imported_suites().items():
        if name not in names and Path(folder).is_dir():
            register_suite(name, folder, description="imported with envgym swe import", override=True,
                           user=True)
            names.append(name)
    for name in sorted(names):
        register(env_id_for(name), "envgym_swe.env:SweEnv", suites=(name,), max_episode_steps=50, override=True,
                 description=f"Repository tasks of suite {name}: a container at the base commit, hidden tests.")
