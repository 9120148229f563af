"""Task generators (envgym.generate): the contract enforced on every task, the suite grammar, lazy suites,
ids that resolve in ``reset(task=...)``, the dedupe pass, and ``envgym tasks generate`` (JSONL and a datasets
folder, same hashes). A toy generator registered in an isolated registry; the retail generator has its own
tests (tests/tools/test_retail_gen.py)."""

from __future__ import annotations

import random

import pytest

from envgym import cli, registry
from envgym.check import choose_tasks
from envgym.errors import EnvError, RegistryError, SpecError
from envgym.generate import GeneratedTasks, distinct, generate, parse_ref, parse_task_id
from envgym.plugin import GenerationRequest, TaskSpec, register_generator
from envgym.task import SuiteTasks, load_suite, load_tasks
from envgym.types import Action
from envgym.verify.spec import AnswerSpec

TEMPLATES = {"add": "train", "sub": "train", "mul": "test"}
made: list[str] = []


def arithmetic(request: GenerationRequest, *, break_it: str = "") -> TaskSpec:
    """``a OP b`` with operands growing with the level; the answer is the reference solution."""
    rng = request.rng()
    made.append(request.task_id)
    template = rng.choice(request.templates)
    a, b = rng.randrange(10 ** request.level), rng.randrange(10 ** request.level)
    value = {"add": a + b, "sub": a - b, "mul": a * b}[template]
    fields = {"id": request.task_id, "env_id": request.env_id, "split": request.split,
              "instruction": f"What is {a} {template} {b}?",
              "verifiers": (AnswerSpec(kind="exact", expected=str(value)),),
              "solution": (Action(text=str(value)),), "metadata": {"templates": [template]}}
    if break_it == "id":
        fields["id"] = "another"
    elif break_it == "solution":
        fields["solution"] = None
    elif break_it == "leak":
        fields["metadata"] = {"templates": ["mul"] if request.split == "train" else ["add"]}
    return TaskSpec(**fields)


@pytest.fixture
def toy():
    with registry.isolated():
        register_generator("toy-gen", arithmetic, family="toy", env_id="toy/calc-v1", levels=(1, 2, 3),
                           templates=TEMPLATES, size=500, description="sums")
        made.clear()
        yield


def test_registration_is_checked():
    with registry.isolated():
        bad = [{"family": "web"}, {"levels": ()}, {"levels": (1, 1)}, {"templates": {"add": "training"}},
               {"templates": {}}]
        for change in bad:
            kwargs = {"family": "toy", "env_id": "toy/calc-v1", "levels": (1,), "templates": TEMPLATES, **change}
            with pytest.raises(RegistryError):
                register_generator("toy-gen", arithmetic, **kwargs)
        with pytest.raises(RegistryError, match="malformed generator name"):
            register_generator("Toy@gen", arithmetic, family="toy", env_id="toy/calc-v1", levels=(1,),
                               templates=TEMPLATES)
        spec = register_generator("toy-gen", "tests_nowhere:fn", family="toy", env_id="toy/calc-v1", levels=(0, 1),
                                  templates=TEMPLATES)
        assert spec.splits == ("train", "test") and spec.templates_of("train") == ("add", "sub")
        with pytest.raises(SpecError, match="cannot import"):  # a reference is imported when a task is made
            generate("toy-gen", 0)


def test_same_request_same_task_and_the_id_names_it(toy):
    first = generate("toy-gen", 7, level=2, split="test")
    assert first.hash == generate("toy-gen", 7, level=2, split="test").hash
    assert first.id == "toy-gen.test.l2.s7" and parse_task_id(first.id) == ("toy-gen", "test", 2, 7)
    assert first.metadata["templates"] == ["mul"]  # the only test family
    assert generate("toy-gen", 7, level=2, split="train").hash != first.hash
    assert generate("toy-gen", 4).id == "toy-gen.train.l2.s4"  # mixed levels: levels[4 % 3]


@pytest.mark.parametrize(("broken", "field"), [("id", "id"), ("solution", "solution"), ("leak", "metadata.templates")])
def test_a_task_breaking_the_contract_is_refused(toy, broken, field):
    registry.register_generator("toy-gen", lambda r: arithmetic(r, break_it=broken), family="toy",
                                env_id="toy/calc-v1", levels=(1,), templates=TEMPLATES, override=True)
    with pytest.raises(SpecError) as caught:
        generate("toy-gen", 3, split="test" if broken != "leak" else "train")
    assert caught.value.field == field and "toy-gen" in str(caught.value)


@pytest.mark.parametrize(("text", "expected"), [
    ("toy-gen", ("toy-gen", 0, 500, None, None)),
    ("toy-gen@10:20", ("toy-gen", 10, 20, None, None)),
    ("toy-gen@0:10000:level=2", ("toy-gen", 0, 10000, 2, None)),
    ("toy-gen@5:6:split=test:level=3", ("toy-gen", 5, 6, 3, "test")),
    ("toy-gen@level=1", ("toy-gen", 0, 500, 1, None)),
])
def test_suite_grammar(toy, text, expected):
    ref = parse_ref(text)
    assert ref is not None and (ref.name, ref.start, ref.stop, ref.level, ref.split) == expected


