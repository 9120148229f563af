"""Fresh tasks for training (envgym.rl.stream): the stream is endless and seeded and never repeats a generator
seed; the solve-rate curriculum moves up after successes and down after failures; the trainer's group runner
feeds it on a fixed schedule; the trainer's config builds streams and curricula (a user's one included); the
real trainer on a tiny policy draws a fresh task per group, moves the level, and repeats itself (run again,
resumed, sync and async)."""

from __future__ import annotations

import itertools

import pytest

from envgym import registry
from envgym.env import Env, StepResult
from envgym.errors import SpecError
from envgym.generate import parse_task_id
from envgym.plugin import GenerationRequest, TaskSpec, register_generator
from envgym.rl.stream import Curriculum, SolveRateCurriculum, TaskStream
from envgym.rl.train.config import build_config
from envgym.rl.train.rollout import Group, GroupRunner, Member
from envgym.rl.train.trainer import select_tasks
from envgym.trajectory import Trajectory
from envgym.types import Action, Observation, Outcome
from envgym.verify import VerifyContext
from envgym.verify.spec import AnswerSpec


def sums(request: GenerationRequest) -> TaskSpec:
    rng = request.rng()
    a, b = rng.randrange(10 ** request.level), rng.randrange(10 ** request.level)
    return TaskSpec(id=request.task_id, env_id=request.env_id, split=request.split,
                    instruction=f"What is {a} plus {b}?", verifiers=(AnswerSpec(kind="exact", expected=str(a + b)),),
                    solution=(Action(text=str(a + b)),), metadata={"templates": [rng.choice(request.templates)]})


@pytest.fixture
def gen():
    with registry.isolated():
        register_generator("sums-gen", sums, family="toy", env_id="toy/sums-v1", levels=(1, 2, 3),
                           templates={"add": "train", "carry": "train", "big": "test"}, size=50)
        yield


class Recorder:
    """A user's curriculum: a scripted level, and every observation kept."""

    def __init__(self, levels, *, at: int = 2) -> None:
        self.levels, self.at, self.seen = tuple(levels), at, []

    def level(self) -> int:
        return self.at

    def observe(self, level: int, solved: bool) -> None:
        self.seen.append((level, solved))


def test_the_stream_is_endless_and_never_repeats_a_seed(gen):
    stream = TaskStream("sums-gen", seed=3)
    seeds = [stream.seed_at(i) for i in range(20_000)]
    assert len(set(seeds)) == len(seeds)  # the generator's suite has 50 seeds: a stream is not its suite
    assert max(seeds) > 50
    far = 10**15  # far past any suite's range, still a task of its own
    assert stream.seed_at(far) not in set(seeds) and stream.task(far).id.startswith("sums-gen.train.")
    tasks = list(itertools.islice(stream, 300))
    assert len({t.id for t in tasks}) == 300
    assert {parse_task_id(t.id)[1] for t in tasks} == {"train"}  # the run's split only
    assert {parse_task_id(t.id)[2] for t in tasks} == {1, 2, 3}  # no curriculum, no level: the generator's mix
    assert TaskStream("sums-gen", seed=3, split="test").task(0).metadata["templates"] == ["big"]


def test_the_same_run_seed_draws_the_same_tasks(gen):
    first = [t.hash for t in itertools.islice(TaskStream("sums-gen", seed=11), 40)]
    again = [t.hash for t in itertools.islice(TaskStream("sums-gen", seed=11), 40)]
    other = [t.hash for t in itertools.islice(TaskStream("sums-gen", seed=12), 40)]
    assert first == again
    assert not set(first) & set(other)
    assert {parse_task_id(t.id)[2] for t in itertools.islice(TaskStream("sums-gen", seed=1, level=3), 10)} == {3}


def test_the_curriculum_moves_up_after_successes_and_down_after_failures():
    curriculum = SolveRateCurriculum((1, 2, 3), target=0.5, window=4)
    assert isinstance(curriculum, Curriculum) and curriculum.level() == 1
    for _ in range(3):
        curriculum.observe(1, True)
    assert curriculum.level() == 1  # the window is not full yet
    curriculum.observe(1, True)
    assert curriculum.level() == 2
    for solved in (True, False, True, False):  # at the target: stays
        curriculum.observe(2, solved)
    assert curriculum.level() == 2
    for _ in range(4):
        curriculum.observe(1, False)  # an episode started before the move: not this level's
    assert curriculum.level() == 2
    for _ in range(4):
        curriculum.observe(2, True)  # the sliding window reaches 3 of 4 (0.75 >= 0.6) after 2 of them
    assert curriculum.level() == 3
    for _ in range(8):
        curriculum.observe(3, True)
    assert curriculum.level() == 3  # the top level
    for _ in range(4):
        curriculum.observe(3, False)
    assert curriculum.level() == 2
    for _ in range(8):
        curriculum.observe(curriculum.level(), False)
    assert curriculum.level() == 1
    assert [level for _, level in curriculum.moves] == [2, 3, 2, 1]
    with pytest.raises(SpecError, match="target"):
        SolveRateCurriculum((1, 2), target=1.0)
    with pytest.raises(SpecError, match="start level"):
        SolveRateCurriculum((1, 2), start=5)


