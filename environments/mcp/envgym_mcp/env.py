"""An envgym tool env whose tools are an MCP server's, started inside a sandbox.

:class:`McpToolEnv` takes an :class:`~envgym_mcp.spec.McpServerSpec` (how to run the server, which tools are
reads, where its state lives: :mod:`envgym_mcp.spec`), or none: then each task names its own in
``metadata.server`` (the generic id ``mcp/server-v1``: a suite file is all an MCP server needs to become an
environment). The sandbox is a container of the server's own image (``package``: built offline on first use,
in :meth:`~McpToolEnv.prepare`, :mod:`envgym_mcp.images`), of a named image (the bundled ``kanban`` server
runs in the ``python`` image), or a host directory (``sandbox="local"``, for development, not isolated, its
folder bounded by ``disk_bytes``). In Docker the server sits behind ``bridge.py`` on a sandbox channel.
Nothing leaves the sandbox but the server's stdio, so the server needs no network, and gets none in Docker.

Each episode runs in a fresh sandbox: ``reset`` starts it, writes the task's ``initial_state`` as JSON to
``{init}``, prepares the state (a seeded SQLite file, a git repository made from the task's files), starts the
server, does the MCP handshake and lists its tools; ``info["tools"]`` are those tools as OpenAI function
schemas, each a ``read`` or a ``write`` (:meth:`McpServerSpec.kinds`: the spec's ``read_tools`` /
``write_tools``, else the ``readOnlyHint`` annotation; the write-action verifier counts writes). A step sends
each tool call as ``tools/call``; a result with ``isError`` is an error observation and a failed call record,
and so is a call whose arguments are not a JSON object at any nesting depth (the kernel's
:func:`~envgym.tools.args.decode_arguments`), whose request or reply is over the client's bound
(:data:`~envgym_mcp.client.MAX_MESSAGE_BYTES`) or too deep: the episode goes on. A message without tool calls
ends the episode, as in :class:`envgym.tools.ToolEnv`. On the local backend each file the server writes is
capped at ``disk_bytes`` (``RLIMIT_FSIZE``) and the folder is measured after every call: past the bound the
server is stopped, the folder removed and the episode ends as the agent's failure (:class:`DiskBoundExceeded`).

Grading reads the server's state out of the sandbox (``state``) and compares it with the state the reference
solution leaves, replayed on a second server in a second, fresh sandbox laid out as the first (``expected_state``,
cached per task; ``initial_state`` is the state as the server left it at start, before
any call, or replayed too when it is not there yet). Grading thus never runs where the agent could write: the
agent only ever spoke to the server. A declared state that is missing after the episode is the env's failure
(:class:`~envgym_mcp.spec.McpStateMissing`), never the agent's. A stateless server (``state: null``) is graded
from the final answer and the tool-call record alone. ``envgym check`` runs the kernel's tampering agents on it
like any tool env.

Only a SQLite state answers SQL, so ``sql_state`` (the capability a rubric ``sql`` check needs) follows the
server: an env built for one server says what that server's state is; ``mcp/server-v1``, whose servers are
its tasks', says True for the class, and each task is admitted on its own server's state: a task with a
``sql`` check on a git or stateless server is a :class:`SpecError` naming that check's field when it is
chosen (:func:`~envgym_mcp.spec.refuse_sql_checks`), before any sandbox starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import signal
from collections import OrderedDict
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

from envgym.plugin import (
    Action,
    AgentFault,
    ArgumentsError,
    CallRecord,
    Env,
    EnvError,
    Observation,
    SpecError,
    StepResult,
    TaskSpec,
    ToolResult,
    VerifyContext,
    decode_arguments,
)
from envgym.plugin.tools import FrozenState
from envgym_mcp.client import (
    MAX_MESSAGE_BYTES,
    ChannelTransport,
    McpClient,
    McpMessageRefused,
    McpServerError,
    ProcessTransport,
)
from envgym_mcp.spec import WORKDIR, McpServerSpec, McpStateMissing, Tables, refuse_sql_checks, server_of

__all__ = ["SERVERS", "DiskBoundExceeded", "McpServerSpec", "McpToolEnv"]

SERVERS: dict[str, McpServerSpec] = {
    "kanban": McpServerSpec(name="kanban", command=("python3", "kanban.py", "--db", "{state}", "--init", "{init}"),
                            files={f"{WORKDIR}/kanban.py": "envgym_mcp.servers:kanban.py"},
                            sandbox="docker", image="python"),
}
"""The servers written here, by name (``McpToolEnv(server="kanban")``)."""


class DiskBoundExceeded(AgentFault):
    """The local sandbox's folder outgrew :attr:`McpServerSpec.disk_bytes` through the agent's calls: the
    episode ends as the agent's failure, its server stopped and its folder removed."""


