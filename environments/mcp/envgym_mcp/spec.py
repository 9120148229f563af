"""How to run one MCP server as an environment: :class:`McpServerSpec`, and where its state lives.

A spec is data (a frozen model), so it can be written in Python or in a suite file: a task of the generic
env ``mcp/server-v1`` names its server in ``metadata.server``, the same fields as JSON (:func:`server_of`).

- **Where it runs.** ``command`` (argv, in the sandbox's work directory ``/work``; ``{state}`` and ``{init}``
  stand for the state's path and the task's initial-state file) runs in a fresh sandbox per episode. With
  ``package`` (a pip requirement, e.g. ``mcp-server-sqlite==2025.4.25``, and ``requirements`` beside it, e.g.
  a pin ``mcp<2``) the sandbox is a Docker image of its own, built offline from those wheels
  (:mod:`envgym_mcp.images`): servers whose MCP SDKs conflict each get theirs, none of it in envgym's venv.
  Otherwise ``image`` names an image (a tag, or a recipe of ``sandboxes/``), or ``sandbox="local"`` runs it in
  a host folder (development only).
- **What is a write.** A tool annotated ``readOnlyHint`` is a ``read``, any other a ``write`` (the write-action
  verifier counts writes); ``read_tools`` and ``write_tools`` override the annotations, for servers that set
  none or set them wrong. A name there that the server does not list is a :class:`SpecError` at reset.
- **The state** verifiers read (:data:`StateSpec`): ``sqlite`` (a SQLite file; the default, ``state.sqlite``,
  which the server creates itself from ``{init}``, or envgym creates from the task's ``initial_state["sql"]``
  with ``seed: true``), ``git`` (a repository envgym creates from the task's files and reads back as tables:
  :mod:`envgym_mcp.gitstate`), or ``null``: a stateless server, graded from the final answer and the
  tool-call record alone (no state is read, no reference replayed). Only the SQLite state answers a rubric
  ``sql`` check (:attr:`McpServerSpec.sql_state`): a task with one on a git or stateless server is refused
  before it runs (:func:`refuse_sql_checks`), not failed at grading.
"""

from __future__ import annotations

import asyncio
import functools
import json
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, model_validator

from envgym.plugin import EnvError, FrozenModel, SpecError
from envgym.plugin.tools import FrozenState, store

__all__ = ["GitState", "McpServerSpec", "McpStateMissing", "SqliteState", "StateSpec", "refuse_sql_checks",
           "server_of"]

WORKDIR = "/work"
_NAME = r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$"

Tables = tuple[dict[str, list[dict[str, Any]]], dict[str, tuple[str, ...]]]


class McpStateMissing(EnvError):
    """The server's declared state is not there after the episode (or cannot be read): the server or its spec is
    broken, never the agent (its only reach was the server's tools)."""

    blame = "env"


class SqliteState(FrozenModel):
    """The server keeps its state in one SQLite file: copied out of the sandbox and read on the host."""

    kind: Literal["sqlite"] = "sqlite"
    path: str = Field(default="state.sqlite", pattern=_NAME)
    """The file's name in the work directory (``{state}`` in the command)."""
    seed: bool = False
    """envgym creates the file from the task's ``initial_state["sql"]`` (a SQL script) before the server starts;
    false: the server creates it (from ``{init}``, the initial state as JSON)."""

    async def prepare(self, sandbox: Any, where: str, initial: dict[str, Any]) -> None:
        if self.seed:
            data = await asyncio.to_thread(_seeded_sqlite, str(initial.get("sql", "")))
            await sandbox.write(f"{WORKDIR}/{where}", data)

    async def read(self, sandbox: Any, where: str) -> Tables:
        return await asyncio.to_thread(_sqlite_tables, await self._file(sandbox, where))

    async def view(self, sandbox: Any, where: str) -> FrozenState:
        """The state as verifiers read it: its tables, and SQL (a rubric ``sql`` check) on an in-memory copy."""
        data = await self._file(sandbox, where)
        tables, columns = await asyncio.to_thread(_sqlite_tables, data)
        return FrozenState(tables, columns, reopen=functools.partial(store.clone, data), inline_queries=True)

    async def _file(self, sandbox: Any, where: str) -> bytes:
        from envgym.plugin.sandbox import SandboxFileNotFound

        try:
            return await sandbox.read(f"{WORKDIR}/{where}")
        except SandboxFileNotFound:
            raise McpStateMissing(f"the server left no state file {where} (its spec's state: sqlite)") from None