def test_a_streams_levels_follow_its_curriculum_and_stay_with_their_index(gen):
    stream = TaskStream("sums-gen", seed=0, curriculum=SolveRateCurriculum((1, 2, 3), window=2))
    first = stream.task(0)
    assert parse_task_id(first.id)[2] == 1
    stream.observe(first, True)
    stream.observe(first.id, True)
    assert parse_task_id(stream.task(1).id)[2] == 2
    assert stream.task(0).hash == first.hash  # index 0 keeps the level it was first drawn at (a group's members)
    with pytest.raises(SpecError, match="no task of generator"):
        stream.observe("other-gen.train.l1.s0", True)


def test_a_stream_refuses_what_it_cannot_draw(gen):
    with pytest.raises(SpecError, match="did you mean 'sums-gen'"):
        TaskStream("sum-gen")
    with pytest.raises(SpecError, match="no level 4"):
        TaskStream("sums-gen", level=4)
    with pytest.raises(SpecError, match="not both"):
        TaskStream("sums-gen", level=1, curriculum=SolveRateCurriculum((1, 2, 3)))
    with pytest.raises(SpecError, match="not a Curriculum"):
        TaskStream("sums-gen", curriculum=object())
    with pytest.raises(SpecError, match="asked for level 9"):
        TaskStream("sums-gen", curriculum=Recorder((1, 2, 3), at=9)).task(0)


def _group(index: int, task: TaskSpec, solved: list[bool | None]) -> Group:
    outcome = {True: Outcome.SUCCESS, False: Outcome.FAILURE, None: Outcome.INFRA_ERROR}
    members = [Member(Trajectory(task_id=task.id, task_hash=task.hash, env_id=task.env_id, outcome=outcome[s],
                                 reward=float(bool(s))), [], 1) for s in solved]
    return Group(index, task, members, 0)


@pytest.mark.parametrize("staleness", [0, 1])
def test_the_runner_feeds_a_steps_outcomes_only_when_the_schedule_allows(gen, staleness):
    config = build_config({"suite": "unused", "mode": "async" if staleness else "sync", "max_staleness": staleness,
                           "group_size": 2, "groups_per_step": 2})
    curriculum = Recorder((1, 2, 3))
    runner = GroupRunner(None, None, config, TaskStream("sums-gen", seed=0, curriculum=curriculum))
    step0 = [runner.task_for(0), runner.task_for(1)]
    assert len({t.id for t in step0}) == 2  # every group a fresh task
    runner.observe_step(0, [_group(0, step0[0], [True, None]), _group(1, step0[1], [False, True])])
    runner.task_for(2)  # a group of step 1
    assert curriculum.seen == ([] if staleness else [(2, True), (2, False), (2, True)])  # infra errors left out
    runner.observe_step(1, [])
    runner.task_for(4)  # step 2
    assert curriculum.seen == [(2, True), (2, False), (2, True)]
    with pytest.raises(RuntimeError, match="step 2 are not in yet"):
        runner.task_for(6 + 2 * staleness)


def test_the_runner_records_levels_and_outcomes_and_replays_them(gen):
    config = build_config({"suite": "unused", "group_size": 2, "groups_per_step": 1})
    curriculum = Recorder((1, 2, 3))
    runner = GroupRunner(None, None, config, TaskStream("sums-gen", seed=0, curriculum=curriculum))
    task = runner.task_for(0)
    line = {"step": 1, **runner.observe_step(0, [_group(0, task, [True, False])])}
    assert line == {"step": 1, "task_ids": [task.id], "task_levels": [2], "task_solved": [[True, False]]}
    resumed = Recorder((1, 2, 3))
    again = GroupRunner(None, None, config, TaskStream("sums-gen", seed=0, curriculum=resumed))
    again.replay([line])
    assert again.task_for(1).id == runner.task_for(1).id
    assert resumed.seen == curriculum.seen == [(2, True), (2, False)]


def test_the_config_builds_a_stream_and_its_curriculum(gen):
    config = build_config({"generator": "sums-gen", "seed": 4,
                           "curriculum": {"type": "solve_rate", "window": 3, "start_level": 2}})
    stream = select_tasks(config)
    assert isinstance(stream, TaskStream) and stream.seed == 4 and stream.split == "train"
    assert isinstance(stream.curriculum, SolveRateCurriculum) and stream.curriculum.level() == 2
    assert stream.curriculum.window == 3
    mine = build_config({"generator": "sums-gen", "curriculum": {
        "type": "plugin", "factory": f"{__name__}:Recorder", "kwargs": {"at": 3}}})
    stream = select_tasks(mine)
    assert isinstance(stream.curriculum, Recorder) and stream.curriculum.levels == (1, 2, 3)
    assert parse_task_id(stream.task(0).id)[2] == 3
    assert parse_task_id(select_tasks(build_config({"generator": "sums-gen", "generator_level": 1})).task(5).id)[2] == 1
    with pytest.raises(SpecError, match="no level 7") as bad:
        select_tasks(build_config({"generator": "sums-gen", "generator_level": 7}))
    assert bad.value.field == "generator_level"
    with pytest.raises(SpecError, match="did you mean"):
        select_tasks(build_config({"generator": "sums-ge"}))
    for values, message in (({"curriculum": {"type": "solve_rate"}}, "set generator too"),
                            ({"generator": "sums-gen", "task_tags": ["echo"]}, "select suite tasks"),
                            ({"generator": "sums-gen", "generator_level": 1, "curriculum": {"type": "solve_rate"}},
                             "not both")):
        with pytest.raises(SpecError, match=message):
            build_config(values)


