"""The kernel base of time-evolving environments: a world that keeps moving, with any engine behind it.

Read with :mod:`envgym.timed.world` and :mod:`envgym.timed.tools`: the three docstrings are the contract of
the timed base (``docs/families/timed.md`` walks through it). :class:`TimedWorldEnv` does everything about
time; a plug-in supplies the world. A subclass sets ``tools`` (:class:`~envgym.timed.tools.TimedTool`, its
engine's actions) and implements ``build_world(task, *, seed, prepared)``, returning a
:class:`~envgym.timed.world.TimedWorld` subclass that wraps its engine; optionally ``world_policy()`` (what
the agent is told about the world) and ``prepare_task(task)`` (heavy per-task work, see below). Class
variables: ``unit``, whether its clock counts seconds (``"s"``) or steps (``"step"``); ``default_thinking``,
what a decision costs when the run does not say (the kernel's ``fixed:2`` otherwise: 2 s, or 2 steps on a
step clock; the agent is told the charge either way). One episode, step by step:

0. **Reset** builds the world and shows the instruction, then the world's ``describe()`` text.
1. **Thinking costs time.** Before an action takes effect the world runs for the charge of the env's
   thinking policy (:mod:`envgym.timed.thinking`). In real-time mode the world follows the env's clock
   instead (the wall clock unless one is injected).
2. **Calls** run in order at the current virtual time, each checked before any time passes (the order of a
   call: :mod:`envgym.timed.tools`). A ``slow`` tool in an ``async`` world returns a handle at once and its
   result arrives later as a ``tool_result`` notification; a tool with a ``duration`` keeps the agent busy
   that long (the world runs meanwhile), then takes effect; an ``at_tick`` tool is performed as the world's
   next tick. Whatever a call sets off for the current time happens before the next call. A ``str`` result
   reaches the agent as plain text, anything else as JSON. The kernel's wait tools let time pass: ``wait``
   (seconds or ``until`` a time of day; on a step clock, ``steps``) and ``wait_for_notification(timeout,
   source?)``.
3. **Notifications** since the last observation come with the observation (:class:`TimedObservation`).
4. **The end**, recorded in the timeline (``ended_by``) and ``info``. A message without tool calls is the
   final answer: the agent's calls still in flight (``TimedWorld.in_flight``, not the engine's own
   ``pending`` effects) are drained, then the episode terminates. The **world** terminates it the moment its
   ``finished()`` holds (asked after every call and every event, thinking and waits included): calls left in
   the action are not run, one taking time is cut. Either way the kernel grades it. The world's ``horizon``
   or the **virtual-time budget** truncates it: the task's ``limits.max_virtual_time``, capped by the run's
   ``max_virtual_time=`` (``envgym eval --max-virtual-time``) and by ``virtual_time_factor=`` times the
   virtual time the task's reference solution takes in this env with the same seed
   (``--virtual-time-factor 1.0``: an optimal agent's time). An action decided after the time is up does
   nothing; an action taking time is cut at the end.

Accounting (per step, in the timeline: :mod:`envgym.timed.timeline`): thinking, waiting, idle (waiting
with no call in flight and nothing ``pending``), opportunity idle (waiting while the world said another
action was available), acting (inside actions that take time), and the changes of every world path a task's
``final_state`` checks name, so time to goal holds for state goals too. The timeline is in every verdict's
evidence; :mod:`envgym.timed.replay` re-runs and re-grades a recorded run of any such env.

**Preparation.** ``prepare_task(task)`` (synchronous, e.g. build a 1-2 GB goal in 50 s) runs in a worker
thread, once per task hash (:class:`~envgym.timed.prepare.TaskCache`, one per env class); the rollout
calls :meth:`prepare` before ``reset`` and outside the step deadlines, and ``build_world`` receives the
result as ``prepared``. Determinism: the same task, seed, actions and thinking charges give the same
timeline.
"""

from __future__ import annotations

import copy
import functools
import inspect
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel

from envgym.clock import Clock
from envgym.env import Env, StepResult
from envgym.errors import EnvError, SpecError
from envgym.task import TaskSpec
from envgym.timed.grading import TimedVerifyContext, goal_paths
from envgym.timed.prepare import TaskCache
from envgym.timed.thinking import ThinkingSample, describe_charge, thinking_policy, usage_delta
from envgym.timed.timeline import Notification, StateChange, StepTiming, Timeline
from envgym.timed.tools import (
    TimedTool,
    ToolFailure,
    WaitArgs,
    WaitForNotificationArgs,
    WaitStepsArgs,
    WaitStepsForNotificationArgs,
    control_tools,
)
from envgym.timed.world import CallDraft, TimedWorld, WorldState
from envgym.tools.args import ArgumentsError, parse_arguments
from envgym.types import Action, Observation, ToolCall, ToolResult, Usage
from envgym.verify import CallRecord

MAX_KEPT_DEPTH = 32
"""A rejected call's arguments nested deeper than this are left out of the timeline (it is serialised into the
verdict, and a few hundred levels exceed what serialisation allows)."""

_CACHES: dict[type, TaskCache] = {}


class TimedObservation(Observation):
    """An observation with the time: ``time_s`` since the start (steps on a step clock), the clock text, the
    thinking charge of the action that led here, and the notifications delivered with it."""

    time_s: float = 0.0
    clock: str = ""
    thinking_s: float = 0.0
    notifications: tuple[Notification, ...] = ()


@dataclass
class _Accounting:
    waiting_s: float = 0.0
    idle_s: float = 0.0
    acting_s: float = 0.0
    opportunity_idle_s: float = 0.0
    opportunity_known: bool = False


def dumps(value: Any) -> str:
    """Compact, key-sorted JSON (the kernel's own replies: handles, waits)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def as_text(result: Any) -> str:
    """A tool's result as the agent reads it: a ``str`` as it is, anything else as :func:`dumps`."""
    return result if isinstance(result, str) else dumps(result)


def _depth(value: Any) -> int:
    depth, level = 0, [value]
    while level and depth <= MAX_KEPT_DEPTH:
        depth += 1
        level = [v for item in level if isinstance(item, dict | list)
                 for v in (item.values() if isinstance(item, dict) else item)]
    return depth - 1 if not level else depth