class GitState(FrozenModel):
    """The state is a git repository envgym creates from the task (``initial_state``: ``commits``, each
    ``{"message", "files": {path: text}}``, then ``files``: changes left in the work tree) and reads back
    as tables (:mod:`envgym_mcp.gitstate`: commits per branch by message and tree, the files at HEAD, the
    index and the work tree's status). Commit ids and dates are left out: they differ between runs."""

    kind: Literal["git"] = "git"
    path: str = Field(default="repo", pattern=_NAME)

    async def prepare(self, sandbox: Any, where: str, initial: dict[str, Any]) -> None:
        await sandbox.write(f"{WORKDIR}/.envgym_init_{where}.json", json.dumps(initial))
        await _gitstate(sandbox, "seed", where, f".envgym_init_{where}.json")

    async def read(self, sandbox: Any, where: str) -> Tables:
        out = await _gitstate(sandbox, "dump", where)
        tables = json.loads(out)
        return tables, {name: tuple(rows[0]) if rows else () for name, rows in tables.items()}

    async def view(self, sandbox: Any, where: str) -> FrozenState:
        """The state as verifiers read it: its tables, a snapshot (no SQL: :attr:`McpServerSpec.sql_state`)."""
        return FrozenState(*await self.read(sandbox, where))


StateSpec = Annotated[SqliteState | GitState, Field(discriminator="kind")]


async def _gitstate(sandbox: Any, *argv: str) -> str:
    """Run :mod:`envgym_mcp.gitstate` in the sandbox. Its source goes on the command line, never into a file
    the server could have rewritten; git runs with no hooks, no system or global config."""
    from importlib import resources

    source = (resources.files("envgym_mcp") / "gitstate.py").read_text()
    result = await sandbox.exec(["python3", "-c", source, *argv], cwd=WORKDIR, timeout=60,
                                env={"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": "/tmp"})
    if not result.ok:
        raise McpStateMissing(f"reading the git state ({argv[0]} {argv[1]}) failed: "
                              f"{(result.stderr or result.stdout).strip()[-800:]}")
    return result.stdout


