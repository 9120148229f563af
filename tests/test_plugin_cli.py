"""CLI subcommands and record exporters are plug-ins; the kernel holds no family code.

Fake plug-ins are real distributions: a ``NAME.dist-info`` (METADATA + entry_points.txt) and a module in a
temporary folder put on ``sys.path``, found by ``importlib.metadata`` exactly as an installed package is.
"""

from __future__ import annotations

import ast
import json
import os
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from envgym.agents import OracleConfig
from envgym.cli import build_parser, main
from envgym.errors import PluginError
from envgym.eval import EvalConfig, evaluate
from envgym.record import read_records

from fakes import NOTES_SUITE

ROOT = Path(__file__).resolve().parents[1]
FAMILIES = ("envgym_swe", "envgym_tool", "envgym_web", "envgym_timed")


@pytest.fixture
def install(tmp_path, monkeypatch):
    """``install(name, source, {group: {entry: value}})``: a distribution ``name`` with module ``name``."""
    installed: list[str] = []

    def _install(name: str, source: str, groups: dict[str, dict[str, str]]) -> None:
        root = tmp_path / f"site-{name}"
        info = root / f"{name}-0.1.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text("".join(
            f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in entries.items()) for group, entries in groups.items()))
        (root / f"{name}.py").write_text(textwrap.dedent(source))
        monkeypatch.syspath_prepend(str(root))
        installed.append(name)

    yield _install
    for name in installed:
        sys.modules.pop(name, None)


HELLO = """
    from envgym.errors import SpecError

    def add_parser(subparsers):
        p = subparsers.add_parser("hello", help="say hello (a plug-in)")
        p.add_argument("--name", required=True)
        p.add_argument("--fail", action="store_true")
        p.set_defaults(fn=run)
        return p

    def run(args):
        if args.fail:
            raise SpecError("no greeting today", field="name")
        print(f"hello {args.name}")
        return 3
"""


def _help(capsys) -> tuple[str, str]:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    return capsys.readouterr()


def test_plugin_subcommand_runs_and_its_errors_are_one_line(install, capsys, screen):
    install("envgym_hello_plugin", HELLO, {"envgym.cli": {"hello": "envgym_hello_plugin:add_parser"}})
    assert "say hello (a plug-in)" in _help(capsys).out
    assert main(["hello", "--name", "world"]) == 3
    assert capsys.readouterr().out == "hello world\n"
    assert main(["hello", "--name", "world", "--fail"]) == 2
    assert screen()[1] == "error: no greeting today (field 'name')\n"


def test_first_party_subcommands_come_through_the_entry_point_group():
    hooks = {ep.name: ep.value for ep in entry_points(group="envgym.cli")}
    assert hooks["swe"] == "envgym_swe.cli:add_parser"
    assert hooks["sandbox"] == "envgym.sandbox.cli:add_parser"
    assert hooks["train"].endswith(".train.cli:add_parser")
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert {"list", "check", "tasks", "eval", "leaderboard", "sandbox", "train", "swe"} <= set(sub.choices)
    swe = sub.choices["swe"]._actions[-1].choices
    assert set(swe) == {"import", "build", "grade", "mine", "label", "forget"}


BROKEN_HALFWAY = """
    def add_parser(subparsers):
        p = subparsers.add_parser("half", help="added, then the hook broke")
        raise RuntimeError("hook exploded")
"""


def test_broken_cli_plugins_cost_only_their_own_subcommand(install, capsys, screen):
    install("envgym_broken_plugin", BROKEN_HALFWAY, {"envgym.cli": {
        "gone": "envgym_no_such_module_anywhere:add_parser", "half": "envgym_broken_plugin:add_parser"}})
    help_text = _help(capsys).out
    assert "list" in help_text and "swe" in help_text and "half" not in help_text
    warnings = screen()[1].splitlines()
    assert len(warnings) == 2 and all(line.startswith("warning: CLI plug-in ") for line in warnings)
    assert "gone = envgym_no_such_module_anywhere:add_parser" in warnings[0] and "ModuleNotFoundError" in warnings[0]
    assert "half = envgym_broken_plugin:add_parser" in warnings[1] and "hook exploded" in warnings[1]
    assert main(["tasks", "validate", str(NOTES_SUITE)]) == 0
    assert "3 tasks valid" in screen()[0]
    with pytest.raises(SystemExit) as exc:  # the half-added subcommand is gone, not a handler-less stub
        main(["half"])
    assert exc.value.code == 2


