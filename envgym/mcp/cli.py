"""``envgym mcp serve ENV_ID``: one episode's tools as an MCP server (registered through ``envgym.cli``).

    envgym mcp serve tool/retail-v1 --task retail-003 --transport http      # prints {"url": ..., "finish": ...}
    envgym mcp serve tool/retail-v1 --transport stdio --verdict verdict.json
    envgym mcp build mcp-sqlite my-suite.jsonl      # build the sandbox images the suites' MCP servers need

Over HTTP the first stdout line is JSON with the per-episode MCP URL, the grading URL (``POST`` it, or press
Ctrl-C, to end the episode) and the task id; the verdict is the last line. Over stdio, stdout is the
protocol (a pipe or a file), so the verdict goes to ``--verdict FILE`` (and a summary to stderr) when the
client closes stdin. However a session ends (the client's end of input or ``/finish``, SIGINT or SIGTERM, the
session breaking), the episode is graded and the verdict written; grading that itself fails writes a zero
verdict whose evidence names the blame, and the command exits 1. See :mod:`envgym.mcp.serve`.

``envgym mcp build`` prepares every ``mcp/*`` task of the named suites (or files) ahead of a run, through the
env's own :meth:`~envgym.env.Env.prepare` (the kernel imports no family): for a server installed from a
package, that builds its image once (cached by content hash; later runs find it). Each distinct server is then
started once (an episode reset on its first task), so the tools its block names (``read_tools``) are checked
against the ones it lists. A task whose server block is wrong stops it with the file, the line and the field
(exit 2).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path
from typing import Any


def add_parser(subparsers: Any) -> None:
    """The ``envgym.cli`` entry-point hook."""
    mcp = subparsers.add_parser("mcp", help="serve an episode's tools over the Model Context Protocol")
    actions = mcp.add_subparsers(dest="mcp_command", required=True)
    p = actions.add_parser("serve", help="serve one episode of ENV_ID as an MCP server (stdio or HTTP on 127.0.0.1)")
    p.add_argument("env_id", metavar="ENV_ID", help="the environment id (family/name-vN) whose episode is served")
    p.add_argument("--task", help="task id in the env's suites or in --tasks (default: drawn with --seed)")
    p.add_argument("--tasks", type=Path, metavar="FILE", help="a JSONL task file to take the task from (default: "
                   "the env's suites)")
    p.add_argument("--seed", type=int, default=0, help="seed of the draw when no --task is named")
    p.add_argument("--transport", choices=("http", "stdio"), default="http",
                   help="http: Streamable HTTP on 127.0.0.1 at a per-episode token URL; stdio: JSON-RPC on stdio")
    p.add_argument("--port", type=int, default=0, help="HTTP port on 127.0.0.1 (default: a free one)")
    p.add_argument("--verdict", type=Path, help="write the episode's verdict (JSON) to this file when it ends")
    p.set_defaults(fn=_cmd_serve)
    b = actions.add_parser("build", help="build the sandbox images of the MCP servers the tasks of suites name")
    b.add_argument("suites", nargs="+", metavar="SUITE", help="a named suite, a folder or a JSONL task file")
    b.set_defaults(fn=_cmd_build)


def _cmd_build(args: argparse.Namespace) -> int:
    import asyncio

    return asyncio.run(_build(args.suites))


async def _build(suites: list[str]) -> int:
    from envgym.compose import make
    from envgym.errors import SpecError
    from envgym.registry import parse_id
    from envgym.task import _read_numbered, suite_files

    prepared, started = 0, set()
    for suite in suites:
        for path in suite_files(suite):
            for line, task in _read_numbered(path):
                if parse_id(task.env_id)[0] != "mcp":
                    continue
                server = json.dumps([task.env_id, task.metadata.get("server")], sort_keys=True)
                async with make(task.env_id) as env:
                    try:
                        await env.prepare(task)
                        if server not in started:
                            await env.reset(task=task)
                            started.add(server)
                    except SpecError as exc:  # the server block: name the file and the line it is on
                        message = str(exc).removesuffix(f" (field {exc.field!r})" if exc.field else "")
                        raise SpecError(message, path=str(path), line=line, field=exc.field) from None
                prepared += 1
    print(f"envgym mcp build: {prepared} task(s) prepared, {len(started)} server(s) started and their tools "
          "checked", file=sys.stderr)
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    import asyncio  # here, not at the top: `envgym --help` imports this module for its subcommand

    return asyncio.run(_serve(args))


async def _serve(args: argparse.Namespace) -> int:
    import asyncio

    try:
        from envgym.mcp.serve import EpisodeServer
    except ImportError as exc:  # the extra is missing (or an older SDK without mcp_types)
        from envgym.errors import EnvgymError

        raise EnvgymError("envgym mcp serve needs the mcp extra (mcp>=2.3): "
                          f"pip install 'envgym[mcp]' ({exc})") from None

    task: Any = args.task
    if args.tasks is not None:
        import random

        from envgym.errors import SpecError
        from envgym.task import load_tasks

        tasks = [t for t in load_tasks(args.tasks) if t.env_id == args.env_id]
        chosen = [t for t in tasks if args.task in (None, t.id)]
        if not chosen:
            raise SpecError(f"no task {args.task or ''} for {args.env_id} in the file".replace("  ", " "),
                            path=str(args.tasks))
        task = chosen[0] if args.task else random.Random(args.seed).choice(chosen)
    async with EpisodeServer(args.env_id, task=task, seed=args.seed) as episode:
        task_id = episode.info.get("task_id")
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        broken: BaseException | None = None
        try:
            if args.transport == "stdio":
                broken = await _until(episode.serve_stdio(), stop)
            else:
                async with episode.http(args.port) as url:
                    print(json.dumps({"url": url, "finish": url.removesuffix("/mcp") + "/finish",
                                      "task_id": task_id, "env_id": args.env_id}), flush=True)
                    broken = await _until(episode.finished.wait(), stop)
        finally:  # however the session ended (end of input, a signal, a failure), the episode is graded
            try:
                verdict = await episode.finish()
            except Exception as exc:  # grading itself broke: the zero verdict names whose failure it was
                from envgym.mcp.serve import failed_verdict

                verdict, broken = failed_verdict(exc, "verify"), broken or exc
            line = json.dumps({"task_id": task_id, "steps": episode.steps, **verdict.model_dump(mode="json")})
            if args.verdict is not None:
                args.verdict.write_text(line + "\n")
            if args.transport == "http":
                print(line, flush=True)
            print(f"envgym mcp serve: {task_id}: score {verdict.score:g} after {episode.steps} tool calls"
                  + (f" (the session broke: {type(broken).__name__}: {broken})" if broken else ""), file=sys.stderr)
    return 1 if broken else 0


async def _until(session: Any, stop: Any) -> BaseException | None:
    """Run ``session`` until it ends or ``stop`` is set (then cancel it); what it raised, if anything."""
    import asyncio

    running = asyncio.ensure_future(session)
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait((running, stopped), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (running, stopped):
            task.cancel()
        await asyncio.gather(running, stopped, return_exceptions=True)
    if running.cancelled():
        return None
    return running.exception()
