"""The rollout loop: one episode of one agent in one env, always ending in a Trajectory.

``run_episode`` resets the env with the task, steps the agent until the episode terminates or is
truncated, and attributes every failure: an agent that cannot act (``PolicyError``, a step over its
deadline) or an env/verifier that breaks makes the outcome ``infra_error`` with the error recorded; running
out of the episode deadline truncates the episode and grades it as it stands. Only cancellation
propagates (after cleanup). The agent is closed in ``finally``; the env belongs to the caller.
"""

from __future__ import annotations

import asyncio
import traceback

from envgym.agent import Agent
from envgym.clock import Clock, SystemClock
from envgym.env import Env
from envgym.errors import EnvgymError, PolicyError, PolicyTimeout, StepTimeout
from envgym.task import TaskSpec
from envgym.trajectory import StepRecord, Trajectory
from envgym.types import Observation, Outcome, Timing, Verdict


async def _timed(awaitable, seconds: float | None, error: type[Exception], what: str):
    try:
        async with asyncio.timeout(seconds):
            return await awaitable
    except TimeoutError as exc:
        if isinstance(exc, EnvgymError):
            raise
        raise error(f"{what} exceeded its {seconds:g}s deadline") from None


async def run_episode(env: Env, agent: Agent, task: TaskSpec, *, seed: int | None = None,
                      clock: Clock | None = None) -> Trajectory:
    clock = clock or SystemClock()
    limits = task.limits
    started_wall, started = clock.wall(), clock.now()
    steps: list[StepRecord] = []
    env_s = agent_s = 0.0
    verdict: Verdict | None = None
    reward = 0.0
    outcome = Outcome.FAILURE
    error: BaseException | None = None
    first: Observation | None = None
    env.attach_usage(lambda: agent.usage)  # envs where thinking costs time charge by the agent's tokens
    try:
        async with asyncio.timeout(limits.episode_timeout_s):
            t = clock.now()
            obs, info = await _timed(env.reset(task=task, seed=seed), limits.step_timeout_s, StepTimeout, "reset")
            first = obs
            env_s += clock.now() - t
            await agent.reset(obs, info)
            while True:
                t = clock.now()
                action = await _timed(agent.act(obs), limits.step_timeout_s, PolicyTimeout, "the agent's step")
                t_env = clock.now()
                agent_s += t_env - t
                obs, reward, terminated, truncated, info = await _timed(
                    env.step(action), limits.step_timeout_s, StepTimeout, "the environment's step")
                spent = clock.now() - t_env
                env_s += spent
                steps.append(StepRecord(index=len(steps), action=action, observation=obs, reward=reward,
                                        agent_s=t_env - t, env_s=spent))
                if terminated or truncated:
                    verdict = info.get("verdict")
                    if verdict is not None:
                        outcome = Outcome.SUCCESS if verdict.passed else (
                            Outcome.TRUNCATED if truncated else Outcome.FAILURE)
                    else:
                        outcome = Outcome.TRUNCATED if truncated else Outcome.FAILURE
                    break
    except TimeoutError as exc:
        if isinstance(exc, StepTimeout | PolicyTimeout):
            outcome, error = Outcome.INFRA_ERROR, exc
        else:  # the episode deadline: grade what the agent achieved
            outcome = Outcome.TRUNCATED
            try:
                verdict = await asyncio.wait_for(env.verify(), timeout=30)
                reward = verdict.score
                if verdict.passed:
                    outcome = Outcome.SUCCESS
            except Exception as grade_exc:
                outcome, error = Outcome.INFRA_ERROR, grade_exc
    except (PolicyError, EnvgymError) as exc:
        outcome, error = Outcome.INFRA_ERROR, exc
    except Exception as exc:
        outcome, error = Outcome.INFRA_ERROR, exc
    finally:
        env.attach_usage(None)
        await agent.close()
    usage = agent.usage
    timing = Timing(started_at=started_wall, wall_s=clock.now() - started, env_s=env_s, agent_s=agent_s)
    message = None
    if error is not None:
        message = f"{type(error).__name__}: {error}"
        if not isinstance(error, EnvgymError):
            message += "\n" + "".join(traceback.format_exception(error, limit=-3))
    return Trajectory(task_id=task.id, task_hash=task.hash, env_id=task.env_id, seed=seed, initial_observation=first,
                      steps=tuple(steps), outcome=outcome, verdict=verdict,
                      reward=verdict.score if verdict else (0.0 if error else reward), usage=usage, timing=timing,
                      error=message, error_type=type(error).__name__ if error else None,
                      token_data=list(agent.token_data))
