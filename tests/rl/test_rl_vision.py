"""Screenshots on the RL path (the kernel's image protocol: tests/test_images.py): the image store, the proxy
with image parts and exact placeholder ids, a tiny random Qwen2-VL in the transformers backend, the learner's
recomputed logprobs, the agents' image parts and budget, and the vLLM multimodal path against a loopback fake."""

from __future__ import annotations

import httpx
import pytest
from vision_fakes import COLOURS, data_url, jpeg, png, screen

from envgym._images import fit_image, observation_images
from envgym.agents.openai import OpenAIAgentFactory
from envgym.rl import RecordingAgentFactory, RecordingProxy, TransformersBackend, samples_from_episode
from envgym.rl.vision import REF_SCHEME, ImageError, ImageStore, VisionProcessor
from envgym.types import Observation

pytest.importorskip("PIL")


@pytest.fixture(scope="module")
def vlm():
    from envgym.rl.models import tiny_vlm

    return tiny_vlm(seed=0)


@pytest.fixture
async def vision_proxy(vlm):
    import copy

    model, tokenizer, processor = vlm
    backend = TransformersBackend(copy.deepcopy(model), tokenizer, processor=processor)
    async with RecordingProxy(backend) as proxy:
        yield proxy
    await backend.aclose()


def _user(text, *images):
    return {"role": "user", "content": [{"type": "text", "text": text},
                                        *({"type": "image_url", "image_url": {"url": u}} for u in images)]}


# -- the image store ----------------------------------------------------------------------------------


def test_image_store_dedups_by_content_and_resolves_urls(tmp_path):
    store = ImageStore(tmp_path / "images", cache=1)
    a, b = jpeg((1, 2, 3), (32, 32)), jpeg((200, 2, 3), (32, 32))
    ref = store.resolve(data_url(a))
    assert store.put(a, "image/jpeg") == ref and store.bytes_written == len(a)
    store.put(b, "image/jpeg")  # evicts a from memory: it is read back from the folder
    assert store.get(ref) == a and store.size(ref) == (32, 32) and len(store) == 2
    assert store.resolve(REF_SCHEME + ref) == ref
    with pytest.raises(ImageError, match="unknown image reference"):
        store.resolve(REF_SCHEME + "sha256:" + "0" * 64)
    with pytest.raises(ImageError, match="opens no connections"):
        store.resolve("https://example.com/a.png")
    with pytest.raises(ImageError, match="base64"):
        store.resolve("data:image/png;base64,@@@")
    with pytest.raises(KeyError, match="no image"):
        ImageStore().get("sha256:missing")


# -- the proxy and the backend -------------------------------------------------------------------------