@pytest.mark.parametrize(("text", "message"), [
    ("toy-gen@5:5", "START < STOP"), ("toy-gen@0:9:level=4", "no level '4'"), ("toy-gen@0:9:split=dev", "no 'dev'"),
    ("toy-gen@0:9:colour=red", "expected NAME@START:STOP"), ("toy-gne@0:9", "did you mean 'toy-gen'"),
])
def test_bad_suites_name_the_problem(toy, text, message):
    with pytest.raises(SpecError, match=message):
        load_suite(text)


def test_not_a_generator_is_not_parsed(toy):
    assert parse_ref("tasks/x.jsonl") is None and parse_ref("some-folder") is None


def test_a_suite_of_ten_thousand_makes_only_what_is_read(toy):
    tasks = load_suite("toy-gen@0:10000")
    assert len(tasks) == 20000 and made == []
    assert [t.id for t in tasks[:3]] == ["toy-gen.train.l1.s0", "toy-gen.test.l1.s0", "toy-gen.train.l2.s1"]
    picked, how = choose_tasks(tasks, sample=5, seed=1)
    assert len(picked) == 5 and how == "a sample of 5, seed 1" and len(made) == 3 + 5
    test_only = load_suite("toy-gen@0:10000:level=3", split="test")
    assert len(test_only) == 10000 and test_only[-1].id == "toy-gen.test.l3.s9999"
    assert len(load_suite("toy-gen@0:10:split=train", split="test")) == 0


def test_reset_task_id_makes_the_task(toy):
    source = SuiteTasks((), "toy/calc-v1")
    task = source.choose("toy-gen.test.l3.s12", random.Random(0))
    assert task.hash == generate("toy-gen", 12, level=3, split="test").hash
    with pytest.raises(EnvError, match="no level"):
        source.choose("toy-gen.test.l9.s12", random.Random(0))
    with pytest.raises(EnvError, match="no suite"):  # another env's generator: not this env's task
        SuiteTasks((), "toy/other-v1").choose("toy-gen.test.l3.s12", random.Random(0))


def test_distinct_counts_content_and_solution(toy):
    tasks = list(GeneratedTasks(parse_ref("toy-gen@0:200:level=1")))
    counted = distinct(tasks + tasks[:5])
    assert counted.total == len(tasks) + 5
    # one-digit sums repeat: fewer distinct contents than tasks, fewer distinct answers still
    assert counted.distinct <= counted.by_solution < counted.by_content < len(tasks)
    assert distinct(tasks[:1] * 3).distinct == 1


def test_generate_cli_writes_jsonl_and_hf_with_the_same_hashes(toy, screen, tmp_path):
    assert cli.main(["tasks", "generate", "toy-gen", "--n", "30", "--seed", "100", "--level", "2",
                     "--out", str(tmp_path / "t.jsonl")]) == 0
    assert "wrote 30 tasks of toy-gen@100:130:level=2" in screen()[0]
    written = load_tasks(tmp_path / "t.jsonl")
    expected = [t.hash for t in GeneratedTasks(parse_ref("toy-gen@100:130:level=2"))[:30]]
    assert [t.hash for t in written] == expected
    pytest.importorskip("datasets")
    from envgym.datasets import load_from_disk

    assert cli.main(["tasks", "generate", "toy-gen", "--n", "30", "--seed", "100", "--level", "2", "--format", "hf",
                     "--out", str(tmp_path / "hf")]) == 0
    assert [t.hash for t in load_from_disk(tmp_path / "hf")] == expected
    assert cli.main(["tasks", "generate", "toy-gen", "--n", "4", "--split", "test", "--out", str(tmp_path)]) == 0
    assert {t.split for t in load_tasks(tmp_path / "tasks.jsonl")} == {"test"}


def test_generate_cli_lists_and_refuses_bad_input(toy, screen, tmp_path):
    assert cli.main(["tasks", "generate", "--list"]) == 0
    lines = screen()[0].splitlines()
    assert lines == ["toy/toy-gen  levels 1,2,3  train: add, sub; test: mul  sums"]
    for argv, message in [(["toy-gne", "--n", "3"], "did you mean 'toy-gen'"), (["toy-gen", "--n", "3", "--level", "9"],
                          "--level 9"), (["toy-gen@0:3", "--n", "3"], "give the generator's name"),
                          (["toy-gen"], "--n N --out")]:
        assert cli.main(["tasks", "generate", *argv, "--out", str(tmp_path / "x.jsonl")]) == 2
        assert message in screen()[1]
    assert not (tmp_path / "x.jsonl").exists()
