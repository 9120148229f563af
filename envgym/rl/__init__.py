"""Token-faithful rollouts: the recording OpenAI-compatible proxy, inference backends and training samples.

``envgym.rl.models`` loads SmolLM2 and the tiny test policy (torch is imported only there and in the
backends' worker); see ``envgym/rl/README.md`` for the whole picture. All RL code lives in this package:
Screenshots travel as image parts (:mod:`envgym.rl.vision`: the content-addressed :class:`ImageStore`).
Fresh tasks for training come from :mod:`envgym.rl.stream` (:class:`TaskStream` over a task generator, with a
:class:`Curriculum` that sets the level from recent solve rates).
``envgym.rl.adapters`` (TRL, verifiers / prime-rl, verl) and ``envgym.rl.train`` (the bundled trainer,
``envgym train``) build on the modules here; this package imports neither.
"""

from __future__ import annotations

import typing

from envgym import _lazy

if typing.TYPE_CHECKING:
    from envgym.rl.agents import RecordingAgent, RecordingAgentFactory
    from envgym.rl.backends import (
        BackendError,
        Completion,
        InferenceBackend,
        PromptTooLong,
        TransformersBackend,
        VLLMBackend,
    )
    from envgym.rl.proxy import CallRecord, RecordingProxy, Sampling, SessionRecord
    from envgym.rl.samples import (
        Segment,
        TrainingSample,
        read_samples,
        samples_from_episode,
        segments_of,
        write_samples,
    )
    from envgym.rl.stream import Curriculum, SolveRateCurriculum, TaskStream
    from envgym.rl.vision import ImageStore

# imported on first use: httpx, pydantic and the proxy stay out of `envgym train --help` and `envgym --help`
__getattr__, __dir__ = _lazy.lazy_exports(__name__, {
    "envgym.rl.agents": ("RecordingAgent", "RecordingAgentFactory"),
    "envgym.rl.backends": ("BackendError", "Completion", "InferenceBackend", "PromptTooLong", "TransformersBackend",
                           "VLLMBackend"),
    "envgym.rl.proxy": ("CallRecord", "RecordingProxy", "Sampling", "SessionRecord"),
    "envgym.rl.samples": ("Segment", "TrainingSample", "read_samples", "samples_from_episode", "segments_of",
                          "write_samples"),
    "envgym.rl.stream": ("Curriculum", "SolveRateCurriculum", "TaskStream"),
    "envgym.rl.vision": ("ImageStore",),
})

__all__ = [
    "BackendError",
    "CallRecord",
    "Completion",
    "Curriculum",
    "ImageStore",
    "InferenceBackend",
    "PromptTooLong",
    "RecordingAgent",
    "RecordingAgentFactory",
    "RecordingProxy",
    "Sampling",
    "Segment",
    "SessionRecord",
    "SolveRateCurriculum",
    "TaskStream",
    "TrainingSample",
    "TransformersBackend",
    "VLLMBackend",
    "read_samples",
    "samples_from_episode",
    "segments_of",
    "write_samples",
]