async def test_the_proxy_records_exact_ids_with_image_placeholders_and_logprobs_the_learner_reproduces(
        vlm, vision_proxy):
    from envgym.rl.train.config import TrainConfig
    from envgym.rl.train.learner import Learner

    model, tokenizer, processor = vlm
    vision = VisionProcessor.of(processor)
    shots = [jpeg(COLOURS["red"]), jpeg(COLOURS["red"], (64, 48), marker=1), jpeg(COLOURS["red"], marker=2)]
    messages = [{"role": "system", "content": "You see screenshots."}, _user("What colour?", data_url(shots[0]))]
    url = vision_proxy.base_url_for("ep") + "/chat/completions"
    async with httpx.AsyncClient() as client:
        for turn in range(3):
            response = await client.post(url, json={"messages": messages, "max_tokens": 8, "seed": turn,
                                                    "return_token_ids": True})
            assert response.status_code == 200, response.text
            body = response.json()
            assert body["envgym"]["segment"] == 0  # each call extends the last: one token segment
            messages += [body["choices"][0]["message"], _user(f"turn {turn}", data_url(shots[turn + 1]))
                         if turn < 2 else _user("last")]
    record = vision_proxy.close_session("ep")
    refs = [vision_proxy.images.put(s, "image/jpeg") for s in shots]
    assert [c.images for c in record.calls] == [refs[:1], refs[:2], refs[:3]]
    last = record.calls[-1]
    expected = [vision.tokens_for(vision_proxy.images.pil(r)) for r in refs]
    assert expected == [15, 4, 15]  # 1280x720 -> 60 patches -> 15 tokens; 64x48 -> 16 patches -> 4
    assert last.prompt_ids.count(vision.image_token_id) == sum(expected)
    # The recorded ids are exactly what the processor makes of the rendered conversation.
    rendered = record.transcript(tokenizer)[0]
    assert rendered.count("<|image_pad|>") == sum(expected) and rendered.count("<|vision_start|>") == 3
    [sample] = samples_from_episode(record, reward=1.0, group_id="g")
    assert sample.images == refs and sample.model_tokens == sum(len(c.completion_ids) for c in record.calls)
    # Recomputed by the learner from the stored images: the same logprobs.
    learner = Learner(model, TrainConfig(model="tiny-vlm"), processor=processor, images=vision_proxy.images)
    import torch

    with torch.no_grad():
        batch = learner._batch([sample, sample.model_copy(update={"images": sample.images})])
        new = learner.logprobs(batch)
    mask = batch["mask"].bool()
    assert float((new[mask] - batch["rollout"][mask]).abs().max()) < 1e-4
    # Another image behind the same placeholder ids changes the logprobs: the pixels really are used.
    other = sample.model_copy(update={"images": [*refs[:2], vision_proxy.images.put(jpeg((0, 0, 0)))]})
    with torch.no_grad():
        moved = learner.logprobs(learner._batch([other]))
    assert float((moved[0][mask[0]] - new[0][mask[0]]).abs().max()) > 1e-6


async def test_a_different_earlier_image_starts_a_new_segment(vision_proxy):
    url = vision_proxy.base_url_for("ep2") + "/chat/completions"
    first = [_user("look", data_url(jpeg(COLOURS["red"], (64, 48))))]
    async with httpx.AsyncClient() as client:
        one = (await client.post(url, json={"messages": first, "max_tokens": 4})).json()
        # Same text, same image size (so the same ids), a different picture: not an extension.
        edited = [_user("look", data_url(jpeg(COLOURS["blue"], (64, 48)))), one["choices"][0]["message"],
                  _user("again")]
        two = (await client.post(url, json={"messages": edited, "max_tokens": 4})).json()
    assert (one["envgym"]["segment"], two["envgym"]["segment"]) == (0, 1)
    assert len(samples_from_episode(vision_proxy.close_session("ep2"), reward=0.0)) == 2


async def test_bad_images_are_client_errors(vision_proxy, tokenizer):
    from rl_fakes import ScriptedBackend

    async with httpx.AsyncClient() as client:
        bad = await client.post(vision_proxy.base_url_for("e") + "/chat/completions",
                                json={"messages": [_user("x", "http://10.0.0.1/shot.png")]})
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_image"
        async with RecordingProxy(ScriptedBackend(tokenizer, ["hi"])) as text_only:
            refused = await client.post(text_only.base_url_for("e") + "/chat/completions",
                                        json={"messages": [_user("x", data_url(png((0, 0, 0))))]})
        assert refused.status_code == 400 and refused.json()["error"]["code"] == "images_unsupported"


# -- agents --------------------------------------------------------------------------------------------


async def test_the_openai_agent_sends_screenshots_within_its_budget(vision_proxy):
    factory = OpenAIAgentFactory(vision_proxy.base_url_for("agent"), "m", images=True, image_max_pixels=320 * 180,
                                 max_tokens=4, temperature=1.0, max_images=2)
    agent = factory.create(None)
    await agent.reset(Observation(), {"tools": [], "policy": "p"})
    for turn in range(3):
        await agent.act(screen(f"turn {turn}", COLOURS["green"], marker=turn))
    await factory.aclose()
    images = [p for m in agent.transcript.messages if isinstance(m["content"], list) for p in m["content"]
              if p["type"] == "image_url"]
    assert len(images) == 2  # max_images: the oldest became a note
    assert "omitted" in str(agent.transcript.messages)
    record = vision_proxy.close_session("agent")
    stored = vision_proxy.images.pil(record.calls[-1].images[-1])
    assert stored.width * stored.height <= 320 * 180
    assert factory.describe()["images"] is True


