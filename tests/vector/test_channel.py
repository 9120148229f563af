import asyncio
from collections import Counter

import pytest
from vector_fakes import ChaosEnv, FakeSandbox, fake_tasks

from envgym.types import Action, Outcome
from envgym.vector import Channel, Job, UnknownEpisode


@pytest.fixture(autouse=True)
def _counters():
    ChaosEnv.reset_counters()
    yield
    assert ChaosEnv.open == 0 and FakeSandbox.running == 0


def _other_tasks():
    return {t for t in asyncio.all_tasks() if t is not asyncio.current_task()}


async def test_trainer_loop_plays_every_episode_to_the_end():
    tasks = fake_tasks(12, steps=3)
    handed = Counter()
    finished = {}
    async with Channel(tasks, concurrency=4, make_env=lambda _: ChaosEnv()) as channel:
        while True:
            batch = await channel.recv(min_batch=2)
            assert len(batch.ready) >= 1 or batch.finished or batch.done
            for ready in batch.ready:
                handed[ready.episode_id, ready.step] += 1
                assert (ready.step == 0) == bool(ready.info)  # the reset info comes with step 0 only
            channel.send({r.episode_id: Action.say(f"step {r.step}") for r in batch.ready})
            finished.update(batch.finished)
            if batch.done:
                break
    assert sorted(finished) == list(range(12))
    assert sorted(t.task_id for t in finished.values()) == [t.id for t in tasks]
    assert all(t.outcome is Outcome.SUCCESS and len(t.steps) == 3 for t in finished.values())
    assert set(handed.values()) == {1} and len(handed) == 12 * 3  # every observation handed out exactly once
    assert [s.action.text for s in finished[0].steps] == ["step 0", "step 1", "step 2"]
    assert not _other_tasks()


async def test_recv_batches_up_to_min_batch_and_never_waits_on_itself():
    async with Channel(fake_tasks(4, steps=5), concurrency=4, make_env=lambda _: ChaosEnv()) as channel:
        empty = await channel.recv(min_batch=1, max_wait=0)  # nothing has started yet: the bound returns at once
        assert empty.ready == [] and not empty.done
        first = await channel.recv(min_batch=4)
        assert len(first.ready) == 4
        channel.send({r.episode_id: "go" for r in first.ready[:2]})
        # two episodes wait on the trainer, so at most two can become ready: min_batch=4 must not deadlock
        second = await channel.recv(min_batch=4)
        assert sorted(r.episode_id for r in second.ready) == sorted(r.episode_id for r in first.ready[:2])
        assert all(r.step == 1 for r in second.ready)
        capped = await channel.recv(min_batch=1, max_wait=0)  # all four wait on the trainer: returns at once
        assert capped.ready == []


async def test_max_batch_leaves_the_rest_for_the_next_recv():
    async with Channel(fake_tasks(5), concurrency=5, make_env=lambda _: ChaosEnv()) as channel:
        one = await channel.recv(min_batch=5, max_batch=2)
        two = await channel.recv(min_batch=3)
        assert len(one.ready) == 2 and len(two.ready) == 3
        assert not {r.episode_id for r in one.ready} & {r.episode_id for r in two.ready}


async def test_episodes_advance_independently():
    async with Channel(fake_tasks(2, steps=3), concurrency=2, make_env=lambda _: ChaosEnv()) as channel:
        batch = await channel.recv(min_batch=2)
        fast, slow = batch.ready
        for step in (1, 2):
            channel.send({fast.episode_id: "go"})
            (again,) = (await channel.recv(min_batch=1)).ready
            assert again.episode_id == fast.episode_id and again.step == step
        channel.send({fast.episode_id: "go"})
        batch = await channel.recv(min_batch=1, max_wait=0.01)
        while fast.episode_id not in batch.finished:
            batch = await channel.recv(min_batch=1, max_wait=0.01)
        assert batch.finished[fast.episode_id].outcome is Outcome.SUCCESS  # done while the other never moved
        channel.send({slow.episode_id: "go"})
        assert (await channel.recv()).ready[0].step == 1