CLASHING = """
    def add_list(subparsers):
        subparsers.add_parser("list").set_defaults(fn=lambda args: 0)

    def add_dup(subparsers):
        subparsers.add_parser("dup").set_defaults(fn=lambda args: 0)

    def no_fn(subparsers):
        subparsers.add_parser("nofn")
"""


def test_a_subcommand_clash_names_both_entry_points(install, screen):
    install("envgym_clash_plugin", CLASHING, {"envgym.cli": {"mylist": "envgym_clash_plugin:add_list"}})
    with pytest.raises(PluginError, match=r"'list' is added by list = envgym\.cli_check:add_list and by mylist = "
                                          r"envgym_clash_plugin:add_list"):
        build_parser()
    assert main(["check", "--all"]) == 2  # one line, exit 2, whatever the subcommand
    assert screen()[1].count("\n") == 1 and "clash" in screen()[1]


def test_two_plugins_adding_one_name_are_both_named(install):
    install("envgym_clash_plugin", CLASHING, {"envgym.cli": {"dup-a": "envgym_clash_plugin:add_dup",
                                                             "dup-b": "envgym_clash_plugin:add_dup"}})
    with pytest.raises(PluginError, match=r"'dup' is added by dup-a = envgym_clash_plugin:add_dup and by "
                                          r"dup-b = envgym_clash_plugin:add_dup"):
        build_parser()


def test_a_subcommand_without_a_handler_is_one_clear_line(install, screen):
    install("envgym_clash_plugin", CLASHING, {"envgym.cli": {"nofn": "envgym_clash_plugin:no_fn"}})
    assert main(["nofn"]) == 2
    assert "'nofn' has no handler" in screen()[1] and "set_defaults(fn=...)" in screen()[1]


OUTCOMES = """
    import json

    class OutcomesExporter:
        def __init__(self, ctx):
            self.path = ctx.run_dir / "outcomes.jsonl"
            self.ctx = ctx
            self.file = None

        def _write(self, row):
            self.file = self.file or open(self.path, "a")
            self.file.write(json.dumps(row) + "\\n")
            self.file.flush()

        def repair(self, records):
            have = set()
            if self.path.exists():
                have = {(r["task_hash"], r["run_index"]) for r in map(json.loads, self.path.read_text().splitlines())}
            for record in records:
                if (record.task_hash, record.run_index) not in have:
                    self._write({"task_hash": record.task_hash, "run_index": record.run_index,
                                 "outcome": record.outcome.value, "steps": None, "repaired": True})

        def export(self, record, trajectory):
            self._write({"task_hash": record.task_hash, "run_index": record.run_index,
                         "outcome": record.outcome.value, "steps": len(trajectory.steps),
                         "instance": self.ctx.tasks[record.task_hash].id, "agent": self.ctx.agent_id})

        def close(self):
            if self.file:
                self.file.close()

    def not_for_this_run(ctx):
        return None

    def broken(ctx):
        raise OSError("disk on fire")
"""


