"""verl: the envgym agent loop, built and run the way verl's AgentLoopWorker does, on a tiny model."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("verl.experimental.agent_loop.agent_loop",
                    reason="the verl adapter needs verl (pip install --no-deps verl ray; envgym/rl/adapters/README)")

import envgym
from envgym.rl.backends import TransformersBackend
from envgym.rl.models import tiny_policy


class BackendServerManager:
    """verl's server-manager interface (``generate(request_id, *, prompt_ids, sampling_params) -> TokenOutput``)
    over an envgym TransformersBackend, as verl's vLLM server would answer; it records what it generated."""

    def __init__(self, backend: TransformersBackend) -> None:
        self.backend = backend
        self.generated: list[list[int]] = []
        self.params: list[dict] = []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        self.params.append(dict(sampling_params))
        out = await self.backend.generate(prompt_ids, max_new_tokens=sampling_params["max_tokens"],
                                          temperature=sampling_params["temperature"], top_p=sampling_params["top_p"])
        self.generated.append(out.completion_ids)
        logprobs = out.logprobs if sampling_params["logprobs"] else None
        return TokenOutput(token_ids=out.completion_ids, log_probs=logprobs, stop_reason="completed")


@pytest.mark.slow
async def test_agent_loop_plays_envgym_episodes_through_verls_server_manager():
    import hydra
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.agent_loop import (
        AgentLoopOutput,
        DictConfigWrap,
        ToolListWrap,
        _agent_loop_registry,
    )
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from envgym.rl.adapters.verl import AGENT_NAME, close_proxies, verl_rows

    assert _agent_loop_registry[AGENT_NAME] == {"_target_": "envgym.rl.adapters.verl.EnvgymAgentLoop"}
    tasks = envgym.load_suite("tool-retail", split="train")[:2]
    tasks = [t.model_copy(update={"limits": t.limits.model_copy(update={"max_steps": 2})}) for t in tasks]
    model, tokenizer = tiny_policy(seed=0)
    backend = TransformersBackend(model, tokenizer)
    manager = BackendServerManager(backend)
    config = OmegaConf.create({"actor_rollout_ref": {"rollout": {"prompt_length": 4096, "response_length": 48}},
                               "data": {"apply_chat_template_kwargs": {}}})

    async def one(row):  # exactly AgentLoopWorker._run_agent_loop's construction
        loop = hydra.utils.instantiate(config=_agent_loop_registry[row["agent_name"]],
                                       trainer_config=DictConfigWrap(config=config), server_manager=manager,
                                       tokenizer=tokenizer, processor=None, hf_model_type=None,
                                       dataset_cls=RLHFDataset, data_config=DictConfigWrap(config.data),
                                       tools=ToolListWrap([]))
        sampling = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}
        return await loop.run(sampling, raw_prompt=row["prompt"], **row)

    try:
        outputs = await asyncio.gather(*(one(row) for row in verl_rows(tasks)))
    finally:
        await close_proxies()
        await backend.aclose()

    generated = {tuple(ids) for ids in manager.generated}
    for task, output in zip(tasks, outputs, strict=True):
        assert isinstance(output, AgentLoopOutput)
        fields = output.extra_fields
        assert fields["envgym_task_id"] == task.id and fields["envgym_outcome"] in {"success", "failure", "truncated"}
        assert 0.0 <= output.reward_score <= 1.0
        assert task.instruction in tokenizer.decode(output.prompt_ids)
        assert len(output.response_ids) == len(output.response_mask) == len(output.response_logprobs)
        # the model tokens are exactly what verl's server generated, none re-tokenised
        model_tokens = tuple(t for t, m in zip(output.response_ids, output.response_mask, strict=True) if m)
        assert model_tokens and any(model_tokens[:len(g)] == g for g in generated)
        batch = output.as_dict()  # what verl's worker pads into its DataProto
        assert batch["rm_scores"][-1] == pytest.approx(output.reward_score)
    assert all(p["max_tokens"] <= 48 and p["logprobs"] for p in manager.params)


class ImageServerManager(BackendServerManager):
    """The same, for a VLM: ``image_data`` (PIL images, as verl passes them) goes to the backend as PNG bytes."""

    def __init__(self, backend: TransformersBackend) -> None:
        super().__init__(backend)
        self.images: list[int] = []

    async def generate(self, request_id, *, prompt_ids, sampling_params, image_data=None, **kwargs):
        import io

        from verl.workers.rollout.replica import TokenOutput

        self.images.append(len(image_data or ()))
        encoded = []
        for image in image_data or ():
            buffer = io.BytesIO()
            image.save(buffer, format="PNG")
            encoded.append(buffer.getvalue())
        out = await self.backend.generate(prompt_ids, max_new_tokens=sampling_params["max_tokens"],
                                          temperature=sampling_params["temperature"], images=encoded)
        return TokenOutput(token_ids=out.completion_ids, log_probs=out.logprobs, stop_reason="completed")


@pytest.mark.slow
async def test_agent_loop_passes_an_episodes_screenshots_to_verl(monkeypatch, tmp_path):
    import functools
    import sys
    from pathlib import Path

    import hydra
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap, _agent_loop_registry
    from verl.utils.dataset.rl_dataset import RLHFDataset

    import envgym.rl.adapters.verl as adapter
    from envgym.rl.models import tiny_vlm

    sys.path.insert(0, str(Path(__file__).parent.parent))
    from vision_fakes import ColourEnv, colour_tasks

    monkeypatch.setattr(adapter, "run_recorded_episode", functools.partial(
        adapter.run_recorded_episode, make_env=lambda env_id: ColourEnv(turns=2, size=(128, 96))))
    model, tokenizer, processor = tiny_vlm(seed=0)
    backend = TransformersBackend(model, tokenizer, processor=processor)
    manager = ImageServerManager(backend)
    config = OmegaConf.create({"actor_rollout_ref": {"rollout": {"prompt_length": 4096, "response_length": 256}},
                               "data": {"apply_chat_template_kwargs": {}}})
    [row] = adapter.verl_rows(colour_tasks(1))
    loop = hydra.utils.instantiate(config=_agent_loop_registry[row["agent_name"]],
                                   trainer_config=DictConfigWrap(config=config), server_manager=manager,
                                   tokenizer=tokenizer, processor=processor, hf_model_type=None,
                                   dataset_cls=RLHFDataset, data_config=DictConfigWrap(config.data),
                                   tools=ToolListWrap([]))
    try:
        output = await loop.run({"temperature": 1.0, "top_p": 1.0, "logprobs": True, "max_tokens": 6},
                                raw_prompt=row["prompt"], **row)
    finally:
        await adapter.close_proxies()
        await backend.aclose()
    assert manager.images == [1, 2]  # each call generated with the screenshots of its prompt
    # verl rebuilds pixel inputs from these images over the output's placeholders: one image per whole run
    # (each turn may use the whole response length, so the second screenshot can fall beyond the cut).
    images = output.multi_modal_data["images"]
    assert images and images[0].size == (128, 96)
    ids = output.prompt_ids + output.response_ids
    pad = processor.image_token_id
    assert sum(1 for i, t in enumerate(ids) if t == pad and ids[i - 1] != pad) == len(images)
    assert adapter._whole_images([1, pad, pad, 2, pad], pad, cut=True) == 1
