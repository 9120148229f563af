"""The README's vector-layer examples, run exactly as printed there (one test per example).

``EXAMPLES`` is the source of the code blocks in README.md's "Many episodes at once" section; once the
section is in the README, ``test_readme_shows_these_examples`` keeps the two identical.
"""

import importlib
import re
from pathlib import Path

LOCKSTEP = '''\
from envgym.vector import GymnasiumVectorEnv

envs = GymnasiumVectorEnv("tool/assistant-v1", num_envs=4)      # a gymnasium.vector.VectorEnv
observations, infos = envs.reset(seed=0)                        # 4 JSON texts; infos["tools"]: the schemas
actions = ['{"name": "search_contacts", "arguments": {"query": "Keiko"}}'] * 4
observations, rewards, terminations, truncations, infos = envs.step(actions)
observations, rewards, terminations, truncations, infos = envs.step(["All done."] * 4)  # final answers
print(terminations, rewards)                                    # graded: each reward is a verdict's score
envs.close()
'''

LOCKSTEP_ASYNC = '''\
import asyncio

import envgym
from envgym.vector import AsyncVectorEnv


async def main():
    envs = AsyncVectorEnv([lambda: envgym.make("tool/assistant-v1")] * 4, autoreset_mode="SameStep")
    async with envs:
        observations, infos = await envs.reset(seed=0)          # envgym Observations, all reset at once
        observations, rewards, terminations, truncations, infos = await envs.step(["Nothing to do."] * 4)
        print(terminations, infos["_final_obs"])                # ended and already reset, in the same step


asyncio.run(main())
'''

POOL = '''\
import asyncio

import envgym
from envgym.agents.baseline import OracleFactory
from envgym.vector import EpisodePool


async def main():
    tasks = envgym.load_suite("tool-assistant")
    async with EpisodePool(OracleFactory(), concurrency=16) as pool:
        async for trajectory in pool.run(tasks):                # as each episode ends
            print(trajectory.task_id, trajectory.outcome.value, trajectory.reward)


asyncio.run(main())
'''

CHANNEL = '''\
import asyncio

import envgym
from envgym.vector import Channel


def policy(ready):
    """Stands in for one batched model call: replays each task's reference solution."""
    return {r.episode_id: r.task.solution[r.step] for r in ready}


async def main():
    tasks = envgym.load_suite("tool-assistant", split="test")
    async with Channel(tasks, concurrency=8) as channel:
        while True:
            batch = await channel.recv(min_batch=4, max_wait=0.05)   # whichever episodes wait for an action
            channel.send(policy(batch.ready))
            for episode_id, trajectory in batch.finished.items():
                print(episode_id, trajectory.task_id, trajectory.outcome.value)
            if batch.done:
                break


asyncio.run(main())
'''

EXAMPLES = {"lockstep": LOCKSTEP, "lockstep_async": LOCKSTEP_ASYNC, "pool": POOL, "channel": CHANNEL}


def _run(code, capsys):
    exec(compile(code, "<README example>", "exec"), {"__name__": "__main__"})
    return capsys.readouterr().out


def test_lockstep_example(capsys):
    out = _run(LOCKSTEP, capsys)
    assert out.startswith("[ True  True  True  True]")


def test_lockstep_async_example(capsys):
    out = _run(LOCKSTEP_ASYNC, capsys)
    assert out.startswith("[ True  True  True  True] [ True  True  True  True]")


def test_pool_example(capsys):
    import envgym

    lines = _run(POOL, capsys).splitlines()
    assert len(lines) == len(envgym.load_suite("tool-assistant"))
    assert all(line.endswith("success 1.0") for line in lines)


def test_channel_example(capsys):
    import envgym

    lines = _run(CHANNEL, capsys).splitlines()
    tests = envgym.load_suite("tool-assistant", split="test")
    assert sorted(int(line.split()[0]) for line in lines) == list(range(len(tests)))
    assert all(line.endswith("success") for line in lines)


def test_readme_shows_these_examples():
    readme = Path(__file__).parents[2] / "README.md"
    blocks = re.findall(r"```python\n(.*?)```", readme.read_text(), flags=re.S)
    shown = [b for b in blocks if "envgym.vector" in b and "envgym.vector.ray" not in b]
    assert shown, "README.md lost its vector section"
    assert sorted(shown) == sorted(EXAMPLES.values())


def test_readme_ray_example_names_what_exists():
    """The many-hosts example needs a Ray cluster (tests/vector/test_ray.py runs the pool itself); here it must
    at least compile and import only names that exist."""
    readme = Path(__file__).parents[2] / "README.md"
    blocks = re.findall(r"```python\n(.*?)```", readme.read_text(), flags=re.S)
    ray_blocks = [b for b in blocks if "envgym.vector.ray" in b]
    assert ray_blocks, "README.md lost its Ray example"
    for block in ray_blocks:
        compile(block, "README.md", "exec")
        for module, names in re.findall(r"^from (envgym[\w.]*) import (.+)$", block, flags=re.M):
            imported = importlib.import_module(module)
            for name in names.split(","):
                assert hasattr(imported, name.strip()), f"{module} has no {name.strip()}"