def _host_file(ref: str) -> bytes:
    package, sep, name = ref.partition(":")
    if sep and not Path(ref).exists():
        return resources.files(package).joinpath(name).read_bytes()
    return Path(ref).read_bytes()


class McpToolEnv(Env):
    """An env over an MCP server's tools (see the module docstring)."""

    sql_state: ClassVar[bool] = True
    """The class's: some servers keep a SQLite state. An instance's follows its server (see the module docstring)."""
    has_write_actions: ClassVar[bool] = True
    needs_sandbox: ClassVar[bool] = True
    _states: ClassVar[OrderedDict[tuple[str, str, str], Tables]] = OrderedDict()

    def __init__(self, server: McpServerSpec | dict[str, Any] | str | None = None, *, sandbox: str | None = None,
                 image: str | None = None, clock: Any = None) -> None:
        super().__init__(clock=clock)
        if isinstance(server, str):
            if server not in SERVERS:
                raise SpecError(f"unknown MCP server {server!r} (bundled: {', '.join(SERVERS)}); pass an "
                                "McpServerSpec for your own, or none to run the server each task names", field="server")
            server = SERVERS[server]
        self._overrides = {k: v for k, v in (("sandbox", sandbox), ("image", image)) if v is not None}
        self._fixed = None if server is None else self._with_overrides(
            server if isinstance(server, McpServerSpec) else McpServerSpec.model_validate(server))
        self.server: McpServerSpec | None = self._fixed
        """The server of the episode (the fixed one, or the current task's)."""
        self._follow_server()
        self._sandbox: Any = None
        self._client: McpClient | None = None
        self._image: str | None = None
        self._tools: dict[str, str] = {}
        self._calls: list[CallRecord] = []
        self._final: str | None = None
        self.tool_schemas: list[dict[str, Any]] = []

    def _with_overrides(self, spec: McpServerSpec) -> McpServerSpec:
        spec = spec.model_copy(update=self._overrides) if self._overrides else spec
        if spec.sandbox == "docker" and not spec.image and not spec.package:
            raise SpecError("an MCP server in a docker sandbox needs an image or a package", field="image")
        return spec

    def server_for(self, task: TaskSpec) -> McpServerSpec:
        """The server ``task`` runs on: this env's own, else the one the task names (``metadata.server``)."""
        return self._fixed if self._fixed is not None else self._with_overrides(server_of(task))

    @classmethod
    def answers_sql(cls, task: TaskSpec) -> bool:
        """Whether ``task``'s state answers SQL: the server it names keeps SQLite (:attr:`McpServerSpec.sql_state`);
        a task naming none runs on the env's fixed server (``mcp/kanban-v1``: SQLite, the class's flag)."""
        return server_of(task).sql_state if "server" in task.metadata else cls.sql_state

    def _follow_server(self) -> None:
        if self.server is not None:
            self.sql_state = self.server.sql_state  # type: ignore[misc] - the instance's, read through wrappers

    def choose_task(self, task: TaskSpec | str | None, seed: int | None,
                    options: dict[str, Any] | None = None) -> TaskSpec:
        """The kernel's choice, admitted on the state of the server it runs on: a ``sql`` check needs SQLite."""
        chosen = super().choose_task(task, seed, options)
        refuse_sql_checks(chosen, self.server_for(chosen))
        return chosen

    async def prepare(self, task: TaskSpec) -> None:
        """Build the server's image when it is installed from a package and not built yet (outside every
        deadline: a first build takes a minute)."""
        server = self.server_for(task)
        if server.package is not None:
            from envgym_mcp.images import ensure_image

            self._image = await asyncio.to_thread(ensure_image, server)

    # -- the sandbox and the server ----------------------------------------------------------------------------
    async def _new_sandbox(self, server: McpServerSpec) -> Any:
        if server.sandbox == "local":
            import warnings

            from envgym.plugin.sandbox import InsecureSandboxWarning, LocalSandbox

            sandbox = LocalSandbox()
            with warnings.catch_warnings():  # said once in the docs: the local backend is for development
                warnings.simplefilter("ignore", InsecureSandboxWarning)
                await sandbox.start()
        else:
            from envgym.plugin.sandbox import DockerSandbox, image_recipes, tag_for

            image = self._image if server.package is not None else server.image
            assert image is not None
            image = tag_for(image) if image in image_recipes() else image
            sandbox = DockerSandbox(image)
            await sandbox.start()
        try:
            for path, ref in server.files.items():
                await sandbox.write(path, await asyncio.to_thread(_host_file, ref))
        except BaseException:
            await sandbox.stop()
            raise
        return sandbox

    async def _start_server(self, sandbox: Any, task: TaskSpec) -> McpClient:
        """Write the task's initial state into ``sandbox``, prepare the server's state there, start the server."""
        server = self.server
        assert server is not None
        await sandbox.write(f"{WORKDIR}/init.json", json.dumps(task.initial_state))
        where = server.state.path if server.state is not None else ""
        if server.state is not None:
            await server.state.prepare(sandbox, where, task.initial_state)
        argv = [part.replace("{state}", where).replace("{init}", "init.json") for part in server.command]
        if server.sandbox == "local":
            transport: Any = await ProcessTransport.start(argv, cwd=str(sandbox.root / WORKDIR.lstrip("/")),
                                                          env={**os.environ, **server.env} if server.env else None)
            if hasattr(resource, "prlimit"):  # Linux; elsewhere only the check after each call bounds the folder
                with contextlib.suppress(ProcessLookupError):
                    limit = server.disk_bytes
                    resource.prlimit(transport.process.pid, resource.RLIMIT_FSIZE, (limit, limit))
        else:
            bridge = (resources.files("envgym_mcp") / "bridge.py").read_bytes()
            await sandbox.write(f"{WORKDIR}/.envgym_mcp_bridge.py", bridge)
            channel = await sandbox.channel(["python3", f"{WORKDIR}/.envgym_mcp_bridge.py",
                                                   str(MAX_MESSAGE_BYTES), *argv], cwd=WORKDIR, env=server.env)
            transport = ChannelTransport(channel)
        client = McpClient(transport, timeout=server.timeout_s)
        try:
            await client.initialize()
        except BaseException:
            await client.close()
            raise
        return client

    async def _release(self) -> None:
        client, sandbox = self._client, self._sandbox
        self._client = self._sandbox = None
        try:
            if client is not None:
                await client.close()
        finally:
            if sandbox is not None:
                await sandbox.stop()

    # -- the episode -------------------------------------------------------------------------------------------
    async def reset(self, *, task: Any = None, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        chosen = self.choose_task(task, seed, options)
        await self._release()
        self.server = self.server_for(chosen)
        self._follow_server()
        if self.server.package is not None:  # built when the rollout prepared the task: then one inspect
            await self.prepare(chosen)
        self._sandbox = await self._new_sandbox(self.server)
        self._client = await self._start_server(self._sandbox, chosen)
        state, initial = self.server.state, (self.server.name, chosen.hash, "initial")
        if state is not None and initial not in self._states:  # before any call: read now
            with contextlib.suppress(McpStateMissing):  # not there yet: grading replays it
                self._states[initial] = await state.read(self._sandbox, state.path)
        tools = await self._client.list_tools()
        try:
            self._tools = dict(self.server.kinds(tools))
        except SpecError as exc:
            if self._fixed is not None or not exc.field:
                raise
            message = str(exc).removesuffix(f" (field {exc.field!r})")  # the task's block: name it as it is there
            raise SpecError(f"task {chosen.id!r}: {message}", field=f"metadata.server.{exc.field}") from None
        self.tool_schemas = [{"type": "function", "function": {
            "name": t["name"], "description": f"[{self._tools[t['name']]}] {t.get('description') or ''}".strip(),
            "parameters": t.get("inputSchema") or {"type": "object", "properties": {}}}} for t in tools]
        self.task = chosen
        self._calls, self._final = [], None
        info = {"tools": self.tool_schemas, "policy": "", "task_id": chosen.id, "task_hash": chosen.hash,
                "env_id": chosen.env_id, "split": chosen.split, "mcp_server": self._client.server_info}
        return Observation(text=chosen.instruction), info

    async def step(self, action: Action) -> StepResult:
        if self._client is None or self.task is None:
            raise EnvError("step() without an open episode")
        if not action.tool_calls:
            if action.text is None:
                return StepResult(Observation(last_action_error="empty action: send tool calls or a final message"),
                                  0.0, False, False, {})
            self._final = action.text
            return StepResult(Observation(text="Episode finished."), 0.0, True, False, {})
        results = []
        for call in action.tool_calls:
            try:
                results.append(await self._call(self._client, self._calls, call.name, call.arguments, call.id))
            except McpServerError:
                await self._check_disk(call.name, died=True)
                raise
            await self._check_disk(call.name)
        errors = [f"{r.name}: {r.error}" for r in results if r.error]
        obs = Observation(tool_results=tuple(results), last_action_error="; ".join(errors) or None)
        return StepResult(obs, 0.0, False, False, {})

    async def _call(self, client: McpClient, calls: list[CallRecord], name: str, raw: str,
                    call_id: str) -> ToolResult:
        kind = self._tools.get(name, "unknown")
        arguments: dict[str, Any] | None = None
        try:
            arguments = decode_arguments(name, raw)  # depth-checked: any nesting is an error, never a crash
        except ArgumentsError as exc:
            error: str | None = str(exc)
        else:
            error = f"unknown tool {name!r}; available: {', '.join(sorted(self._tools))}" if kind == "unknown" else None
        if error is None:
            try:
                text, is_error = await client.call_tool(name, arguments or {})
            except McpMessageRefused as exc:  # over the size bound or too deep: this call's error, the server lives
                error, arguments = str(exc), arguments if exc.sent else None
        if error is not None:
            calls.append(CallRecord(index=len(calls), name=name, kind=kind, arguments=arguments, ok=False, error=error))
            return ToolResult(call_id=call_id, name=name, content=error, error=error)
        calls.append(CallRecord(index=len(calls), name=name, kind=kind, arguments=arguments, ok=not is_error,
                                error=text if is_error else None))
        return ToolResult(call_id=call_id, name=name, content=text, error=text if is_error else None)

    async def _check_disk(self, name: str, *, died: bool = False) -> None:
        """Local backend: end the episode (the agent's failure) once its folder holds more than the bound, or
        the server was killed for writing a file past it (SIGXFSZ); stop the server and remove the folder."""
        if self.server is None or self.server.sandbox != "local" or self._sandbox is None:
            return
        used = await asyncio.to_thread(_folder_bytes, self._sandbox.root)
        process = getattr(getattr(self._client, "transport", None), "process", None)
        killed = died and getattr(process, "returncode", None) == -signal.SIGXFSZ
        bound = self.server.disk_bytes
        if used <= bound and not killed:
            return
        await self._release()
        what = "the server was killed writing a file past" if killed else f"the folder holds {used:,} bytes, over"
        raise DiskBoundExceeded(f"after the call of {name}, {what} the local sandbox's disk bound of {bound:,} bytes "
                                "(McpServerSpec.disk_bytes): the episode ended")

    # -- grading -----------------------------------------------------------------------------------------------
    async def _replayed(self, kind: str, actions: tuple[Action, ...]) -> Tables:
        """The state a fresh server in a fresh sandbox, started from the same initial state, is left in by
        ``actions`` (every path the reference's calls name is where it was in the episode)."""
        server, task = self.server, self.task
        assert task is not None and server is not None and server.state is not None
        key = (server.name, task.hash, kind)
        cached = self._states.get(key)
        if cached is None:
            sandbox = await self._new_sandbox(server)
            try:
                client = await self._start_server(sandbox, task)
                try:
                    calls: list[CallRecord] = []
                    for action in actions:
                        for call in action.tool_calls:
                            await self._call(client, calls, call.name, call.arguments, call.id)
                finally:
                    await client.close()
                cached = self._states[key] = await server.state.read(sandbox, server.state.path)
            finally:
                await sandbox.stop()
            while len(self._states) > 512:
                self._states.popitem(last=False)
        return cached

    async def verify_context(self) -> VerifyContext:
        if self._sandbox is None or self.task is None or self.server is None:
            raise EnvError("verify() without an open episode")
        if self.server.state is None:  # stateless: the answer and the call record are all there is
            return VerifyContext(calls=list(self._calls), final_answer=self._final, task=self.task)
        state = await self.server.state.view(self._sandbox, self.server.state.path)
        initial = await self._replayed("initial", ())
        expected = await self._replayed("expected", self.task.solution) if self.task.solution is not None else None
        return VerifyContext(calls=list(self._calls), final_answer=self._final, state=state,
                             initial_state=FrozenState(*initial),
                             expected_state=FrozenState(*expected) if expected is not None else None, task=self.task)

    async def close(self) -> None:
        await self._release()


def _folder_bytes(root: Path) -> int:
    """Disk space taken by the files under ``root`` (allocated blocks; links are not followed)."""
    total, pending = 0, [str(root)]
    while pending:
        folder = pending.pop()
        with contextlib.suppress(FileNotFoundError, NotADirectoryError, PermissionError), os.scandir(folder) as it:
            for entry in it:
                with contextlib.suppress(FileNotFoundError):
                    total += entry.stat(follow_symlinks=False).st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
    return total