class McpServerSpec(FrozenModel):
    """How to run one MCP server in a sandbox (see the module docstring)."""

    name: str = Field(pattern=r"^[a-z0-9_\-]+$")
    """Names the server in messages and image tags (``envgym-mcp/<name>``)."""
    command: tuple[str, ...] = Field(min_length=1)
    """argv, run in the work directory; ``{state}`` and ``{init}`` are replaced by those files' names."""
    package: str | None = None
    """A pip requirement of the server (``mcp-server-time==2026.10.19``): the server runs in an image of its
    own, built on first use from its wheels (``requirements`` beside it), offline; implies ``sandbox: docker``."""
    requirements: tuple[str, ...] = ()
    """More pip requirements installed with ``package`` (pins of its dependencies: ``mcp<2``)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables of the server process."""
    files: dict[str, str] = Field(default_factory=dict)
    """Sandbox path -> host file (or ``package:resource``), copied in before the server starts."""
    sandbox: Literal["local", "docker"] = "local"
    image: str | None = None
    """The Docker image (a tag, or the name of an image recipe under ``sandboxes/``); docker only."""
    read_tools: tuple[str, ...] = ()
    """Tools that are reads whatever their annotations say."""
    write_tools: tuple[str, ...] = ()
    """Tools that are writes whatever their annotations say."""
    state: StateSpec | None = SqliteState()
    """Where the server keeps what verifiers read; None: a stateless server (answer and call record only)."""
    timeout_s: float = Field(default=30.0, gt=0)
    """How long one request may take."""
    disk_bytes: int = Field(default=256 << 20, gt=0)
    """Local backend only: the most its folder may hold (each file the server writes is capped at it, the whole
    folder is measured after every call). Docker bounds disk by its profile (``/work`` holds 256 MiB)."""

    @model_validator(mode="before")
    @classmethod
    def _package_means_docker(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("package") and "sandbox" not in data:
            data = {**data, "sandbox": "docker"}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> McpServerSpec:
        if self.package is not None:
            if self.sandbox != "docker":
                raise ValueError("a server installed from a package runs in its own Docker image: sandbox must be "
                                 "docker")
            if self.image is not None:
                raise ValueError("give package or image, not both (the package's image is built for it)")
        elif self.requirements:
            raise ValueError("requirements are installed beside package: give package too")
        both = sorted(set(self.read_tools) & set(self.write_tools))
        if both:
            raise ValueError(f"{', '.join(both)} in both read_tools and write_tools")
        if self.state is None and any("{state}" in part for part in self.command):
            raise ValueError("the command names {state}, but the server declares no state (state: null)")
        return self

    @property
    def sql_state(self) -> bool:
        """Whether its state answers SQL (a rubric ``sql`` check): a SQLite file does; the tables read back from
        a git repository and a stateless server do not."""
        return isinstance(self.state, SqliteState)

    def kinds(self, tools: list[dict[str, Any]]) -> dict[str, Literal["read", "write"]]:
        """Each listed tool's kind: ``read_tools``/``write_tools``, else its ``readOnlyHint`` annotation.
        A declared name the server does not list is a :class:`SpecError` naming the field."""
        listed = {t["name"] for t in tools}
        for field in ("read_tools", "write_tools"):
            unknown = [name for name in getattr(self, field) if name not in listed]
            if unknown:
                raise SpecError(f"server {self.name!r} lists no tool {', '.join(map(repr, unknown))} (its tools: "
                                f"{', '.join(sorted(listed))})", field=field)
        kinds: dict[str, Literal["read", "write"]] = {}
        for tool in tools:
            name = tool["name"]
            hint = bool((tool.get("annotations") or {}).get("readOnlyHint"))
            kinds[name] = "read" if name in self.read_tools or (hint and name not in self.write_tools) else "write"
        return kinds


def server_of(task: Any) -> McpServerSpec:
    """The server a task of ``mcp/server-v1`` names in ``metadata.server`` (a :class:`SpecError` naming the
    field when it is missing or malformed)."""
    block = (task.metadata or {}).get("server")
    if not isinstance(block, dict):
        raise SpecError(f"task {task.id!r} names no MCP server: mcp/server-v1 runs the server its task's "
                        "metadata.server describes (name, command, package, ...)", field="metadata.server")
    try:
        return McpServerSpec.model_validate(block)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise SpecError(f"task {task.id!r}: {first['msg'].removeprefix('Value error, ')}",
                        field="metadata.server" + (f".{where}" if where else "")) from None


def refuse_sql_checks(task: Any, server: McpServerSpec) -> None:
    """A :class:`SpecError` naming the field of ``task``'s first rubric ``sql`` check when ``server``'s state
    answers no SQL (:attr:`McpServerSpec.sql_state`); nothing otherwise."""
    if server.sql_state:
        return
    where = _sql_check(task.model_dump(mode="json")["verifiers"], "verifiers")
    if where is not None:
        kind = "stateless (state: null)" if server.state is None else f"a {server.state.kind} state"
        raise SpecError(f"task {task.id!r} has a sql check, but MCP server {server.name!r} keeps {kind}, which "
                        "answers no SQL: check its tables with write_action's final state, or the answer",
                        field=where)


def _sql_check(node: Any, where: str) -> str | None:
    """The field path of the first rubric ``sql`` check in ``node`` (a task's verifiers as JSON), or None. The
    kernel keeps its own walk private (``envgym.task``), so the family reads the JSON form, where every check,
    combinators' included, sits under a ``check`` key."""
    if isinstance(node, dict) and isinstance(node.get("check"), dict) and node["check"].get("type") == "sql":
        return f"{where}.check"
    children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    return next((found for key, child in children if (found := _sql_check(child, f"{where}.{key}"))), None)


def _seeded_sqlite(script: str) -> bytes:
    folder = Path(tempfile.mkdtemp(prefix="envgym-mcp-seed-"))
    try:
        conn = sqlite3.connect(folder / "seed.sqlite")
        try:
            conn.executescript(script)
            conn.commit()
        finally:
            conn.close()
        return (folder / "seed.sqlite").read_bytes()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _sqlite_tables(data: bytes) -> Tables:
    """Tables and columns of a SQLite database given as bytes (every table but SQLite's own)."""
    folder = Path(tempfile.mkdtemp(prefix="envgym-mcp-state-"))
    try:
        path = folder / "state.sqlite"
        path.write_bytes(data)
        conn = store.connect(path)
        try:
            view = store.SqliteState(conn)
            return view.snapshot(), view.columns()
        finally:
            conn.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
