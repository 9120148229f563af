"""Screenshots through the recording proxy: token exactness, proxy overhead per call, storage per step.

    .venv/bin/python benchmarks/vision_rl.py exactness [--episodes 100] [--turns 3] [--concurrency 8]
    .venv/bin/python benchmarks/vision_rl.py overhead [--calls 60] [--backend instant|tiny]
    .venv/bin/python benchmarks/vision_rl.py storage [--episodes 20] [--turns 5]

The policy is :func:`envgym.rl.models.tiny_vlm` (a random 2-layer Qwen2-VL: a real vision tower, M-RoPE and
placeholder expansion; ``--max-pixels`` caps the image processor, 200x200 by default, so a 1280x720
screenshot is 45 image tokens). Screenshots are page-like JPEGs drawn here (white page, header bar, text
lines, a coloured button; JPEG quality 60 as the web family's ``screenshot()``): the first of an episode
1280x720, later ones 640x360 (the web family's default half-scale capture). No browser is needed.

exactness  ``--episodes`` episodes of ``--turns`` calls at temperature 1 through the proxy over HTTP, each
           user turn with a new screenshot as a data URL. Per token segment:
             decode   its ids decode to the transcript the harness renders itself: the chat template over
                      the messages it sent, each image placeholder repeated as many times as the image
                      processor's own grid says (computed from the pixels, not the proxy's size shortcut),
                      plus the last reply's sampled ids
             sampled  its model tokens are exactly the ids the backend sampled, in order
             images   its image references are the sha256 of the images the harness sent, in order
             logprob  the rollout logprobs against the learner's recomputation (envgym's ``Learner``: one
                      forward pass over prompt + completion, pixel values rebuilt from the image store)
overhead   one 1280x720 screenshot per call, sent as a data URL (an external harness) or as an
           ``envgym-image:`` store reference (envgym's in-process recording agent); direct = the backend's
           ``generate`` timed inside the proxy, proxy = the client's round trip, overhead = the difference
storage    the bytes a step (one model call's token record) and a training sample take with image
           references plus the content-addressed store, versus the same records with every image inline
           (base64 in each record, as a trainer that keeps pixels with samples would)
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import io
import json
import statistics
import sys
import time
from pathlib import Path

import httpx
import torch

from envgym.agents.hf import render
from envgym.rl.backends import Completion, TransformersBackend
from envgym.rl.models import tiny_vlm
from envgym.rl.proxy import RecordingProxy
from envgym.rl.samples import samples_from_episode
from envgym.rl.train.config import TrainConfig
from envgym.rl.train.learner import Learner
from envgym.rl.vision import REF_SCHEME, VisionProcessor

sys.path.insert(0, str(Path(__file__).parent))
from proxy_overhead import LeanClient, pct


def screenshot(seed: int, size: tuple[int, int]) -> bytes:
    """A page-like JPEG: header bar, lines of text, a button; different for every seed."""
    from PIL import Image, ImageDraw

    width, height = size
    image = Image.new("RGB", size, (255, 255, 255))
    draw = ImageDraw.Draw(image)
    hue = (seed * 47) % 200
    draw.rectangle((0, 0, width, height // 12), fill=(30 + hue // 3, 60, 120 + hue // 2))
    for line in range(14):
        y = height // 8 + line * height // 20
        draw.text((width // 20, y), f"Item {seed}-{line}: lorem ipsum dolor sit amet {seed * line}", fill=(20, 20, 20))
    x, y = (seed * 97) % (width - 200), height - height // 6
    draw.rectangle((x, y, x + width // 8, y + height // 16), fill=(200, 80 + hue // 2, 40))
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=60)
    return buffer.getvalue()


def data_url(data: bytes) -> str:
    return "data:image/jpeg;base64," + base64.b64encode(data).decode()


def user(text: str, url: str) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": text},
                                        {"type": "image_url", "image_url": {"url": url}}]}


def build(args):
    model, tokenizer, processor = tiny_vlm(seed=0, max_pixels=args.max_pixels)
    return model, tokenizer, processor


async def play(client, proxy, key: str, episode: int, turns: int, max_tokens: int) -> tuple[list, list, list]:
    """One episode; returns the messages sent, the replies' sampled ids and the images sent (bytes)."""
    url = proxy.base_url_for(key) + "/chat/completions"
    shot = screenshot(episode * 100, (1280, 720))
    messages = [{"role": "system", "content": "You operate a web browser from screenshots."},
                user("Open the cheapest item.", data_url(shot))]
    replies, images = [], [shot]
    for turn in range(turns):
        body = {"messages": messages, "max_tokens": max_tokens, "temperature": 1.0, "top_p": 1.0,
                "seed": 1000 * episode + turn, "return_token_ids": True}
        response = await client.post(url, json=body)
        response.raise_for_status()
        data = response.json()
        replies.append(data["choices"][0]["token_ids"])
        messages.append(data["choices"][0]["message"])
        if turn < turns - 1:
            shot = screenshot(episode * 100 + turn + 1, (640, 360))
            images.append(shot)
            messages.append(user(f"The page after your action ({turn}).", data_url(shot)))
    return messages, replies, images


