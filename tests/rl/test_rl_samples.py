"""Training samples: segmenting rules, loss masks, provenance from trajectories and records, JSONL round trip."""

from __future__ import annotations

import pytest

from envgym.errors import RecordError
from envgym.record import ResultRecord
from envgym.rl.samples import TrainingSample, read_samples, samples_from_episode, segments_of, write_samples
from envgym.trajectory import Trajectory
from envgym.types import Outcome, Verdict


def call(prompt, completion, version=0, finish="stop"):
    return {"prompt_ids": prompt, "completion_ids": completion, "logprobs": [-0.1 * (i + 1) for i in
            range(len(completion))], "policy_version": version, "finish_reason": finish}


CALLS = [
    call([1, 2, 3], [10, 11]),                       # segment 0
    call([1, 2, 3, 10, 11, 50, 51], [12], 1),        # extends: 50, 51 are the environment's tokens
    call([1, 2, 3, 10, 99], [13, 14], 2),            # history rewritten: a new segment
    call([1, 2, 3, 10, 99, 13, 14], [15], 2, "length"),  # extends the new segment, no env tokens between
]


def test_extension_continues_a_segment_and_anything_else_starts_one():
    first, second = segments_of(CALLS)
    assert first.prompt_ids == [1, 2, 3]
    assert first.completion_ids == [10, 11, 50, 51, 12]
    assert first.loss_mask == [1, 1, 0, 0, 1]
    assert first.policy_versions == [0, 0, -1, -1, 1]
    assert first.logprobs == pytest.approx([-0.1, -0.2, 0.0, 0.0, -0.1])
    assert first.calls == 2
    assert second.prompt_ids == [1, 2, 3, 10, 99]
    assert second.completion_ids == [13, 14, 15]
    assert second.loss_mask == [1, 1, 1]
    assert second.finish_reason == "length"


def test_a_prompt_shorter_than_the_previous_turn_is_a_new_segment():
    segments = segments_of([call([1, 2, 3], [4]), call([1, 2], [5])])
    assert [s.prompt_ids for s in segments] == [[1, 2, 3], [1, 2]]


def trajectory(outcome=Outcome.SUCCESS, score=1.0):
    return Trajectory(task_id="t1", task_hash="sha256:ab", env_id="tool/x-v1", outcome=outcome,
                      verdict=Verdict(score=score, passed=score == 1.0), reward=score, token_data=CALLS)


def test_samples_take_reward_status_and_ids_from_the_trajectory():
    samples = samples_from_episode(trajectory(Outcome.FAILURE, 0.25), group_id="g1", episode_id="ep")
    assert [s.sample_id for s in samples] == ["ep:0", "ep:1"]
    assert {(s.reward, s.status, s.group_id, s.task_id, s.env_id) for s in samples} == {
        (0.25, "failure", "g1", "t1", "tool/x-v1")}
    assert samples[0].model_tokens == 3 and samples[0].min_policy_version == 0
    assert samples[1].min_policy_version == 2


def test_samples_from_a_record_with_tokens():
    record = ResultRecord.from_trajectory(trajectory(), tokens=True, run_id="r", suite="s", split="test",
                                          env_version=1, agent_id="a", config_hash="c")
    assert record.token_data == CALLS
    samples = samples_from_episode(record, group_id="g")
    assert len(samples) == 2 and samples[0].reward == 1.0 and samples[0].status == "success"
    assert ResultRecord.from_trajectory(trajectory(), run_id="r", suite="s", split="test", env_version=1,
                                        agent_id="a", config_hash="c").token_data == []


def test_calls_alone_need_a_reward():
    with pytest.raises(ValueError, match="reward"):
        samples_from_episode(CALLS)
    samples = samples_from_episode(CALLS, reward=0.5, status="truncated")
    assert samples[0].status == "truncated" and samples[0].episode_id


def test_misaligned_or_unknown_status_is_rejected():
    fields = dict(sample_id="e:0", group_id="g", episode_id="e", task_id="t", task_hash="h", env_id="x/y-v1",
                  segment=0, prompt_ids=[1], completion_ids=[2, 3], loss_mask=[1, 1], logprobs=[0.0, 0.0],
                  policy_versions=[0, 0], reward=1.0, status="success")
    TrainingSample(**fields)
    with pytest.raises(ValueError, match="one entry per"):
        TrainingSample(**{**fields, "loss_mask": [1]})
    with pytest.raises(ValueError, match="status"):
        TrainingSample(**{**fields, "status": "great"})


def test_jsonl_round_trip_and_torn_tail(tmp_path):
    samples = samples_from_episode(trajectory(), group_id="g")
    path = tmp_path / "s.jsonl"
    assert write_samples(path, samples) == 2
    assert read_samples(path) == samples
    write_samples(path, samples[:1], append=True)
    with open(path, "a") as handle:
        handle.write('{"schema_version": 1, "sample_')  # a crash mid-write
    assert read_samples(path) == [*samples, samples[0]]
    path.write_text('{"schema_version": 1}\n')
    with pytest.raises(RecordError, match="schema"):
        read_samples(path)
