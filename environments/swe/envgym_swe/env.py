"""The SWE environment: a repository at its task's base commit in a container, graded by hidden tests.

::

    async with envgym.make("swe/demo-v1") as env:
        obs, info = await env.reset(task=task)            # obs.text: the problem statement + where the repo is
        await env.step(Action.call("bash", cmd="python -m pytest -q tests"))
        await env.step(Action.call("edit", path="calc/__init__.py", old="len(values) - 1", new="len(values)"))
        obs, reward, terminated, truncated, info = await env.step(Action.call("submit"))
        info["verdict"].evidence["tests"]                  # {"FAIL_TO_PASS": {id: "PASSED"}, "PASS_TO_PASS": ...}

Every ``reset`` takes a container of the task's image (``initial_state["image"]``, see
:mod:`envgym_swe.images`) that no episode used, from the shared warm pool, puts ``/testbed`` at the base
commit (:func:`~envgym_swe.containers.reset_repo`) and stops the previous episode's container. Tools:
``bash``, ``view``, ``edit``, ``create``, ``search``, ``submit`` (:mod:`envgym_swe.tools`); a mistaken call
is ``last_action_error``, never an exception. ``submit`` (or a final message) runs the task's ``tests``
verifier: the episode's diff is read from its container and graded in another fresh container of the same
image (:mod:`envgym.plugin.tests`); the verdict's evidence holds each test's status, the ``model_patch`` and
the paths of it that grading undid. A container that dies under the agent's command raises
:class:`~envgym.sandbox.errors.SandboxCrashed` (the rollout records the agent's failure). A missing image
raises ImageMissing naming ``envgym swe build``. :attr:`SweEnv.tamper_agents` lists the family's tampering
agents (:mod:`envgym_swe.tamper`), which ``envgym check`` runs.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from pydantic import ValidationError

from envgym.plugin import (
    Action,
    ArgumentsError,
    Clock,
    Env,
    EnvError,
    Observation,
    StepResult,
    TaskSpec,
    ToolResult,
    Verdict,
    VerifyContext,
    decode_arguments,
)
from envgym.plugin.sandbox import ExecTimeout, ImageMissing, Sandbox, SandboxCrashed, SandboxError, SandboxState
from envgym.plugin.tests import TestsTarget
from envgym_swe import containers, tamper
from envgym_swe.images import ImageSpec, image_tag
from envgym_swe.tools import ARGS, TOOLS, ToolBox, ToolError

_tags: dict[str, str] = {}


def task_image(task: TaskSpec) -> str:
    """The image tag of ``task`` (its ``initial_state["image"]`` spec and the current swe-python recipe)."""
    raw = task.initial_state.get("image")
    if not isinstance(raw, dict):
        raise EnvError(f"task {task.id}: initial_state['image'] must be an image spec (envgym swe import makes one)")
    key = json.dumps(raw, sort_keys=True)
    if key not in _tags:
        _tags[key] = image_tag(ImageSpec.model_validate(raw))
    return _tags[key]


class SweEnv(Env):
    """See the module docstring. ``command_timeout_s`` and ``max_output`` bound every tool call."""

    needs_sandbox: ClassVar[bool] = True
    has_write_actions: ClassVar[bool] = True
    tamper_agents = tamper.AGENTS
    gate_sample: ClassVar[int | None] = 8
    """``envgym check`` gates 8 tasks per env spread over its suite (each is two container episodes that run the
    hidden tests, 2-6 s on 2 cores); ``envgym check --all-tasks`` gates all of them, and ``envgym swe label`` /
    ``python -m envgym_swe.inject validate`` re-validate a suite from its sources."""

    def __init__(self, *, command_timeout_s: float = 120.0, max_output: int = 16_000,
                 clock: Clock | None = None) -> None:
        super().__init__(clock=clock)
        self.command_timeout_s, self.max_output = command_timeout_s, max_output
        self.sandbox: Sandbox | None = None
        self.image: str | None = None
        self.tools: ToolBox | None = None
        self._final_answer: str | None = None
        self._submitted = False
        self._held: str | None = None

    # -- containers ------------------------------------------------------------------------------------------
    async def _container(self, image: str) -> Sandbox:
        await self._give_back()
        if image != self._held:  # hold the image's pool between episodes: it stays warm for the next reset
            if self._held is not None:
                await containers.unhold(self._held)
                self._held = None
            await containers.hold(image)
            self._held = image
        try:
            self.sandbox = await containers.lease(image)
        except ImageMissing as exc:
            raise ImageMissing(f"{exc}; SWE images are built by `envgym swe build --suite SUITE` "
                               "(or `envgym swe import`)") from None
        self.image = image
        return self.sandbox

    async def _give_back(self) -> None:
        sandbox, image, self.sandbox, self.image = self.sandbox, self.image, None, None
        if image is not None:
            await containers.release(image, sandbox)

    # -- the episode -----------------------------------------------------------------------------------------
    async def reset(self, *, task: TaskSpec | None = None, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        chosen = self.choose_task(task, seed, options)
        image = task_image(chosen)
        base = str(chosen.initial_state["base_commit"])
        repo = str(chosen.initial_state.get("repo", "the repository"))
        for attempt in range(2):  # a container found dead at reset is replaced once
            sandbox = await self._container(image)
            try:
                await containers.reset_repo(sandbox, base, f"{repo} at the task's base commit")
                break
            except SandboxCrashed:
                await self._give_back()
                if attempt:
                    raise
        self.task = chosen
        self.tools = ToolBox(sandbox, timeout_s=self.command_timeout_s, max_output=self.max_output,
                             disk=dict(containers.DISK))
        self._final_answer, self._submitted = None, False
        text = (f"{chosen.instruction.strip()}\n\n---\nThe repository {repo} is checked out in /testbed (the working "
                "directory); it has no network access. Tools: bash, view, edit, create, search. Change the code so "
                "that the problem is solved, then call submit: hidden tests will grade your changes.")
        info = {"tools": TOOLS, "task_id": chosen.id, "task_hash": chosen.hash, "env_id": chosen.env_id,
                "repo": repo, "image": image}
        return Observation(text=text), info

    async def step(self, action: Action) -> StepResult:
        if self.task is None or self.tools is None:
            raise EnvError("step() without an open episode")
        if not action.tool_calls:
            if action.text is None:
                return self._observe([], "empty action: call a tool (submit when done)")
            return await self._finish(action.text)
        results: list[ToolResult] = []
        for call in action.tool_calls:
            try:
                args = self._parse(call.name, call.arguments)
                if call.name == "submit":
                    return await self._finish(None)
                content = await getattr(self.tools, call.name)(args)
                results.append(ToolResult(call_id=call.id, name=call.name, content=content))
            except ToolError as exc:
                results.append(ToolResult(call_id=call.id, name=call.name, content=str(exc), error=str(exc)))
            except (SandboxCrashed, ExecTimeout) as exc:
                raise self._broken(exc) from exc
            except SandboxError as exc:
                if self.sandbox is None or self.sandbox.state is not SandboxState.RUNNING:
                    raise self._broken(exc) from exc
                # The agent's command killed the session helper (``pkill python3``, say): its doing, not the
                # infrastructure's. The next call opens a new session.
                message = f"the command broke the container's command session ({exc}); it will be restarted"
                results.append(ToolResult(call_id=call.id, name=call.name, content=message, error=message))
        errors = "; ".join(f"{r.name}: {r.error}" for r in results if r.error) or None
        return self._observe(results, errors)

    def _observe(self, results: list[ToolResult], error: str | None) -> StepResult:
        text = "\n\n".join(r.content if len(results) == 1 else f"[{r.name}]\n{r.content}" for r in results)
        if error and not results:
            text = error
        obs = Observation(text=text, tool_results=tuple(results), last_action_error=error)
        return StepResult(obs, 0.0, False, False, {})

    @staticmethod
    def _parse(name: str, arguments: str) -> Any:
        model = ARGS.get(name)
        if model is None:
            raise ToolError(f"unknown tool {name!r}; available: {', '.join(ARGS)}")
        try:
            raw = decode_arguments(name, arguments)
        except ArgumentsError as exc:
            raise ToolError(str(exc)) from None
        try:
            return model.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "arguments"
            raise ToolError(f"bad arguments for {name}: {field}: {first['msg']}") from None

    def _broken(self, exc: SandboxError) -> SandboxError:
        if self.sandbox is not None and self.sandbox.state is not SandboxState.RUNNING:
            return SandboxCrashed(f"the episode's container died: {exc}")
        return exc

    async def _finish(self, answer: str | None) -> StepResult:
        self._final_answer, self._submitted, self.tools = answer, True, None
        return StepResult(Observation(text="Submitted."), 0.0, True, False, {})  # the kernel grades it now

    async def verify_context(self) -> VerifyContext:
        if self.task is None:
            raise EnvError("verify() without an episode")
        if self._submitted and self.sandbox is None:  # make's Grading keeps the one verdict; a bare env has none
            raise EnvError("this episode was graded when it was submitted and its container is gone: its verdict "
                           "is the one its step returned (info['verdict'] from envgym.make's env)")
        if self.sandbox is None or self.sandbox.state is not SandboxState.RUNNING:
            cause = getattr(self.sandbox, "crash_error", None)  # whose it was: the crash's own evidence
            detail = f" ({cause})" if cause else ""
            raise SandboxCrashed(f"the episode's container is gone; nothing can be graded{detail}") from cause
        image = self.image or task_image(self.task)
        target = TestsTarget(episode=self.sandbox, fresh=lambda: containers.leased(image))
        return VerifyContext(calls=[], final_answer=self._final_answer, sandbox=target, task=self.task)

    async def graded(self, verdict: Verdict) -> dict[str, Any]:
        if self._submitted:  # graded: the container is stopped now (in the background), off the next reset's path
            await self._give_back()
        return {}

    async def close(self) -> None:
        self.tools = None
        try:
            await self._give_back()
        finally:
            held, self._held = self._held, None
            if held is not None:
                await containers.unhold(held)