def harness_text(tokenizer, vision, messages, replies, n_calls: int, images: list) -> str:
    """What the first ``n_calls`` calls' tokens must decode to, rendered by the harness on its own."""
    eos = tokenizer.eos_token_id
    raw = [tokenizer.decode(r[:-1] if r and r[-1] == eos else r, skip_special_tokens=False) for r in replies]
    seen, upto = 0, len(messages)
    for i, m in enumerate(messages):
        if m["role"] == "assistant":
            seen += 1
            if seen == n_calls:
                upto = i
                break
    turns = []
    for m in messages[:upto]:
        content = m.get("content") or ""
        if isinstance(content, list):
            content = [{"type": "image"} if p["type"] == "image_url" else p for p in content]
        turns.append({"role": m["role"], "content": content})
    text = tokenizer.apply_chat_template(render(turns, raw[: n_calls - 1]), tokenize=False, add_generation_prompt=True)
    from PIL import Image

    pieces = text.split("<|image_pad|>")
    out = pieces[0]
    for piece, data in zip(pieces[1:], images, strict=True):
        with Image.open(io.BytesIO(data)) as image:
            grid = vision.features([image.convert("RGB")])["image_grid_thw"][0]
        out += "<|image_pad|>" * (int(grid.prod()) // vision.merge**2) + piece
    return out + tokenizer.decode(replies[n_calls - 1], skip_special_tokens=False)


async def exactness(args) -> None:
    model, tokenizer, processor = build(args)
    vision = VisionProcessor.of(processor)
    import copy

    backend = TransformersBackend(copy.deepcopy(model), tokenizer, processor=processor, max_batch=args.concurrency)
    gate = asyncio.Semaphore(args.concurrency)
    results = []
    started = time.perf_counter()
    async with RecordingProxy(backend) as proxy, httpx.AsyncClient(timeout=600) as client:

        async def run(i: int) -> None:
            async with gate:
                messages, replies, images = await play(client, proxy, f"ep{i}", i, args.turns, args.max_tokens)
                results.append((proxy.close_session(f"ep{i}"), messages, replies, images))

        await asyncio.gather(*(run(i) for i in range(args.episodes)))
        rollout_s = time.perf_counter() - started
        learner = Learner(model, TrainConfig(model="tiny-vlm"), processor=processor, images=proxy.images)
        segments = decode_ok = sampled_ok = images_ok = model_tokens = image_tokens = image_count = 0
        deltas: list[float] = []
        for record, messages, replies, images in results:
            done = 0
            for segment, sample in zip(record.segments(), samples_from_episode(record, reward=0.0), strict=True):
                segments += 1
                first, done = done, done + segment.calls
                sent = images[: len(sample.images)]
                text = tokenizer.decode(segment.tokens, skip_special_tokens=False)
                decode_ok += text == harness_text(tokenizer, vision, messages, replies, done, sent)
                generated = [t for t, m in zip(segment.completion_ids, segment.loss_mask, strict=True) if m]
                sampled_ok += generated == [t for r in replies[first:done] for t in r]
                images_ok += sample.images == ["sha256:" + hashlib.sha256(d).hexdigest() for d in sent]
                model_tokens += sample.model_tokens
                image_tokens += segment.tokens.count(vision.image_token_id)
                image_count += len(sample.images)
                with torch.no_grad():
                    batch = learner._batch([sample])
                    new = learner.logprobs(batch)[0]
                mask = batch["mask"][0].bool()
                deltas += (new[mask] - batch["rollout"][0][mask]).abs().tolist()
    await backend.aclose()
    print(f"tiny-vlm (max_pixels {args.max_pixels}); {args.episodes} episodes x {args.turns} calls, temperature 1, "
          f"max_tokens {args.max_tokens}, concurrency {args.concurrency}; rollouts took {rollout_s:.1f} s")
    rows = [("segments (per episode)", f"{segments} ({segments / max(1, len(results)):.2f})"),
            ("images / image placeholder tokens", f"{image_count} / {image_tokens}"),
            ("model tokens", f"{model_tokens}"),
            ("segments decoding to the harness's transcript", f"{decode_ok}/{segments}"),
            ("segments whose model tokens are the sampled ids", f"{sampled_ok}/{segments}"),
            ("segments whose image refs are the sent images", f"{images_ok}/{segments}"),
            ("logprob max |delta| (learner recompute)", f"{max(deltas):.2e}"),
            ("logprob mean |delta|", f"{sum(deltas) / len(deltas):.2e}")]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


class InstantVisionBackend:
    """A VLM backend that answers at once (the tiny VLM's tokenizer and processor): what is left is the proxy."""

    def __init__(self, tokenizer, processor) -> None:
        self.tokenizer, self.processor, self.policy_version = tokenizer, processor, 0

    async def generate(self, prompt_ids, *, max_new_tokens, temperature=1.0, top_p=1.0, seed=None, stop=None,
                       images=None):
        return Completion([self.tokenizer.eos_token_id], [-0.1], "stop", 0)

    async def update_weights(self, state_dict_or_path, version):
        self.policy_version = version

    async def aclose(self):
        pass


async def overhead(args) -> None:
    model, tokenizer, processor = build(args)
    backend = (TransformersBackend(model, tokenizer, processor=processor) if args.backend == "tiny"
               else InstantVisionBackend(tokenizer, processor))
    shots = [screenshot(i, (1280, 720)) for i in range(args.calls + 5)]
    rows = {}
    async with RecordingProxy(backend) as proxy:
        for mode in ("data URL", "store ref"):
            client = LeanClient(proxy.port)
            pairs, body_kb = [], []
            for i, shot in enumerate(shots):
                url = data_url(shot) if mode == "data URL" else REF_SCHEME + proxy.images.put(shot, "image/jpeg")
                key = f"{mode[0]}{i}"
                body = {"messages": [{"role": "system", "content": "You operate a web browser."},
                                     user("Open the cheapest item.", url)], "max_tokens": 1, "temperature": 0}
                started = time.perf_counter()
                await client.post(proxy.port, f"/s/{key}/v1/chat/completions", body)
                wall = time.perf_counter() - started
                if i >= 5:  # warm-up calls
                    pairs.append((proxy.session(key).calls[-1].seconds * 1e3, wall * 1e3))
                    body_kb.append(len(json.dumps(body)) / 1e3)
                proxy.close_session(key)
            await client.aclose()
            rows[mode] = (pairs, statistics.median(body_kb))
    await backend.aclose()
    print(f"backend: {args.backend}; {args.calls} calls per mode, each a new session with one 1280x720 JPEG screenshot "
          f"({statistics.mean(len(s) for s in shots) / 1e3:.0f} KB; a new image every call)")
    print(f"{'image sent as':<14} {'body':>7} {'direct p50':>11} {'proxy p50':>10} {'overhead p50':>13} {'p90':>8}")
    for mode, (pairs, kb) in rows.items():
        extra = [p - d for d, p in pairs]
        print(f"{mode:<14} {kb:>5.0f}KB {statistics.median(d for d, _ in pairs):>9.2f}ms "
              f"{statistics.median(p for _, p in pairs):>8.2f}ms {pct(extra, 0.5):>11.2f}ms {pct(extra, 0.9):>6.2f}ms")


async def storage(args) -> None:
    model, tokenizer, processor = build(args)
    backend = TransformersBackend(model, tokenizer, processor=processor, max_batch=8)
    records = []
    async with RecordingProxy(backend) as proxy, httpx.AsyncClient(timeout=600) as client:
        for i in range(args.episodes):
            await play(client, proxy, f"st{i}", i, args.turns, args.max_tokens)
            records.append(proxy.close_session(f"st{i}"))
        store_bytes = sum(len(proxy.images.get(ref)) for ref in {r for rec in records for c in rec.calls
                                                                 for r in c.images})

        def inline(refs):
            return [data_url(proxy.images.get(ref)) for ref in refs]

        steps = [c.to_dict() for rec in records for c in rec.calls]
        samples = [s for rec in records for s in samples_from_episode(rec, reward=0.0)]
        step_ref = sum(len(json.dumps(s)) for s in steps)
        step_inline = sum(len(json.dumps({**s, "images": inline(s["images"])})) for s in steps)
        sample_ref = sum(len(s.model_dump_json()) for s in samples)
        sample_inline = sum(len(json.dumps({**s.model_dump(mode="json"), "images": inline(s.images)})) for s in samples)
    await backend.aclose()
    n_steps, n_samples = len(steps), len(samples)
    print(f"{args.episodes} episodes x {args.turns} steps (a 1280x720 screenshot, then one 640x360 per step; "
          f"{len({r for rec in records for c in rec.calls for r in c.images})} distinct images, "
          f"{store_bytes / 1e3:.0f} KB in the store)")
    print(f"{'record':<26} {'with references':>16} {'+ store share':>14} {'images inline':>14} {'ratio':>7}")
    for name, n, ref, inl in (("per step (token record)", n_steps, step_ref, step_inline),
                              ("per training sample", n_samples, sample_ref, sample_inline)):
        shared = (ref + store_bytes) / n
        print(f"{name:<26} {ref / n / 1e3:>14.1f}KB {shared / 1e3:>12.1f}KB {inl / n / 1e3:>12.1f}KB "
              f"{inl / (ref + store_bytes):>6.1f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["exactness", "overhead", "storage"])
    parser.add_argument("--episodes", type=int, default=None)
    parser.add_argument("--turns", type=int, default=None)
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--max-pixels", type=int, default=200 * 200)
    parser.add_argument("--backend", choices=["instant", "tiny"], default="instant")
    parsed = parser.parse_args()
    parsed.episodes = parsed.episodes or (100 if parsed.what == "exactness" else 20)
    parsed.turns = parsed.turns or (3 if parsed.what == "exactness" else 5)
    torch.set_num_threads(2)
    asyncio.run({"exactness": exactness, "overhead": overhead, "storage": storage}[parsed.what](parsed))
