"""Each trainer adapter takes a task stream instead of a suite (TRL's rollout_func, the verifiers env, verl's agent
loop): every group or row plays a fresh task of the stream, in a reproducible order, and graded outcomes reach
the stream's curriculum. Real adapters over a tiny policy and a one-turn toy env; each trainer is optional and
its part skips with the install command when it is missing."""

from __future__ import annotations

import asyncio
import importlib.util
from types import SimpleNamespace
from typing import Any

import pytest

from envgym import registry
from envgym.env import Env, StepResult
from envgym.errors import SpecError
from envgym.generate import parse_task_id
from envgym.plugin import GenerationRequest, TaskSpec, register_generator
from envgym.rl.stream import TaskStream
from envgym.types import Action, Observation
from envgym.verify import VerifyContext
from envgym.verify.spec import AnswerSpec

ENV_ID = "toy/sums-v1"


def sums(request: GenerationRequest) -> TaskSpec:
    rng = request.rng()
    a, b = rng.randrange(10 ** request.level), rng.randrange(10 ** request.level)
    return TaskSpec(id=request.task_id, env_id=request.env_id, split=request.split,
                    instruction=f"What is {a} plus {b}?", verifiers=(AnswerSpec(kind="exact", expected=str(a + b)),),
                    solution=(Action(text=str(a + b)),), metadata={"templates": ["add"]})


