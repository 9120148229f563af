"""Model loaders: the tiny policy is seeded and private about randomness; SmolLM2 loads from its cache."""

from __future__ import annotations

import pytest
import torch

from envgym.rl.models import cache_dir, load_smollm2, load_tokenizer, tiny_policy


def test_tiny_policy_is_seeded_and_leaves_the_global_rng_alone(tiny):
    state = torch.random.get_rng_state()
    again, other = tiny_policy(seed=0), tiny_policy(seed=1)
    assert torch.equal(torch.random.get_rng_state(), state)
    weights = tiny.model.model.embed_tokens.weight
    assert torch.equal(again.model.model.embed_tokens.weight, weights)
    assert not torch.equal(other.model.model.embed_tokens.weight, weights)
    assert tiny.model.config.vocab_size == len(tiny.tokenizer) == 49152


def test_the_tokenizer_is_smollm2s_with_its_chat_template(tokenizer):
    assert (cache_dir() / "smollm2-135m-instruct" / "tokenizer" / "tokenizer_config.json").is_file()
    text = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False,
                                         add_generation_prompt=True)
    assert text.endswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    assert tokenizer.eos_token == "<|im_end|>" and load_tokenizer().encode("hi") == tokenizer.encode("hi")


@pytest.mark.model
def test_smollm2_loads_and_answers():
    model, tokenizer = load_smollm2()
    assert (cache_dir() / "smollm2-135m-instruct" / "model" / "model.safetensors").is_file()
    ids = tokenizer.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}],
                                        tokenize=False, add_generation_prompt=True)
    ids = tokenizer.encode(ids, add_special_tokens=False) + tokenizer.encode("The capital of France is",
                                                                               add_special_tokens=False)
    with torch.no_grad():
        token = int(model(torch.tensor([ids])).logits[0, -1].argmax())
    assert tokenizer.decode([token]).strip() == "Paris"
