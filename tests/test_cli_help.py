"""The command line's own help: ``--version``, a help text and shown default on every argument, ``--split``
as choices, examples in the top-level help; plug-in subcommands get the same formatter."""

from __future__ import annotations

import argparse

import pytest

from envgym import __version__, cli


def _parsers(parser: argparse.ArgumentParser, path: str = "envgym"):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _parsers(child, f"{path} {name}")


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"envgym {__version__}"


def test_every_argument_has_help_and_every_parser_shows_defaults():
    parsers = dict(_parsers(cli.build_parser()))
    expected = {"envgym eval", "envgym check", "envgym leaderboard build", "envgym sandbox build", "envgym train"}
    assert expected <= set(parsers)
    missing = [f"{path} {action.option_strings or action.dest}" for path, parser in parsers.items()
               for action in parser._actions
               if not isinstance(action, argparse._SubParsersAction) and not action.help]
    assert missing == []
    assert all(issubclass(p.formatter_class, argparse.ArgumentDefaultsHelpFormatter) for p in parsers.values())


def test_eval_help_shows_defaults_and_split_choices():
    text = " ".join(cli.build_parser()._subparsers._group_actions[0].choices["eval"].format_help().split())
    assert "--split {train,test,dev,all}" in text and "(default: test)" in text
    assert "episodes in flight at once (>= 1) (default: 8)" in text
    assert "(default: 0.5)" in text and "(default: None)" not in text


def test_split_outside_the_choices_is_refused(capsys):
    with pytest.raises(SystemExit) as refused:
        cli.main(["eval", "--suite", "tool-retail", "--agent", "oracle", "--split", "holdout", "--out", "x"])
    assert refused.value.code == 2 and "invalid choice: 'holdout'" in capsys.readouterr().err


def test_top_level_help_has_examples_and_exit_codes():
    text = cli.build_parser().format_help()
    assert "examples:\n  envgym list" in text  # the epilog keeps its lines
    assert "envgym eval --suite tool-retail --agent oracle --out runs/oracle" in text
    assert "3 too many infra errors" in text


def test_the_constants_written_out_for_a_fast_start_match_their_sources():
    from envgym.agents import OpenAIConfig
    from envgym.task import SPLITS

    assert cli.SPLITS == SPLITS
    assert OpenAIConfig.model_fields["base_url"].default == cli.DEFAULT_BASE_URL
    from envgym.sandbox import cli as sandbox_cli
    from envgym.sandbox.images import SANDBOXES

    assert sandbox_cli.SANDBOXES == SANDBOXES


def test_help_loads_no_heavy_module():
    # every plug-in's add_parser runs for --help: none may pull pydantic, rich, httpx or a verifier kind
    import subprocess
    import sys

    heavy = ("pydantic", "rich", "httpx", "numpy", "gymnasium", "torch", "asyncio", "envgym.task", "envgym.verify",
             "envgym.registry", "envgym.rl.proxy", "envgym.sandbox.base", "envgym.sandbox.images")
    code = ("import contextlib, io, sys\nfrom envgym.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n    main(['--help'])\n"
            f"print(sorted(m for m in {heavy!r} if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