class SumsEnv(Env):
    """One turn: the reply is the answer, graded by the task's answer verifier."""

    def __init__(self) -> None:
        super().__init__()
        self._text = ""

    async def reset(self, *, task: TaskSpec | None = None, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        self.task = self.choose_task(task, seed, options)
        return Observation(text=self.task.instruction), {"tools": [], "policy": "Answer with the number."}

    async def step(self, action: Action) -> StepResult:
        self._text = action.text or ""
        return StepResult(Observation(text="done"), 0.0, True, False, {})

    async def verify_context(self) -> VerifyContext:
        return VerifyContext(calls=[], final_answer=self._text)


class Recorder:
    """A curriculum that stays at one level and keeps what it observed."""

    def __init__(self, at: int = 2) -> None:
        self.at, self.seen = at, []

    def level(self) -> int:
        return self.at

    def observe(self, level: int, solved: bool) -> None:
        self.seen.append((level, solved))


@pytest.fixture
def gen():
    with registry.isolated():
        register_generator("sums-gen", sums, family="toy", env_id=ENV_ID, levels=(1, 2, 3),
                           templates={"add": "train", "big": "test"})
        registry.register(ENV_ID, f"{__name__}:SumsEnv")  # verl's loop builds its env with envgym.make
        yield


def _skip_without(module: str, install: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"needs {module} ({install})")


def test_trl_rollout_plays_a_fresh_task_per_group_and_feeds_the_curriculum(gen):
    _skip_without("trl", "pip install trl")
    from envgym.rl.adapters.trl import EnvgymRollout, trl_dataset
    from envgym.rl.backends import TransformersBackend
    from envgym.rl.models import tiny_policy

    model, tokenizer = tiny_policy(seed=0, layers=1, hidden=32, heads=2)
    trainer = SimpleNamespace(model=model, processing_class=tokenizer, state=SimpleNamespace(global_step=0),
                              num_generations=2, num_generations_eval=2)
    curriculum = Recorder()
    stream = TaskStream("sums-gen", seed=5, curriculum=curriculum)
    dataset = trl_dataset(stream, rows=3)
    assert len(dataset) == 3 and len({row["task_id"] for row in dataset}) == 1  # slots, not tasks
    prompts = [dataset[0]["prompt"]] * 4  # TRL: 2 rows, each repeated num_generations times
    backend = TransformersBackend(model, tokenizer)
    played = []
    try:
        with EnvgymRollout(stream, backend=backend, max_tokens=6, concurrency=2,
                           make_env=lambda env_id: SumsEnv()) as rollout:
            for _ in range(2):
                out = rollout(prompts, trainer)
                played.append(out["envgym_task_id"])
            assert rollout.drawn == 4
            with pytest.raises(SpecError, match="whole groups of 2"):
                rollout(prompts[:3], trainer)
    finally:
        asyncio.run(backend.aclose())
    again = TaskStream("sums-gen", seed=5, curriculum=Recorder())
    expected = [again.task(i).id for i in range(4)]
    assert played == [[expected[0]] * 2 + [expected[1]] * 2, [expected[2]] * 2 + [expected[3]] * 2]
    assert {parse_task_id(t)[2] for t in expected} == {2}  # the curriculum's level
    assert len(curriculum.seen) == 8 and all(level == 2 for level, _ in curriculum.seen)  # every graded episode
    with pytest.raises(SpecError, match="rows=N"):
        trl_dataset(stream)


async def test_verifiers_env_plays_row_i_as_the_streams_task_i(gen):
    try:
        from envgym.rl.adapters.verifiers_env import EnvgymEnv, load_environment, vf
    except ImportError as exc:
        pytest.skip(f"the verifiers adapter needs verifiers (pip install 'verifiers==0.3.1'): {exc}")
    curriculum = Recorder(at=3)
    stream = TaskStream("sums-gen", seed=2, curriculum=curriculum)
    env = EnvgymEnv(stream, rows=5, make_env=lambda env_id: SumsEnv())
    assert len(env.get_eval_dataset()) == 5
    row = env.get_eval_dataset()[3]
    ids = []
    for answer in ("no idea", None):  # two rollouts of the same row: the same task
        state = vf.State(input={"prompt": [], "example_id": 3, "info": row["info"]})
        await env.setup_state(state)
        task = stream.task(3)
        ids.append(state["envgym_task_id"])
        await env.env_response([*state["prompt"], vf.AssistantMessage(content=answer or task.solution[0].text)],
                               state)
        await env.close_envgym(state)
    assert ids == [stream.task(3).id] * 2 and parse_task_id(ids[0])[2] == 3
    assert curriculum.seen == [(3, False), (3, True)]  # graded outcomes, in order
    with pytest.raises(SpecError, match="rows=N"):
        EnvgymEnv(stream)
    fresh = load_environment(generator="sums-gen", rows=4, seed=2, level=1)
    assert isinstance(fresh, EnvgymEnv) and fresh.stream.fixed_level == 1 and len(fresh.get_eval_dataset()) == 4
    assert load_environment(generator="sums-gen", rows=2, curriculum="solve_rate").stream.curriculum.levels == (1, 2, 3)


# verl's import of ray's state API warns (test_verl.py imports it at collection, where warnings are not errors)
@pytest.mark.filterwarnings("ignore:Ray state API is no longer experimental:DeprecationWarning")
async def test_verl_agent_loop_makes_the_rows_stream_task_in_the_worker(gen):
    _skip_without("verl", "pip install --no-deps verl ray; envgym/rl/adapters/README")
    import hydra
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap, _agent_loop_registry
    from verl.utils.dataset.rl_dataset import RLHFDataset
    from verl.workers.rollout.replica import TokenOutput

    from envgym.rl.adapters import verl as adapter
    from envgym.rl.backends import TransformersBackend
    from envgym.rl.models import tiny_policy
    from envgym.rl.stream import SolveRateCurriculum

    model, tokenizer = tiny_policy(seed=0, layers=1, hidden=32, heads=2)
    backend = TransformersBackend(model, tokenizer)

    class Manager:  # verl's server-manager interface over the tiny backend
        async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
            out = await backend.generate(prompt_ids, max_new_tokens=sampling_params["max_tokens"],
                                         temperature=sampling_params["temperature"])
            return TokenOutput(token_ids=out.completion_ids, log_probs=out.logprobs, stop_reason="completed")

    stream = TaskStream("sums-gen", seed=9, curriculum=SolveRateCurriculum((1, 2, 3), window=2, start=3))
    rows = adapter.verl_rows(stream, rows=3)
    assert [r["extra_info"]["index"] for r in rows] == [0, 1, 2] and "envgym_task" not in rows[0]["extra_info"]
    config = OmegaConf.create({"actor_rollout_ref": {"rollout": {"prompt_length": 1024, "response_length": 8}},
                               "data": {"apply_chat_template_kwargs": {}}})
    adapter._STREAMS.clear()

    async def one(row):  # as verl's AgentLoopWorker builds and runs a loop
        loop = hydra.utils.instantiate(config=_agent_loop_registry[row["agent_name"]],
                                       trainer_config=DictConfigWrap(config=config), server_manager=Manager(),
                                       tokenizer=tokenizer, processor=None, hf_model_type=None,
                                       dataset_cls=RLHFDataset, data_config=DictConfigWrap(config.data),
                                       tools=ToolListWrap([]))
        sampling = {"temperature": 1.0, "top_p": 1.0, "logprobs": True}
        return await loop.run(sampling, raw_prompt=row["prompt"], **row)

    try:
        outputs = [await one(row) for row in rows]  # in order: the curriculum then sees a known sequence
    finally:
        await adapter.close_proxies()
        await backend.aclose()
    played = [o.extra_fields["envgym_task_id"] for o in outputs]
    same = TaskStream("sums-gen", seed=9)
    assert [parse_task_id(t)[3] for t in played] == [same.seed_at(i) for i in range(3)]  # the stream's seeds
    worker_stream = next(iter(adapter._STREAMS.values()))
    # a random tiny model fails: after a window of 2 failures at level 3 the worker's curriculum moved down
    assert [parse_task_id(t)[2] for t in played] == [3, 3, 2] and worker_stream.curriculum.level() == 2
    with pytest.raises(ValueError, match="only SolveRateCurriculum travels"):
        adapter.verl_rows(TaskStream("sums-gen", curriculum=Recorder()), rows=1)