async def test_the_recording_agent_sends_store_references_not_base64(vision_proxy):
    factory = RecordingAgentFactory(vision_proxy, images=True, max_tokens=4)
    agent = factory.create(type("T", (), {"id": "t"})())
    await agent.reset(Observation(), {"tools": [], "policy": "p"})
    await agent.act(screen("look", COLOURS["red"], (64, 48)))
    [part] = [p for p in agent.transcript.messages[-2]["content"] if p["type"] == "image_url"]
    assert part["image_url"]["url"].startswith(REF_SCHEME + "sha256:")
    assert agent.token_data[0]["images"] == [part["image_url"]["url"][len(REF_SCHEME):]]
    await agent.close()


async def test_the_hf_agent_runs_a_local_vlm_on_screenshots(vlm):
    from envgym.agents.hf import HFAgentFactory

    model, tokenizer, processor = vlm
    factory = HFAgentFactory(policy=(model, tokenizer, processor), max_new_tokens=4, image_max_pixels=64 * 48)
    agent = factory.create(None)
    await agent.reset(Observation(), {"tools": [], "policy": "p"})
    await agent.act(screen("look", COLOURS["red"]))
    await agent.act(screen("again", COLOURS["red"], marker=1))
    image_id = VisionProcessor.of(processor).image_token_id
    fitted = fit_image(observation_images(screen("x", COLOURS["red"]))[0], max_pixels=64 * 48)
    per_image = VisionProcessor.of(processor).tokens_for(fitted)
    assert (fitted.width, fitted.height) == (73, 41) and per_image == 6  # the fitted size, not the screen's
    assert [c["prompt_ids"].count(image_id) for c in agent.token_data] == [per_image, 2 * per_image]
    assert factory.vision and factory.model_name == "Qwen2VLForConditionalGeneration"
    await factory.aclose()


# -- vLLM -----------------------------------------------------------------------------------------------


async def test_vllm_backend_sends_images_as_features_with_the_token_ids(tokenizer):
    from envgym.rl.backends import VLLMBackend
    from envgym.rl.http import JsonServer

    calls = []

    async def handle(request):
        body = request.json()
        calls.append((request.path, body))
        if request.path == "/v1/chat/completions/render":
            return 200, {"features": {"mm_hashes": ["h"], "n": len(body["messages"][0]["content"])}}
        ids = [5, 6, 7]
        return 200, {"choices": [{"token_ids": ids, "finish_reason": "length", "logprobs": {"content": [
            {"token": f"token_id:{i}", "logprob": -0.5, "top_logprobs": []} for i in ids]}}]}

    server = JsonServer(handle)
    await server.start()
    backend = VLLMBackend(f"http://127.0.0.1:{server.port}", "m", tokenizer)
    try:
        out = await backend.generate([1, 2, 3], max_new_tokens=3, seed=4, images=[png((1, 1, 1))])
    finally:
        await backend.aclose()
        await server.aclose()
    assert out.completion_ids == [5, 6, 7] and out.logprobs == [-0.5] * 3 and out.finish_reason == "length"
    (render_path, render), (path, generate) = calls
    assert render_path == "/v1/chat/completions/render"
    assert render["messages"][0]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert path == "/inference/v1/generate" and generate["token_ids"] == [1, 2, 3]
    assert generate["features"] == {"mm_hashes": ["h"], "n": 1}
    assert generate["sampling_params"]["seed"] == 4 and generate["sampling_params"]["logprobs"] == 0


async def test_the_trl_adapter_refuses_a_vlm_plainly(vlm):
    from envgym.errors import SpecError
    from envgym.rl.adapters.trl import EnvgymRollout

    model, tokenizer, processor = vlm
    rollout = EnvgymRollout([], backend=TransformersBackend(model, tokenizer, processor=processor))
    with pytest.raises(SpecError, match="cannot pass the screenshots"):
        await rollout._ensure_proxy(None)
