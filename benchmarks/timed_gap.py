"""Success on synchronous versus asynchronous variants of the same goals, per timed family.

Agents: ``oracle`` (the reference solution, replayed blind), ``one-at-a-time`` (the reference solution's
calls, but each slow call or cooking job awaited before the next call starts: correct, never
interleaved), and ``random`` (envgym's random agent, ``--seeds`` seeds per task). Every episode runs under
the default thinking policy (fixed, 2 s a step). Prints success rates and the oracle's mean virtual time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from collections import defaultdict

import envgym
from envgym.agent import Agent
from envgym.agents.baseline import OracleAgent, RandomAgent
from envgym.check import env_tasks
from envgym.rollout import run_episode
from envgym.task import TaskSpec
from envgym.types import Action, Observation, ToolCall

FAMILIES = ("assistant", "backoffice", "kitchen")


class OneAtATime(Agent):
    """The reference calls, one per step, each awaited (its handle, or its cooking job) before the next."""

    name = "one-at-a-time"

    def __init__(self, task: TaskSpec) -> None:
        super().__init__()
        self._queue: list[Action] = []
        for action in task.solution or ():
            if action.tool_calls:
                self._queue.extend(Action(tool_calls=(call,)) for call in action.tool_calls)
            else:
                self._queue.append(action)
        self._last: Action | None = None

    async def act(self, observation: Observation) -> Action:
        await asyncio.sleep(0)
        source = None
        if self._last is not None and self._last.tool_calls and observation.tool_results:
            call, result = self._last.tool_calls[0], observation.tool_results[0]
            if result.error is None and result.content.startswith("{"):
                source = json.loads(result.content).get("handle")
            if call.name == "start_job" and result.error is None:
                source = json.loads(call.arguments)["job"]
        if source is not None:
            self._last = Action(tool_calls=(ToolCall(name="wait_for_notification",
                                                     arguments=json.dumps({"timeout": 3600, "source": source})),))
        else:
            self._last = self._queue.pop(0) if self._queue else Action(text="done")
        return self._last


async def success(task: TaskSpec, make_agent, seeds: range) -> tuple[float, float]:
    wins, times = 0, []
    async with envgym.make(task.env_id) as env:
        for seed in seeds:
            trajectory = await run_episode(env, make_agent(seed), task, seed=seed)
            wins += trajectory.reward == 1.0
            if trajectory.verdict is not None:
                times.append(trajectory.verdict.evidence.get("efficiency", {}).get("virtual_time_s", 0.0))
    return wins / len(seeds), statistics.fmean(times) if times else 0.0


async def main(seeds: int) -> None:
    table: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for family in FAMILIES:
        for task in env_tasks(f"timed/{family}-v1"):
            cell = table[(family, task.metadata["variant"])]
            rate, seconds = await success(task, lambda _s, t=task: OracleAgent(t), range(1))
            cell["oracle"].append(rate)
            cell["oracle_time"].append(seconds)
            cell["sequential"].append((await success(task, lambda _s, t=task: OneAtATime(t), range(1)))[0])
            digest = int(task.hash.removeprefix("sha256:")[:12], 16)
            cell["random"].append((await success(task, lambda s, d=digest: RandomAgent(s ^ d), range(seeds)))[0])
    print(f"Success rate per family and variant (default thinking policy: fixed 2 s/step; random: {seeds} seeds/task)")
    header = (f"{'family':<11} {'variant':<7} {'tasks':>5} {'oracle':>7} {'one-at-a-time':>14} {'random':>7} "
              f"{'oracle time':>12}")
    print(header)
    print("-" * len(header))
    for (family, variant), cell in sorted(table.items()):
        minutes = statistics.fmean(cell["oracle_time"]) / 60
        print(f"{family:<11} {variant:<7} {len(cell['oracle']):>5} {statistics.fmean(cell['oracle']):>7.0%} "
              f"{statistics.fmean(cell['sequential']):>14.0%} {statistics.fmean(cell['random']):>7.1%} "
              f"{minutes:>9.1f} min")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="random-agent episodes per task")
    asyncio.run(main(parser.parse_args().seeds))
