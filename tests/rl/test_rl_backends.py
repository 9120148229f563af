"""Inference backends: the tiny policy in-process (logprobs, seeding, batching, weight updates) and a fake vLLM."""

from __future__ import annotations

import asyncio

import pytest
import torch
from rl_fakes import FakeVLLM

from envgym.rl.backends import BackendError, PromptTooLong, TransformersBackend, VLLMBackend

PROMPT = [1, 9690, 198, 28120, 2, 198, 1, 520, 9531, 198]


def recompute(model, prompt, completion, temperature=1.0):
    """A trainer's full forward pass over prompt + completion: the log-probability of each completion token."""
    with torch.no_grad():
        logits = model(torch.tensor([prompt + completion])).logits[0, len(prompt) - 1:-1].float() / temperature
    return torch.log_softmax(logits, -1).gather(-1, torch.tensor(completion)[:, None])[:, 0].tolist()


async def test_logprobs_are_the_sampled_distribution_and_seeds_repeat(tiny):
    backend = TransformersBackend(tiny.model, tiny.tokenizer)
    try:
        out = await backend.generate(PROMPT, max_new_tokens=12, temperature=0.7, seed=3)
        again = await backend.generate(PROMPT, max_new_tokens=12, temperature=0.7, seed=3)
        other = await backend.generate(PROMPT, max_new_tokens=12, temperature=0.7, seed=4)
        assert out.completion_ids == again.completion_ids != other.completion_ids
        assert len(out.completion_ids) == len(out.logprobs) == 12 and out.finish_reason == "length"
        assert out.logprobs == pytest.approx(recompute(tiny.model, PROMPT, out.completion_ids, 0.7), abs=1e-4)
        greedy = await backend.generate(PROMPT, max_new_tokens=4, temperature=0)
        with torch.no_grad():
            first = int(tiny.model(torch.tensor([PROMPT])).logits[0, -1].argmax())
        assert greedy.completion_ids[0] == first
        assert greedy.logprobs == pytest.approx(recompute(tiny.model, PROMPT, greedy.completion_ids), abs=1e-4)
    finally:
        await backend.aclose()


async def test_top_p_renormalises_over_the_nucleus(tiny):
    backend = TransformersBackend(tiny.model, tiny.tokenizer)
    try:
        full = await backend.generate(PROMPT, max_new_tokens=6, temperature=1.0, seed=1)
        nucleus = await backend.generate(PROMPT, max_new_tokens=6, temperature=1.0, top_p=0.5, seed=1)
        # A random model spreads its mass: half of it sits on fewer tokens, each now more likely.
        assert sum(nucleus.logprobs) > sum(full.logprobs)
    finally:
        await backend.aclose()


async def test_concurrent_requests_are_micro_batched_without_mixing(tiny):
    backend = TransformersBackend(tiny.model, tiny.tokenizer, max_batch=8)
    try:
        prompts = [PROMPT[: 4 + i] for i in range(6)]  # different lengths: left padding must not leak
        alone = [await backend.generate(p, max_new_tokens=5, temperature=1.0, seed=i) for i, p in enumerate(prompts)]
        batches = backend.batches
        together = await asyncio.gather(*[backend.generate(p, max_new_tokens=5, temperature=1.0, seed=i)
                                          for i, p in enumerate(prompts)])
        assert backend.batches - batches < len(prompts)
        for a, b, p in zip(alone, together, prompts, strict=True):
            assert a.completion_ids == b.completion_ids
            assert b.logprobs == pytest.approx(recompute(tiny.model, p, b.completion_ids), abs=1e-4)
    finally:
        await backend.aclose()


async def test_stop_strings_and_limits(tiny):
    backend = TransformersBackend(tiny.model, tiny.tokenizer)
    try:
        free = await backend.generate(PROMPT, max_new_tokens=8, temperature=1.0, seed=5)
        piece = tiny.tokenizer.decode(free.completion_ids[2:3])
        stopped = await backend.generate(PROMPT, max_new_tokens=8, temperature=1.0, seed=5, stop=[piece])
        assert stopped.finish_reason == "stop" and stopped.completion_ids == free.completion_ids[:3]
        with pytest.raises(PromptTooLong, match="context"):
            await backend.generate([1] * 8190, max_new_tokens=8)
        with pytest.raises(PromptTooLong):
            await backend.generate(PROMPT, max_new_tokens=0)
    finally:
        await backend.aclose()
    with pytest.raises(BackendError, match="closed"):
        await backend.generate(PROMPT, max_new_tokens=1)


