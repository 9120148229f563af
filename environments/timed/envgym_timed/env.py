"""The timed environment: a world that keeps moving while the agent thinks, waits and calls slow tools.

One episode, step by step:

1. **Thinking costs time.** Before the action takes effect the world runs for the thinking charge of the
   env's policy (:mod:`envgym.timed.thinking`; default 2 s a step). In real-time mode the world instead
   follows the env's clock (the wall clock unless one is injected), scaled by ``speed``.
2. **Calls.** The action's tool calls run in order at the current virtual time. In the task's ``async``
   variant a *slow* tool answers ``{"handle": "h1", "status": "pending"}`` at once; its result (or
   error) arrives later as a ``tool_result`` notification from that handle, after a latency drawn from
   the task's seeded distribution, so results can arrive out of order while the agent does other things.
   In the ``sync`` variant every tool answers in the same step. Whatever a call sets off for the current
   time (a reply on condition, a zero-length job) happens before the next call. Two control tools let time pass:
   ``wait(seconds | until)`` and ``wait_for_notification(timeout, source?)``; the latter returns as soon
   as a notification the agent has not seen (from ``source``, if given) is there, or at once when
   ``source`` names a handle or job that has already finished.
3. **Notifications** that arrived since the last observation are delivered in the observation
   (:class:`TimedObservation`: fields and text). A message without tool calls is the final answer: calls
   still in flight are drained, then the episode is graded. Reaching the task's horizon truncates it.

Determinism: the same task, seed and actions (and thinking charges) give the same timeline; the
timeline (:class:`~envgym.timed.timeline.Timeline`) is in every verdict's evidence, and
:mod:`envgym_timed.replay` re-grades a recorded run without the agent. The token-cost policy learns the
agent's usage from ``step(action, usage=...)`` or from ``attach_usage(lambda: agent.usage)``.
"""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from envgym.clock import Clock
from envgym.env import Env, StepResult
from envgym.errors import EnvError, SpecError
from envgym.tamper import TamperAgent
from envgym.task import TaskSpec
from envgym.timed.latency import INSTANT, latency
from envgym.timed.thinking import ThinkingSample, thinking_policy, usage_delta
from envgym.timed.timeline import Notification, StepTiming, Timeline
from envgym.tools.args import ArgumentsError, parse_arguments
from envgym.types import Action, Observation, ToolCall, ToolResult, Usage
from envgym.verify import CallRecord
from envgym.verify.timed import TimedVerifyContext
from envgym_timed.tamper import TAMPER_AGENTS
from envgym_timed.toolkit import Scenario, Tool, ToolFailure, tool
from envgym_timed.world import CallDraft, World, dumps


class TimedObservation(Observation):
    """An observation with the time: ``time_s`` since the start, the time of day, the thinking charge of
    the action that led here, and the notifications delivered with it."""

    time_s: float = 0.0
    clock: str = ""
    thinking_s: float = 0.0
    notifications: tuple[Notification, ...] = ()


class WaitArgs(BaseModel):
    seconds: float | None = Field(default=None, ge=0, le=86_400, description="How long to let time pass.")
    until: str | None = Field(default=None, description="Or: a time of day to wait until, HH:MM or HH:MM:SS.")


class WaitForNotificationArgs(BaseModel):
    timeout: float = Field(gt=0, le=86_400, description="Give up after this many seconds.")
    source: str | None = Field(default=None, description="Only wake for this sender, appliance or handle (h1).")


@tool("control", "Let time pass: wait a number of seconds, or until a time of day.")
def wait(world: World, args: WaitArgs) -> None:  # run by the env, which owns the clock
    return None


@tool("control", "Wait until a new notification arrives (from `source`, if given) or the timeout passes.")
def wait_for_notification(world: World, args: WaitForNotificationArgs) -> None:  # run by the env
    return None


CONTROLS: dict[str, Tool] = {t.name: t for t in (wait, wait_for_notification)}


def load_scenario(name: str) -> Scenario:
    try:
        module = importlib.import_module(f"envgym_timed.scenarios.{name}")
    except ModuleNotFoundError as exc:
        raise SpecError(f"unknown timed scenario {name!r}") from exc
    return module.SCENARIO


MAX_KEPT_DEPTH = 32
"""A rejected call's arguments nested deeper than this are left out of the timeline (it is serialised into the
verdict, and a few hundred levels exceed what serialisation allows)."""


def _depth(value: Any) -> int:
    depth, level = 0, [value]
    while level and depth <= MAX_KEPT_DEPTH:
        depth += 1
        level = [v for item in level if isinstance(item, dict | list)
                 for v in (item.values() if isinstance(item, dict) else item)]
    return depth - 1 if not level else depth