def test_a_generator_suite_stays_lazy_in_the_trainer(gen):
    tasks = select_tasks(build_config({"suite": "sums-gen@0:1000000", "task_limit": 5}))
    assert len(tasks) == 5 and tasks[4].id == "sums-gen.train.l2.s4"


class SumsEnv(Env):
    """One turn: the reply is the answer, graded by the task's answer verifier."""

    def __init__(self) -> None:
        super().__init__()
        self._text = ""

    async def reset(self, *, task=None, seed=None, options=None):
        self.task = self.choose_task(task, seed, options)
        return Observation(text=self.task.instruction), {"tools": [], "policy": "Answer with the number."}

    async def step(self, action: Action) -> StepResult:
        self._text = action.text or ""
        return StepResult(Observation(text="done"), 0.0, True, False, {})

    async def verify_context(self) -> VerifyContext:
        return VerifyContext(calls=[], final_answer=self._text)


async def _train(out, **overrides):
    from envgym.rl.models import tiny_policy
    from envgym.rl.train.trainer import Trainer

    values = {"model": "tiny", "generator": "sums-gen", "group_size": 2, "groups_per_step": 2, "steps": 3,
              "lr": 5e-3, "max_new_tokens": 4, "concurrency": 4, "gen_batch": 1, "prefix_cache": 0,
              "checkpoint_every": 1, "micro_batch_size": 4, "max_turns": 1,
              "curriculum": {"type": "solve_rate", "window": 2, "start_level": 3}, **overrides}
    result = await Trainer(build_config(values), out, policy=tiny_policy(seed=0),
                           make_env=lambda env_id: SumsEnv()).run()
    return [{k: line[k] for k in ("task_ids", "task_levels", "task_solved")} for line in result.metrics]


async def test_the_trainer_draws_fresh_tasks_and_its_curriculum_moves(gen, tmp_path):
    lines = await _train(tmp_path / "a")
    ids = [t for line in lines for t in line["task_ids"]]
    assert len(set(ids)) == 6  # a fresh task for every group
    solved = [s for line in lines for group in line["task_solved"] for s in group]
    assert solved == [False] * 12  # a random tiny policy never states the sum
    # sync: step t's failures are seen before step t+1 is drawn; window 2, so each step moves one level down
    assert [line["task_levels"] for line in lines] == [[3, 3], [2, 2], [1, 1]]
    assert await _train(tmp_path / "b") == lines  # same run seed, same tasks and levels
    await _train(tmp_path / "c", steps=2)
    assert await _train(tmp_path / "c") == lines[2:]  # resumed at step 3: outcomes replayed from the metrics
    assert [line["task_levels"] for line in await _train(tmp_path / "d", mode="async", max_staleness=1)] == \
        [[3, 3], [3, 3], [2, 2]]  # staleness 1: step 2 is drawn knowing step 0 only, whatever the timing


def test_envgym_train_names_a_bad_generator_setting_in_one_line(gen, tmp_path, capsys):
    from envgym import cli

    code = cli.main(["train", "--recipe", "tiny", "--generator", "sums-gen", "--set", "generator_level=5",
                     "--out", str(tmp_path / "run"), "--quiet"])
    captured = capsys.readouterr()
    said = captured.err + captured.out
    assert code == 2 and "no level 5" in said and "(field 'generator_level')" in said
    assert "Traceback" not in said and said.count("(field") == 1
    assert cli.main(["train", "--recipe", "tiny", "--generator", "sum-gen", "--out", str(tmp_path / "b"),
                     "--quiet"]) == 2
    assert "did you mean 'sums-gen'" in capsys.readouterr().err


def test_the_curriculum_flag_keeps_settings_given_with_set():
    from envgym.rl.train.cli import resolve_config

    def resolved(*argv):
        import argparse

        from envgym.rl.train.cli import add_parser

        parser = argparse.ArgumentParser()
        add_parser(parser.add_subparsers())
        return resolve_config(parser.parse_args(["train", *argv]))

    tuned = resolved("--recipe", "tiny", "--generator", "g", "--set", 'curriculum={"type":"solve_rate","window":8}',
                     "--curriculum", "solve-rate")
    assert tuned.curriculum.window == 8 and tuned.task_tags == ()
    assert resolved("--recipe", "tiny", "--generator", "g", "--curriculum", "solve-rate").curriculum.window == 16
    assert resolved("--recipe", "tiny", "--generator", "g", "--set", 'curriculum={"type":"solve_rate"}',
                    "--curriculum", "none").curriculum is None