class TimedWorldEnv(Env):
    """Base of time-evolving envs; a plug-in supplies the world (see the module docstring)."""

    # Over the ~600-line guide on purpose: one episode's state machine (thinking, calls, waits, the end) reads
    # and writes one set of episode fields; split, each part would reach into the others' private state.

    time_evolving: ClassVar[bool] = True
    virtual_time: ClassVar[bool] = True
    has_write_actions: ClassVar[bool] = True
    unit: ClassVar[Literal["s", "step"]] = "s"
    """The clock of this env's worlds: seconds, or steps."""
    cache_entries: ClassVar[int] = 8
    """How many tasks' ``prepare_task`` results the class keeps (least recently used go first)."""
    tools: tuple[TimedTool, ...] = ()
    """The engine's actions (the wait tools are added by the kernel)."""
    default_thinking: ClassVar[Any] = None
    """The thinking policy when the caller gives none (a policy, dict or short string); None: the kernel's
    ``fixed:2``, which is 2 steps a decision on a step clock. A turn-based engine should name its own."""

    def __init__(self, *, thinking: Any = None, realtime: bool = False, speed: float = 1.0,
                 clock: Clock | None = None, max_virtual_time: float | None = None,
                 virtual_time_factor: float | None = None) -> None:
        super().__init__(clock=clock)
        if speed <= 0:
            raise SpecError("speed must be positive")
        if max_virtual_time is not None and max_virtual_time <= 0:
            raise SpecError(f"max_virtual_time must be positive, not {max_virtual_time}")
        if virtual_time_factor is not None and virtual_time_factor <= 0:
            raise SpecError(f"virtual_time_factor must be positive, not {virtual_time_factor}")
        if virtual_time_factor is not None and realtime:
            raise SpecError("virtual_time_factor needs simulated time (the reference run would take real time)")
        try:
            self.thinking = thinking_policy(thinking if thinking is not None else self.default_thinking)
        except ValueError as exc:
            raise SpecError(f"invalid thinking policy: {exc}") from None
        self.realtime = realtime
        self.speed = speed
        self.max_virtual_time = max_virtual_time
        self.virtual_time_factor = virtual_time_factor
        self.world: TimedWorld | None = None
        self._usage_source: Callable[[], Usage] | None = None
        self._reset_episode_fields()

    # -- what a plug-in provides ---------------------------------------------------------------------
    def build_world(self, task: TaskSpec, *, seed: int, prepared: Any) -> TimedWorld:
        """The episode's world for ``task`` (may be ``async``); raise KeyError/ValueError/TypeError for bad data."""
        raise NotImplementedError(f"{type(self).__name__} must implement build_world()")

    def world_policy(self) -> str:
        """What the agent is told about the world (the kernel adds how time works)."""
        return ""

    def prepare_task(self, task: TaskSpec) -> Any:
        """Heavy per-task work, run in a thread once per task hash; its result reaches ``build_world``."""
        return None

    # -- tools ---------------------------------------------------------------------------------------
    @property
    def controls(self) -> dict[str, TimedTool]:
        return control_tools(self.unit)

    @functools.cached_property
    def _by_name(self) -> dict[str, TimedTool]:
        found = {t.name: t for t in self.tools}
        if len(found) != len(self.tools) or set(found) & set(self.controls):
            raise EnvError(f"{type(self).__name__}: tool names must be unique and not wait/wait_for_notification")
        return {**found, **self.controls}

    @functools.cached_property
    def tool_schemas(self) -> list[dict[str, Any]]:
        """The OpenAI function schemas of the engine's tools, then the wait tools."""
        return [t.schema() for t in self._by_name.values()]

    def _tool(self, name: str) -> TimedTool | None:
        return self._by_name.get(name)

    # -- episode fields ------------------------------------------------------------------------------
    def _reset_episode_fields(self) -> None:
        self._seed = 0
        self._steps: list[StepTiming] = []
        self._delivered = 0
        self._final: str | None = None
        self._ended = False
        self._handles = itertools.count(1)
        self._wall0 = self._wall_mark = self.clock.now()
        self._usage_mark: Usage | None = None
        self._initial: WorldState | None = None
        self._budget: float | None = None
        self._late = False
        self._watched: dict[str, Any] = {}
        self._changes: list[StateChange] = []
        self._end_reason: str | None = None
        self._ended_by: str | None = None

    def attach_usage(self, source: Callable[[], Usage] | None) -> None:
        """Read the agent's cumulative usage from ``source`` at each step (for the ``tokens``/``steps`` policies)."""
        self._usage_source = source
        self._usage_mark = source() if source is not None else None

    @property
    def budget(self) -> float | None:
        """This episode's virtual-time budget (the task's, capped by the run's), or None."""
        return self._budget

    @property
    def end(self) -> float:
        """When this episode's time is up: the world's horizon or the budget, whichever comes first."""
        world = self._require(allow_ended=True)
        return world.horizon if self._budget is None else min(world.horizon, self._budget)

    # -- preparation ---------------------------------------------------------------------------------
    def _prepares(self) -> bool:
        return type(self).prepare_task is not TimedWorldEnv.prepare_task

    def _cache(self) -> TaskCache:
        cache = _CACHES.get(type(self))
        if cache is None:
            cache = _CACHES[type(self)] = TaskCache(max_entries=self.cache_entries)  # shared: no instance bound
        return cache

    async def prepare(self, task: TaskSpec) -> None:
        """Run ``prepare_task`` for ``task`` in a thread, unless its result is cached (keyed by the task hash)."""
        if self._prepares():
            await self._cache().prepare(task, self.prepare_task)

    # -- episode -------------------------------------------------------------------------------------
    async def reset(self, *, task: TaskSpec | str | None = None, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        chosen = self.choose_task(task, seed, options)
        prepared = await self._cache().prepare(chosen, self.prepare_task) if self._prepares() else None
        episode_seed = 0 if seed is None else seed
        budgets = [b for b in (chosen.limits.max_virtual_time, self.max_virtual_time) if b is not None]
        if self.virtual_time_factor is not None:
            reference = await self._reference_time(chosen, episode_seed, prepared)
            if reference is not None:
                budgets.append(round(self.virtual_time_factor * reference, 6))
        world = await self._open(chosen, episode_seed, prepared, min(budgets) if budgets else None)
        if self._usage_source is not None:
            self._usage_mark = self._usage_source()
        notes = self._take_notifications()
        opening = "\n\n".join(t for t in (f"[{world.clock()}] {chosen.instruction}", world.describe()) if t)
        obs = self._observation(opening, (), None, notes, 0.0)
        info = {"tools": self.tool_schemas, "policy": self.policy_text(), "task_id": chosen.id,
                "task_hash": chosen.hash, "env_id": chosen.env_id, "variant": world.variant,
                "thinking": self.thinking.model_dump(), "realtime": self.realtime, "unit": self.unit,
                "time_budget": self._budget}
        return obs, info

    async def _open(self, task: TaskSpec, seed: int, prepared: Any, budget: float | None) -> TimedWorld:
        """Start an episode of ``task``: a fresh world at time 0 with ``budget``."""
        self._reset_episode_fields()
        self._seed = seed
        try:
            world = self.build_world(task, seed=seed, prepared=prepared)
            if inspect.isawaitable(world):
                world = await world
        except (KeyError, ValueError, TypeError) as exc:
            raise SpecError(f"task {task.id!r}: invalid timed initial_state: {exc}") from exc
        if not isinstance(world, TimedWorld):
            raise EnvError(f"{type(self).__name__}.build_world returned {type(world).__name__}, not a TimedWorld")
        if world.unit != self.unit:
            raise EnvError(f"{type(self).__name__} counts time in {self.unit!r} but its world in {world.unit!r}")
        self.world, self._budget, self.task = world, budget, task
        self._watched = {path: object() for path in goal_paths(task)}
        self._watch()
        world.scheduler.on_fired(lambda _fired: self._changed())
        world.wake()
        world.scheduler.run_until(0.0)
        self._initial = WorldState(world.snapshot())  # from here on the world is asked whether it is finished
        return world

    async def _reference_time(self, task: TaskSpec, seed: int, prepared: Any) -> float | None:
        """The virtual time the task's reference solution takes here, same seed, thinking policy without usage
        (None without a solution): ``virtual_time_factor`` times it is the episode's budget."""
        if not task.solution:
            return None
        source, self._usage_source = self._usage_source, None
        try:
            world = await self._open(task, seed, prepared, None)
            for action in task.solution:
                result = await self.step(action)
                if result.terminated or result.truncated:
                    break
            return world.now
        finally:
            self._usage_source = source

    async def step(self, action: Action, *, usage: Usage | None = None) -> StepResult:
        world = self._require()
        thinking = await self._think(usage)
        started = world.now
        account = _Accounting()
        results: list[ToolResult] = []
        error: str | None = None
        terminated = False
        if self._late or self._finished:
            pass  # decided after the time was up, or the world finished meanwhile: the action does nothing
        elif action.tool_calls:
            for call in action.tool_calls:
                if self._finished:
                    why = f"not run: the episode ended ({self._end_reason})"
                    results.append(ToolResult(call_id=call.id, name=call.name, content=why, error=why))
                    continue
                results.append(await self._dispatch(call, account))
                self._run_until(world.now)  # what a call set off for "now" happens before the next
            errors = [f"{r.name}: {r.error}" for r in results if r.error]
            error = "; ".join(errors) or None
        elif action.text is None:
            error = "empty action: send tool calls or a final message"
        else:
            self._final = action.text
            await self._advance(self.end, None, stop=lambda: world.in_flight() == 0)
            terminated, self._ended_by = True, "final_answer"
        if not terminated and self._finished:
            terminated, self._ended_by = True, "world"
        truncated = not terminated and world.now >= self.end
        self._steps.append(StepTiming(
            step=len(self._steps), started_at=round(started, 6), ended_at=round(world.now, 6),
            thinking_s=round(thinking, 6), waiting_s=round(account.waiting_s, 6), idle_s=round(account.idle_s, 6),
            acting_s=round(account.acting_s, 6),
            opportunity_idle_s=round(account.opportunity_idle_s, 6) if account.opportunity_known else None))
        notes = self._take_notifications()
        info: dict[str, Any] = {"time_s": world.now, "clock": world.clock()}
        text = "Episode finished." if terminated else ""
        if terminated:
            info["terminated_by"] = self._ended_by
            if self._ended_by == "world":
                info["end_reason"] = self._end_reason
                text = f"Episode finished: {self._end_reason}."
        if truncated:
            by_budget = self._budget is not None and self._budget < world.horizon
            info["truncated_by"] = self._ended_by = "virtual_time_budget" if by_budget else "horizon"
            text = (f"The time budget ({self._budget:g} {self._unit_word()}) is spent." if by_budget else
                    "The day is over (horizon reached).")
        if terminated or truncated:
            self._ended = True  # the kernel's Grading wrapper grades the episode now
        obs = self._observation(text, tuple(results), error, notes, thinking)
        self._wall_mark = self.clock.now()
        return StepResult(obs, 0.0, terminated, truncated, info)

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
        return Timeline(unit=world.unit, day_start_s=world.day_start_s, end_s=round(world.now, 6),
                        variant=world.variant, seed=self._seed, calls=tuple(c.freeze() for c in world.calls),
                        events=tuple(world.events), notifications=tuple(world.notifications),
                        steps=tuple(self._steps), thinking_policy=self.thinking.model_dump(mode="json"),
                        state_changes=tuple(self._changes), budget=self._budget, ended_by=self._ended_by,
                        end_reason=self._end_reason if self._ended_by == "world" else None)

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
            sample = ThinkingSample(step=len(self._steps), wall_s=wall_now - self._wall_mark, usage=usage,
                                    tick=world.tick)
            target = before + self.thinking.cost(sample)
        self._late = target > self.end
        self._run_until(min(max(before, target), max(before, self.end)))
        return world.now - before

    def _run_until(self, target: float) -> None:
        """Fire the events due by ``target`` and move the clock there (no real-time sleep: the caller's time has
        passed already), stopping where the world says it is finished."""
        scheduler = self._require().scheduler
        while not self._finished and (nxt := scheduler.next_time()) is not None and nxt <= target:
            scheduler.step()
        if not self._finished and target > scheduler.now:
            scheduler.clock.advance(target - scheduler.now)

    async def _advance(self, target: float, account: _Accounting | None,
                       stop: Callable[[], bool] | None = None) -> bool:
        """Run the world event by event up to ``target``; stop early once ``stop()`` holds."""
        world = self._require()
        scheduler = world.scheduler
        while not self._finished and not (stop is not None and stop()):
            nxt = scheduler.next_time()
            if nxt is None or nxt > target:
                await self._pass(max(0.0, target - world.now), account)
                break
            await self._pass(nxt - world.now, account)
            scheduler.step()
        return stop is not None and stop()

    async def _pass(self, seconds: float, account: _Accounting | None) -> None:
        world = self._require()
        if seconds <= 0:
            return
        if account is not None:
            account.waiting_s += seconds
            if world.in_flight() == 0 and world.pending() == 0:
                account.idle_s += seconds
            available = world.opportunity()
            if available is not None:
                account.opportunity_known = True
                if available:
                    account.opportunity_idle_s += seconds
        if self.realtime:
            await self.clock.sleep(seconds / self.speed)
        world.scheduler.clock.advance(seconds)  # the caller made sure no event falls inside

    @property
    def _finished(self) -> bool:
        """Whether the world said it is finished (see :meth:`_ask_world`)."""
        return self._end_reason is not None

    def _ask_world(self) -> None:
        """Ask the world whether it is finished (after every call and event, from the first action on)."""
        if self._end_reason is None and self._initial is not None and self.world is not None:
            said = self.world.finished()
            if said:
                self._end_reason = said if isinstance(said, str) else "the world says the episode is over"

    def _changed(self) -> None:
        self._watch()
        self._ask_world()

    def _watch(self) -> None:
        """Log every watched path whose value changed (the first reading is its initial value)."""
        if not self._watched or self.world is None:
            return
        for path, last in self._watched.items():
            value = self.world.value(path)
            if value != last or type(value) is not type(last):
                self._watched[path] = copy.deepcopy(value)
                self._changes.append(StateChange(path=path, time=round(self.world.now, 6), value=value))

    def _unit_word(self) -> str:
        return "steps" if self.unit == "step" else "s"

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

        spec = self._tool(call.name)
        if spec is None:
            names = sorted(self._by_name)
            return reject("unknown", None, f"unknown tool {call.name!r}; available: {', '.join(names)}")
        try:
            raw, args = parse_arguments(call.name, call.arguments, spec.args_model)
        except ArgumentsError as exc:
            return reject(spec.kind, exc.raw, str(exc))
        if world.now > self.end:  # defensive: thinking and durations stop at the end
            return reject(spec.kind, raw, "no time left: the episode's time is up")
        draft = CallDraft(index=len(world.calls), step=step, name=call.name, kind=spec.kind, arguments=raw,
                          issued_at=world.now, issued_seq=world.scheduler.next_seq())
        world.calls.append(draft)

        def failed(error: str) -> ToolResult:
            draft.error = error
            draft.done_at, draft.done_seq = world.now, world.scheduler.next_seq()
            return ToolResult(call_id=call.id, name=call.name, content=error, error=error)

        if spec.kind == "control":
            content = await self._control(draft, args, account)
            return ToolResult(call_id=call.id, name=call.name, content=content, error=draft.error)
        if spec.check is not None:  # before any time passes: a refusal costs nothing
            try:
                spec.check(world, args)
            except ToolFailure as exc:
                return failed(str(exc))
        if spec.at_tick:  # performed as the world's next tick, in place of its on_tick
            done: list[str] = []
            world._queue_turn(lambda: done.append(self._complete(draft, spec, args, notify=False)))
            start = world.now
            await self._advance(self.end, None, stop=lambda: bool(done))
            account.acting_s += world.now - start
            if not done:
                world._drop_turn()
                return failed(self._cut_text(start))
            return ToolResult(call_id=call.id, name=call.name, content=done[0], error=draft.error)
        if world.variant == "async" and spec.slow:
            draft.handle = f"h{next(self._handles)}"
            delay = world.latency_of(spec.name).draw(world.rng)
            world.scheduler.schedule(f"_{draft.handle}", delay=delay,
                                     action=lambda _event: self._complete(draft, spec, args, notify=True))
            return ToolResult(call_id=call.id, name=call.name,
                              content=dumps({"handle": draft.handle, "status": "pending", "tool": spec.name}))
        try:
            duration = spec.duration_of(world, args)
        except ToolFailure as exc:  # the older spelling of a check: still before any time passes
            return failed(str(exc))
        if duration > 0:  # the agent is busy; the world runs meanwhile
            start = world.now
            await self._advance(min(start + duration, self.end), None)
            account.acting_s += world.now - start
            if self._finished or world.now < start + duration:
                return failed(self._cut_text(start))
        content = self._complete(draft, spec, args, notify=False)
        return ToolResult(call_id=call.id, name=call.name, content=content, error=draft.error)

    def _cut_text(self, start: float) -> str:
        why = f"the episode ended ({self._end_reason})" if self._finished else "ran out of time"
        return f"{why} {self._require(allow_ended=True).now - start:g} {self._unit_word()} into it"

    def _complete(self, draft: CallDraft, spec: TimedTool, args: BaseModel, *, notify: bool) -> str:
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
        content = draft.error if draft.error is not None else as_text(result)
        if notify and draft.handle is not None:
            body = {"handle": draft.handle, "tool": spec.name}
            body.update({"error": draft.error} if draft.error is not None else {"result": result})
            text = content if draft.error is None and isinstance(result, str) else dumps(body)
            world.notify("tool_result", draft.handle, text, completes=True)
        world.scheduler.poke()
        world.wake()
        self._changed()
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
                    await self._advance(min(max(target, start), self.end), account)
        elif isinstance(args, WaitStepsArgs):
            await self._advance(min(start + args.steps * world.tick, self.end), account)
        elif isinstance(args, WaitForNotificationArgs | WaitStepsForNotificationArgs):
            source = args.source
            if source is not None and source in world.finished_sources:
                woke_on = source
            else:
                unseen = self._delivered

                def arrived() -> bool:
                    return any(source is None or n.source == source for n in world.notifications[unseen:])

                timeout = args.timeout * (world.tick if isinstance(args, WaitStepsForNotificationArgs) else 1.0)
                if await self._advance(min(start + timeout, self.end), account, stop=arrived):
                    woke_on = next(n.source for n in world.notifications[unseen:]
                                   if source is None or n.source == source)
                else:
                    timed_out = True
        draft.ok = draft.error is None
        draft.done_at, draft.done_seq = world.now, world.scheduler.next_seq()
        if draft.error is not None:
            return draft.error
        waited = round(world.now - start, 3)
        body: dict[str, Any] = ({"waited_steps": int(waited), "now": world.clock()} if self.unit == "step" else
                                {"waited_s": waited, "now": world.clock()})
        if isinstance(args, WaitForNotificationArgs | WaitStepsForNotificationArgs):
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
        charge = f"+{thinking:g} steps thinking" if self.unit == "step" else f"+{thinking:.1f}s thinking"
        lines = [f"[{world.clock()}] ({charge})"] if self._steps else []
        if text:
            lines.append(text)
        if notes:
            lines.append(f"{len(notes)} new notification(s):")
            lines.extend(f"- {n.clock} {n.kind} from {n.source}: {n.content}" for n in notes)
        return TimedObservation(text="\n".join(lines), tool_results=results, last_action_error=error,
                                time_s=round(world.now, 6), clock=world.clock(), thinking_s=round(thinking, 6),
                                notifications=notes)

    def policy_text(self) -> str:
        """What the agent is told: the world's policy, then how time works here."""
        world = self._require(allow_ended=True)
        variant = ("Every tool answers within the same step." if world.variant == "sync" else
                   "Tools marked slow return a handle at once; their result arrives later as a notification "
                   "from that handle, and you may do other things meanwhile.")
        waits = "wait(steps)" if self.unit == "step" else "wait(seconds|until)"
        ends = "A message without tool calls ends the episode" + (
            "; so does reaching the goal." if type(world).finished is not TimedWorld.finished else ".")
        charge = describe_charge(self.thinking, self.unit, world.tick)
        time = (f"Time: the world keeps moving. Deciding takes time: {charge} ({self.thinking.type} policy); "
                f"use {waits} or wait_for_notification(timeout, source) to let time pass. {variant} {ends}")
        if self._budget is not None:
            time += f" You have {self._budget:g} {self._unit_word()} of virtual time in all."
        policy = self.world_policy()
        return f"{policy}\n\n{time}" if policy else time

    def _require(self, *, allow_ended: bool = False) -> TimedWorld:
        if self.world is None:
            raise EnvError("no open episode: call reset() first")
        if self._ended and not allow_ended:
            raise EnvError("the episode has ended: call reset()")
        return self.world