async def test_send_rejects_unknown_ids_and_ignores_expired_ones():
    tasks = fake_tasks(2, step_timeout_s=0.05)
    async with Channel(tasks, concurrency=1, make_env=lambda _: ChaosEnv()) as channel:
        with pytest.raises(UnknownEpisode):
            channel.send({99: "go"})
        batch = await channel.recv()
        (ready,) = batch.ready
        batch = await channel.recv()  # nothing can become ready without the trainer: returns at once
        assert batch.ready == [] and not batch.finished
        while ready.episode_id not in batch.finished:  # the trainer sits on the action past the step deadline
            await asyncio.sleep(0.01)
            batch = await channel.recv()
        expired = batch.finished[ready.episode_id]
        assert expired.outcome is Outcome.FAILURE and expired.error_type == "PolicyTimeout"  # the policy was late
        channel.send({ready.episode_id: "too late"})  # ignored, no error
        if not batch.ready:
            batch = await channel.recv()
        (nxt,) = batch.ready
        with pytest.raises(UnknownEpisode):
            channel.send({nxt.episode_id + 1: "go"})


async def test_leaving_the_channel_cancels_episodes_and_closes_envs():
    async with Channel(fake_tasks(50, steps=100), concurrency=8, make_env=lambda _: ChaosEnv()) as channel:
        batch = await channel.recv(min_batch=8)
        channel.send({r.episode_id: "go" for r in batch.ready[:4]})
        await asyncio.sleep(0)
    assert ChaosEnv.created == 8 and ChaosEnv.open == 0 and not _other_tasks()


async def test_failing_task_iterator_surfaces_in_recv():
    def tasks():
        yield from fake_tasks(1)
        raise ValueError("bad task file")

    async with Channel(tasks(), concurrency=2, make_env=lambda _: ChaosEnv()) as channel:
        with pytest.raises(ValueError, match="bad task file"):
            while True:
                batch = await channel.recv()
                channel.send({r.episode_id: "go" for r in batch.ready})


async def test_jobs_keep_their_run_settings_and_hinted_lists_start_longest_first():
    short, long = fake_tasks(2, steps=5)
    jobs = [Job(short, max_steps=2, cost_hint=1.0), Job(long, cost_hint=5.0)]
    async with Channel(jobs, concurrency=1, make_env=lambda _: ChaosEnv()) as channel:
        started, finished = [], {}
        while not (batch := await channel.recv()).done:
            started += [r.task.id for r in batch.ready if r.step == 0]
            channel.send({r.episode_id: "go" for r in batch.ready})
            finished.update({t.task_id: t for t in batch.finished.values()})
        finished.update({t.task_id: t for t in batch.finished.values()})
    assert started == [long.id, short.id]  # the larger hint first, although given second
    assert len(finished[short.id].steps) == 2 and finished[short.id].outcome is Outcome.TRUNCATED  # its step cap
    assert len(finished[long.id].steps) == 5 and finished[long.id].outcome is Outcome.SUCCESS


async def test_an_episode_that_expires_before_recv_is_never_handed_out():
    async with Channel(fake_tasks(2, step_timeout_s=0.05), concurrency=2, make_env=lambda _: ChaosEnv()) as channel:
        first = await channel.recv(min_batch=2)
        channel.send({first.ready[0].episode_id: "go"})  # the other one the trainer sits on
        await asyncio.sleep(0.5)  # both expire: one parked again but not yet handed out, one handed out
        finished, handed = {}, []
        while not (batch := await channel.recv(max_wait=0.05)).done:
            handed += batch.ready
            finished.update(batch.finished)
        handed += batch.ready
        finished.update(batch.finished)
    assert handed == []  # an ended episode's observation never reaches the trainer
    assert sorted(finished) == [0, 1] and all(t.error_type == "PolicyTimeout" for t in finished.values())