class WorldState:
    """The final world state as a verifier's StateView."""

    def __init__(self, tables: dict[str, list[dict[str, Any]]]) -> None:
        self.tables = tables

    def snapshot(self) -> dict[str, list[dict[str, Any]]]:
        return self.tables

    def query(self, sql: str) -> list[dict[str, Any]]:
        raise NotImplementedError("a timed world has no SQL store; use timed_write final_state checks")


@dataclass
class _Accounting:
    waiting_s: float = 0.0
    idle_s: float = 0.0


class TimedEnv(Env):
    """``timed/<scenario>-vN``: see the module docstring."""

    time_evolving: ClassVar[bool] = True
    has_write_actions: ClassVar[bool] = True
    tamper_agents: ClassVar[tuple[type[TamperAgent], ...]] = TAMPER_AGENTS

    def __init__(self, scenario: str | Scenario, *, thinking: Any = None, realtime: bool = False,
                 speed: float = 1.0, clock: Clock | None = None) -> None:
        super().__init__(clock=clock)
        if speed <= 0:
            raise SpecError("speed must be positive")
        self.scenario = load_scenario(scenario) if isinstance(scenario, str) else scenario
        self.thinking = thinking_policy(thinking)
        self.realtime = realtime
        self.speed = speed
        self.tool_schemas = [*self.scenario.schemas, *(t.schema() for t in CONTROLS.values())]
        self.world: World | None = None
        self._usage_source: Callable[[], Usage] | None = None
        self._reset_episode_fields()

    def _reset_episode_fields(self) -> None:
        self._variant = "async"
        self._seed = 0
        self._steps: list[StepTiming] = []
        self._delivered = 0
        self._final: str | None = None
        self._ended = False
        self._latency: dict[str, Any] = {}
        self._handles = itertools.count(1)
        self._wall0 = self._wall_mark = self.clock.now()
        self._usage_mark: Usage | None = None
        self._initial: WorldState | None = None

    def attach_usage(self, source: Callable[[], Usage] | None) -> None:
        """Read the agent's cumulative usage from ``source`` at each step (for the ``tokens`` policy)."""
        self._usage_source = source
        self._usage_mark = source() if source is not None else None

    # -- episode -------------------------------------------------------------------------------------
    async def reset(self, *, task: TaskSpec | None = None, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        chosen = self.choose_task(task, seed, options)
        state = chosen.initial_state
        self._reset_episode_fields()
        self._variant = str(state.get("variant", "async"))
        self._seed = 0 if seed is None else seed
        try:
            self.world = World(state, seed=self._seed, variant=self._variant)
            self._latency = {name: latency(value) for name, value in state.get("latency", {}).items()}
        except (KeyError, ValueError, TypeError) as exc:
            raise SpecError(f"task {chosen.id!r}: invalid timed initial_state: {exc}") from exc
        self.world.scheduler.run_until(0.0)
        self._initial = WorldState(self.world.snapshot())
        self.task = chosen
        if self._usage_source is not None:
            self._usage_mark = self._usage_source()
        notes = self._take_notifications()
        obs = self._observation(f"[{self.world.clock()}] {chosen.instruction}", (), None, notes, 0.0)
        info = {"tools": self.tool_schemas, "policy": self._policy_text(), "task_id": chosen.id,
                "task_hash": chosen.hash, "env_id": chosen.env_id, "variant": self._variant,
                "thinking": self.thinking.model_dump(), "realtime": self.realtime}
        return obs, info

    async def step(self, action: Action, *, usage: Usage | None = None) -> StepResult:
        world = self._require()
        thinking = await self._think(usage)
        started = world.now
        account = _Accounting()
        results: list[ToolResult] = []
        error: str | None = None
        terminated = False
        if action.tool_calls:
            for call in action.tool_calls:
                results.append(await self._dispatch(call, account))
                world.scheduler.run_until(world.now)  # what a call set off for "now" happens before the next
            errors = [f"{r.name}: {r.error}" for r in results if r.error]
            error = "; ".join(errors) or None
        elif action.text is None:
            error = "empty action: send tool calls or a final message"
        else:
            self._final = action.text
            await self._advance(world.horizon_s, None, stop=lambda: world.in_flight() == 0)
            terminated = True
        truncated = not terminated and world.now >= world.horizon_s
        self._steps.append(StepTiming(step=len(self._steps), started_at=round(started, 6),
                                      ended_at=round(world.now, 6), thinking_s=round(thinking, 6),
                                      waiting_s=round(account.waiting_s, 6), idle_s=round(account.idle_s, 6)))
        notes = self._take_notifications()
        info: dict[str, Any] = {"time_s": world.now, "clock": world.clock()}
        reward = 0.0
        text = "Episode finished." if terminated else ("The day is over (horizon reached)." if truncated else "")
        if terminated or truncated:
            self._ended = True  # the kernel's Grading wrapper grades the episode now
        obs = self._observation(text, tuple(results), error, notes, thinking)
        self._wall_mark = self.clock.now()
        return StepResult(obs, reward, terminated, truncated, info)

    async def verify_context(self) -> TimedVerifyContext:
        world = self._require(allow_ended=True)
        if self.task is None:
            raise EnvError("verify() without an open episode")
        timeline = self.timeline()
        calls = [CallRecord(index=c.index, name=c.name, kind="read" if c.kind == "control" else c.kind,
                            arguments=c.arguments, ok=c.ok and c.done_seq is not None, error=c.error)
                 for c in timeline.calls]
        return TimedVerifyContext(calls=calls, final_answer=self._final, state=WorldState(world.snapshot()),
                                  timeline=timeline, initial_state=self._initial, task=self.task)

    def timeline(self) -> Timeline:
        """The episode so far, as data."""
        world = self._require(allow_ended=True)
        return Timeline(day_start_s=world.day_start_s, end_s=round(world.now, 6), variant=self._variant,
                        seed=self._seed, calls=tuple(c.freeze() for c in world.calls),
                        events=tuple(world.events), notifications=tuple(world.notifications),
                        steps=tuple(self._steps), thinking_policy=self.thinking.model_dump(mode="json"))

    async def close(self) -> None:
        self.world = None

    # -- time ----------------------------------------------------------------------------------------
    async def _think(self, usage: Usage | None) -> float:
        world = self._require()
        wall_now = self.clock.now()
        before = world.now
        if self.realtime:
            target = (wall_now - self._wall0) * self.speed
        else:
            if usage is None and self._usage_source is not None:
                current = self._usage_source()
                usage = usage_delta(current, self._usage_mark or Usage())
                self._usage_mark = current
            sample = ThinkingSample(step=len(self._steps), wall_s=wall_now - self._wall_mark, usage=usage)
            target = before + self.thinking.cost(sample)
        world.scheduler.run_until(max(before, target))
        return world.now - before

    async def _advance(self, target: float, account: _Accounting | None,
                       stop: Callable[[], bool] | None = None) -> bool:
        """Run the world event by event up to ``target``; stop early once ``stop()`` holds."""
        world = self._require()
        scheduler = world.scheduler
        while not (stop is not None and stop()):
            nxt = scheduler.next_time()
            if nxt is None or nxt > target:
                await self._pass(max(0.0, target - world.now), account)
                return stop() if stop is not None else False
            await self._pass(nxt - world.now, account)
            scheduler.step()
        return True

    async def _pass(self, seconds: float, account: _Accounting | None) -> None:
        world = self._require()
        if seconds <= 0:
            return
        if account is not None:
            account.waiting_s += seconds
            if world.in_flight() == 0:
                account.idle_s += seconds
        if self.realtime:
            await self.clock.sleep(seconds / self.speed)
        world.scheduler.clock.advance(seconds)  # the caller made sure no event falls inside

    # -- calls ---------------------------------------------------------------------------------------
    async def _dispatch(self, call: ToolCall, account: _Accounting) -> ToolResult:
        world = self._require()
        step = len(self._steps)

        def reject(kind: str, args: dict[str, Any] | None, error: str) -> ToolResult:
            seq = world.scheduler.next_seq()
            kept = args if args is None or _depth(args) <= MAX_KEPT_DEPTH else None  # the timeline must serialise
            world.calls.append(CallDraft(index=len(world.calls), step=step, name=call.name, kind=kind,
                                         arguments=kept, issued_at=world.now, issued_seq=seq, error=error,
                                         done_at=world.now, done_seq=seq))
            return ToolResult(call_id=call.id, name=call.name, content=error, error=error)

        spec = self.scenario.by_name.get(call.name) or CONTROLS.get(call.name)
        if spec is None:
            names = sorted([*self.scenario.by_name, *CONTROLS])
            return reject("unknown", None, f"unknown tool {call.name!r}; available: {', '.join(names)}")
        try:
            raw, args = parse_arguments(call.name, call.arguments, spec.args_model)
        except ArgumentsError as exc:
            return reject(spec.kind, exc.raw, str(exc))
        draft = CallDraft(index=len(world.calls), step=step, name=call.name, kind=spec.kind, arguments=raw,
                          issued_at=world.now, issued_seq=world.scheduler.next_seq())
        world.calls.append(draft)
        if spec.kind == "control":
            content = await self._control(draft, args, account)
            return ToolResult(call_id=call.id, name=call.name, content=content, error=draft.error)
        if self._variant == "async" and spec.slow:
            draft.handle = f"h{next(self._handles)}"
            delay = self._latency.get(spec.name, INSTANT).draw(world.rng)
            world.scheduler.schedule(f"_{draft.handle}", delay=delay,
                                     action=lambda _event: self._complete(draft, spec, args, notify=True))
            return ToolResult(call_id=call.id, name=call.name,
                              content=dumps({"handle": draft.handle, "status": "pending", "tool": spec.name}))
        content = self._complete(draft, spec, args, notify=False)
        return ToolResult(call_id=call.id, name=call.name, content=content, error=draft.error)

    def _complete(self, draft: CallDraft, spec: Tool, args: BaseModel, *, notify: bool) -> str:
        world = self._require(allow_ended=True)
        try:
            result = spec.fn(world, args)
        except ToolFailure as exc:
            draft.error = str(exc)
        except Exception as exc:
            raise EnvError(f"tool {spec.name} crashed: {exc!r}") from exc
        else:
            draft.ok = True
        draft.done_at, draft.done_seq = world.now, world.scheduler.next_seq()
        content = draft.error if draft.error is not None else dumps(result)
        if notify and draft.handle is not None:
            body = {"handle": draft.handle, "tool": spec.name}
            body.update({"error": draft.error} if draft.error is not None else {"result": result})
            world.notify("tool_result", draft.handle, dumps(body), completes=True)
        world.scheduler.poke()
        return content

    async def _control(self, draft: CallDraft, args: BaseModel, account: _Accounting) -> str:
        world = self._require()
        start = world.now
        woke_on: str | None = None
        timed_out = False
        if isinstance(args, WaitArgs):
            if (args.seconds is None) == (args.until is None):
                draft.error = "wait needs exactly one of 'seconds' or 'until'"
            else:
                try:
                    target = start + args.seconds if args.seconds is not None else world.to_virtual(args.until or "")
                except ValueError as exc:
                    draft.error = str(exc)
                else:
                    await self._advance(min(max(target, start), world.horizon_s), account)
        elif isinstance(args, WaitForNotificationArgs):
            source = args.source
            if source is not None and source in world.finished_sources:
                woke_on = source
            else:
                unseen = self._delivered

                def arrived() -> bool:
                    return any(source is None or n.source == source for n in world.notifications[unseen:])

                deadline = min(start + args.timeout, world.horizon_s)
                if await self._advance(deadline, account, stop=arrived):
                    woke_on = next(n.source for n in world.notifications[unseen:]
                                   if source is None or n.source == source)
                else:
                    timed_out = True
        draft.ok = draft.error is None
        draft.done_at, draft.done_seq = world.now, world.scheduler.next_seq()
        if draft.error is not None:
            return draft.error
        body: dict[str, Any] = {"waited_s": round(world.now - start, 3), "now": world.clock()}
        if isinstance(args, WaitForNotificationArgs):
            body.update({"woke_on": woke_on, "timed_out": timed_out})
        return dumps(body)

    # -- observations --------------------------------------------------------------------------------
    def _take_notifications(self) -> tuple[Notification, ...]:
        world = self._require(allow_ended=True)
        notes = tuple(world.notifications[self._delivered:])
        self._delivered = len(world.notifications)
        return notes

    def _observation(self, text: str, results: tuple[ToolResult, ...], error: str | None,
                     notes: tuple[Notification, ...], thinking: float) -> TimedObservation:
        world = self._require(allow_ended=True)
        lines = [f"[{world.clock()}] (+{thinking:.1f}s thinking)"] if self._steps else []
        if text:
            lines.append(text)
        if notes:
            lines.append(f"{len(notes)} new notification(s):")
            lines.extend(f"- {n.clock} {n.kind} from {n.source}: {n.content}" for n in notes)
        return TimedObservation(text="\n".join(lines), tool_results=results, last_action_error=error,
                                time_s=round(world.now, 6), clock=world.clock(), thinking_s=round(thinking, 6),
                                notifications=notes)

    def _policy_text(self) -> str:
        variant = ("Every tool answers within the same step." if self._variant == "sync" else
                   "Tools marked slow return a handle at once; their result arrives later as a notification "
                   "from that handle, and you may do other things meanwhile.")
        return (f"{self.scenario.policy}\n\nTime: the world keeps moving. Each step costs thinking time "
                f"({self.thinking.type} policy); use wait(seconds|until) or wait_for_notification(timeout, source) "
                f"to let time pass. {variant} A message without tool calls ends the episode.")

    def _require(self, *, allow_ended: bool = False) -> World:
        if self.world is None:
            raise EnvError("no open episode: call reset() first")
        if self._ended and not allow_ended:
            raise EnvError("the episode has ended: call reset()")
        return self.world