def _config(**changes):
    return EvalConfig(suites=(str(NOTES_SUITE),), split=None, agent=OracleConfig(), **changes)


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_an_exporter_writes_its_file_and_repairs_it_on_resume(install, tmp_path):
    install("envgym_outcomes_plugin", OUTCOMES, {"envgym.exporters": {
        "outcomes": "envgym_outcomes_plugin:OutcomesExporter", "quiet": "envgym_outcomes_plugin:not_for_this_run"}})
    run = tmp_path / "run"
    await evaluate(_config(runs=2), run, concurrency=2)
    records, _ = read_records(run / "records.jsonl")
    rows = _rows(run / "outcomes.jsonl")
    assert sorted((r["task_hash"], r["run_index"]) for r in rows) == sorted(r.key for r in records)
    assert all(r["outcome"] == "success" and r["steps"] >= 1 and r["agent"] == "oracle" for r in rows)
    assert {r["instance"] for r in rows} == {r.task_id for r in records}
    # a crash after a record's fsync, before its export: the resume repairs exactly that one
    lost = rows.pop()
    (run / "outcomes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = await evaluate(_config(runs=2), run)
    assert summary.ran == 0
    repaired = _rows(run / "outcomes.jsonl")
    assert len(repaired) == 6 and repaired[-1]["repaired"] and repaired[-1]["run_index"] == lost["run_index"]
    await evaluate(_config(runs=2), run)  # a clean resume adds nothing
    assert len(_rows(run / "outcomes.jsonl")) == 6


async def test_a_broken_exporter_stops_the_run_before_any_episode(install, tmp_path):
    install("envgym_outcomes_plugin", OUTCOMES, {"envgym.exporters": {"fire": "envgym_outcomes_plugin:broken"}})
    with pytest.raises(PluginError, match=r"exporter plug-in 'fire' .*disk on fire"):
        await evaluate(_config(), tmp_path / "run")
    assert not (tmp_path / "run" / "records.jsonl").exists()


def test_swe_predictions_exporter_is_installed():
    hooks = {ep.name: ep.value for ep in entry_points(group="envgym.exporters")}
    assert hooks["swe"] == "envgym_swe.predictions:PredictionsExporter"
    assert "SWE-bench" not in (ROOT / "envgym" / "eval.py").read_text()


def _family_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
        found += [f"{path.relative_to(ROOT)}:{node.lineno} imports {n}" for n in names
                  if n.split(".")[0] in FAMILIES]
    return found


def test_the_kernel_imports_no_family():
    found = [hit for path in sorted((ROOT / "envgym").rglob("*.py")) for hit in _family_imports(path)]
    assert not found, "the kernel must reach families only through entry points:\n" + "\n".join(found)


def test_exporters_installed_after_a_lookup_are_found(install, tmp_path, monkeypatch):
    from envgym.export import _installed

    site = tmp_path / "site-later"
    site.mkdir()
    os.utime(site, ns=(0, 0))  # an mtime a later change of the folder cannot share
    monkeypatch.syspath_prepend(str(site))
    before = {ep.name for ep in _installed()}
    assert "later" not in before and _installed() is _installed()  # unchanged: not looked up again
    info = site / "envgym_later-0.1.dist-info"  # installed into a folder already on sys.path
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: envgym_later\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[envgym.exporters]\nlater = envgym_later:Exporter\n")
    assert "later" in {ep.name for ep in _installed()}
    install("envgym_outcomes_plugin", OUTCOMES, {"envgym.exporters": {"outcomes": "envgym_outcomes_plugin:Outcomes"}})
    assert {"later", "outcomes"} <= {ep.name for ep in _installed()}  # a new folder on sys.path


def test_every_plugin_group_comes_from_one_scan_of_the_installed_distributions(install, monkeypatch):
    """``envgym eval`` looked its subcommands, environment families and exporters up in three scans (~10 ms each,
    on the way to its first episode) and each worker process in one more."""
    import importlib.metadata

    import envgym._entry_points as eps

    hook = {"scanned": "envgym_scan_plugin:hook"}
    install("envgym_scan_plugin", "def hook(*a):\n    pass\n", {"envgym.exporters": hook, "envgym.cli": hook})
    scans = []
    real = importlib.metadata.entry_points
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **kw: scans.append(kw) or real(**kw))
    groups = ("envgym.cli", "envgym.environments", "envgym.exporters")
    found = {group: {ep.name for ep in eps.installed(group)} for group in groups}
    assert len(scans) == 1 and {"scanned"} <= found["envgym.cli"] and {"scanned"} <= found["envgym.exporters"]
    assert {"tool", "web"} <= found["envgym.environments"]
    assert {g: {ep.name for ep in eps.installed(g)} for g in groups} == found and len(scans) == 1


def test_the_kernel_s_own_subcommands_come_in_as_entry_points_too():
    from envgym._entry_points import installed

    names = {ep.name: ep.value for ep in installed("envgym.cli")}
    assert {"list", "check", "tasks", "eval", "leaderboard", "sandbox", "train", "mcp"} <= set(names)
    assert names["eval"] == "envgym.cli:add_eval"