async def test_weight_update_bumps_the_version_and_invalidates_caches(tiny, tmp_path):
    from safetensors.torch import save_file

    from envgym.rl.models import tiny_policy

    other = tiny_policy(seed=1).model
    model = tiny_policy(seed=0).model  # a private copy: the update must not leak into the session fixture
    backend = TransformersBackend(model, tiny.tokenizer)
    try:
        before = await backend.generate(PROMPT, max_new_tokens=4, temperature=0)
        assert before.policy_version == 0
        await backend.update_weights(other.state_dict(), version=1)
        after = await backend.generate(PROMPT, max_new_tokens=4, temperature=0)
        assert (after.policy_version, backend.cache_resets) == (1, 1)
        assert after.logprobs == pytest.approx(recompute(other, PROMPT, after.completion_ids), abs=1e-4)
        state = {k: v for k, v in tiny.model.state_dict().items() if k != "lm_head.weight"}
        save_file(state, str(tmp_path / "model.safetensors"))
        await backend.update_weights(tmp_path, version=2)
        back = await backend.generate(PROMPT, max_new_tokens=4, temperature=0)
        assert back.policy_version == 2 and back.completion_ids == before.completion_ids
        with pytest.raises(BackendError, match="do not fit"):
            await backend.update_weights({"nonsense.weight": torch.zeros(1)}, version=3)
        assert backend.policy_version == 2
    finally:
        await backend.aclose()


async def test_vllm_backend_against_a_loopback_fake(tokenizer, tmp_path):
    fake = FakeVLLM(delay_s=0.2)
    await fake.server.start()
    backend = VLLMBackend(f"http://127.0.0.1:{fake.server.port}/v1", "policy", tokenizer, save_dir=tmp_path)
    try:
        out = await backend.generate([5, 6, 7], max_new_tokens=3, temperature=1.0, seed=9, stop=["\n"])
        assert (out.completion_ids, out.logprobs, out.finish_reason) == ([8, 9, 10], [-0.25] * 3, "length")
        path, body = fake.calls[0]
        assert path == "/v1/completions" and body["prompt"] == [5, 6, 7] and body["return_token_ids"]
        assert (body["seed"], body["stop"], body["skip_special_tokens"]) == (9, ["\n"], False)
        # An update waits for the generation in flight, which keeps the old version.
        pending = asyncio.create_task(backend.generate([1], max_new_tokens=2))
        await asyncio.sleep(0.05)
        await backend.update_weights({"w": torch.ones(2)}, version=4)
        assert (await pending).policy_version == 0
        assert backend.policy_version == 4
        assert [p for p, _ in fake.calls[-2:]] == ["/update_weights", "/reset_prefix_cache"]
        assert fake.calls[-2][1] == {"model_path": str(tmp_path / "policy-v4")}
        assert (tmp_path / "policy-v4" / "model.safetensors").is_file()
        assert (await backend.generate([1], max_new_tokens=1)).policy_version == 4
        fake.status = 500
        with pytest.raises(BackendError, match="HTTP 500"):
            await backend.generate([1], max_new_tokens=1)
    finally:
        await backend.aclose()
        await fake.server.aclose()


async def test_shared_prefixes_are_cached_until_the_weights_change(tiny):
    from envgym.rl.models import tiny_policy

    system = list(range(1000, 1300))  # a 300-token "system prompt" every episode repeats
    prompts = [system + [7, 8, 9 + i] * (i + 1) for i in range(4)]
    plain = TransformersBackend(tiny.model, tiny.tokenizer, prefix_cache=0)
    cached = TransformersBackend(tiny_policy(seed=0).model, tiny.tokenizer, min_prefix=64)
    try:
        expected = [await plain.generate(p, max_new_tokens=4, temperature=1.0, seed=i) for i, p in enumerate(prompts)]
        first = await cached.generate(prompts[0], max_new_tokens=4, temperature=1.0, seed=0)
        assert cached.prefix_hits == 0 and not cached._prefixes  # nothing seen before: nothing shared yet
        rest = await asyncio.gather(*[cached.generate(p, max_new_tokens=4, temperature=1.0, seed=i)
                                      for i, p in enumerate(prompts) if i])
        again = await cached.generate(prompts[0], max_new_tokens=4, temperature=1.0, seed=0)
        assert cached.prefix_hits >= 1 and [len(k) for k in cached._prefixes] == [len(system) + 2]
        for out, want in zip([first, *rest], expected, strict=True):
            assert out.completion_ids == want.completion_ids
            assert out.logprobs == pytest.approx(want.logprobs, abs=1e-4)
        assert again.completion_ids == first.completion_ids
        await cached.update_weights(tiny_policy(seed=1).model.state_dict(), version=1)
        assert not cached._prefixes and cached.cache_resets == 1
        changed = await cached.generate(prompts[0], max_new_tokens=4, temperature=0)
        other = tiny_policy(seed=1).model
        assert changed.logprobs == pytest.approx(recompute(other, prompts[0], changed.completion_ids), abs=1e-4)
    finally:
        await plain.aclose()
        await cached.aclose()
