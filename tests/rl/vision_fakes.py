"""Helpers of the multimodal RL tests: JPEG screenshots and an env whose observations carry them.

The screenshot model here imitates the families' (``jpeg_base64`` like the web family's, ``png_base64`` like
the GUI family's) without importing them: the kernel finds images by that protocol, whatever the family.
"""

from __future__ import annotations

import base64
import io
from typing import Any, Literal

from envgym.env import Env, StepResult
from envgym.registry import register_verifier
from envgym.task import TaskSpec
from envgym.types import Action, FrozenModel, Observation, Verdict
from envgym.verify import VerifyContext

ENV_ID = "test/colours-v1"
COLOURS = {"red": (220, 20, 20), "green": (20, 200, 40), "blue": (20, 40, 220)}


def jpeg(rgb: tuple[int, int, int], size: tuple[int, int] = (1280, 720), *, marker: int = 0) -> bytes:
    from PIL import Image, ImageDraw

    image = Image.new("RGB", size, rgb)
    ImageDraw.Draw(image).rectangle((10 * marker, 10, 10 * marker + 40, 50), fill=(255, 255, 255))
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=85)
    return buffer.getvalue()


def png(rgb: tuple[int, int, int], size: tuple[int, int] = (64, 48)) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, rgb).save(buffer, format="PNG")
    return buffer.getvalue()


def data_url(data: bytes, media_type: str = "image/jpeg") -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode()}"


class Shot(FrozenModel):
    width: int
    height: int
    jpeg_base64: str


class ScreenObservation(Observation):
    screenshot: Shot | None = None


def screen(text: str, rgb: tuple[int, int, int], size: tuple[int, int] = (1280, 720), marker: int = 0):
    data = jpeg(rgb, size, marker=marker)
    return ScreenObservation(text=text, screenshot=Shot(width=size[0], height=size[1],
                                                        jpeg_base64=base64.b64encode(data).decode()))


class ColourEnv(Env):
    """``turns`` screenshots of one colour; the reward is whether the last reply names it (else a small
    vowel share, so a random policy's rewards vary within a group)."""

    multimodal = True

    def __init__(self, turns: int = 2, size: tuple[int, int] = (1280, 720)) -> None:
        super().__init__()
        self.turns, self.size = turns, size
        self._step = 0
        self._reply = ""

    async def reset(self, *, task: TaskSpec | None = None, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        self.task = self.choose_task(task, seed, options)
        self._step = 0
        return screen(self.task.instruction, COLOURS[self.task.initial_state["colour"]], self.size), \
            {"tools": [], "policy": "Name the colour of the screen."}

    async def step(self, action: Action) -> StepResult:
        self._step += 1
        self._reply = action.text or ""
        done = self._step >= self.turns
        observation = screen(f"turn {self._step}", COLOURS[self.task.initial_state["colour"]], self.size,
                             marker=self._step)
        return StepResult(observation, 0.0, done, False, {})  # the kernel grades it

    async def verify_context(self) -> VerifyContext:
        return VerifyContext(calls=[], final_answer=self._reply)


class ColourReplySpec(FrozenModel):
    """A verifier kind of these tests: 1 if the reply names ``colour``, else a small share of vowels."""

    type: Literal["colour_reply"] = "colour_reply"
    colour: str


async def colour_reply(spec: ColourReplySpec, ctx: VerifyContext) -> Verdict:
    reply = (ctx.final_answer or "").lower()
    if spec.colour in reply:
        return Verdict(score=1.0, passed=True)
    letters = [c for c in reply if c.isalpha()]
    return Verdict(score=0.5 * sum(c in "aeiou" for c in letters) / max(len(letters), 1), passed=False)


register_verifier("colour_reply", ColourReplySpec, colour_reply)  # as a plug-in's hook registers its kind


def colour_tasks(n: int = 3) -> list[TaskSpec]:
    names = list(COLOURS)
    return [TaskSpec(id=f"colour-{i}", env_id=ENV_ID, instruction="Which colour is the screen?",
                     initial_state={"colour": names[i % len(names)]},
                     verifiers=({"type": "colour_reply", "colour": names[i % len(names)]},), split="train")
            for i in range(n)]
