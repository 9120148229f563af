"""envgym._images: an observation's images found by protocol, whatever the family, and the size budget."""

from __future__ import annotations

import base64
import io

import pytest

from envgym._images import ObservedImage, fit_image, image_parts, observation_images
from envgym.types import FrozenModel, Observation

pytest.importorskip("PIL")


def _jpeg(size=(1280, 720), rgb=(200, 30, 30)) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, rgb).save(buffer, format="JPEG")
    return buffer.getvalue()


def _png(size=(64, 48), rgb=(0, 0, 0)) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, rgb).save(buffer, format="PNG")
    return buffer.getvalue()


class Shot(FrozenModel):  # the web family's shape
    width: int
    height: int
    jpeg_base64: str


class ScreenObservation(Observation):
    screenshot: Shot | None = None


def screen(size=(1280, 720)) -> ScreenObservation:
    return ScreenObservation(text="page", screenshot=Shot(width=size[0], height=size[1],
                                                          jpeg_base64=base64.b64encode(_jpeg(size)).decode()))


def test_observation_images_finds_screenshots_of_any_family_by_protocol():
    web = screen((64, 48))
    [image] = observation_images(web)
    assert image.media_type == "image/jpeg" and (image.width, image.height) == (64, 48)
    assert image.data == base64.b64decode(web.screenshot.jpeg_base64)
    assert image.sha256.startswith("sha256:") and len(image.sha256) == 71

    class Png(FrozenModel):  # the GUI family's shape
        width: int
        height: int
        png_base64: str

    class Desktop(Observation):
        screenshot: Png | None = None

    gui = Desktop(text="x", screenshot=Png(width=64, height=48, png_base64=base64.b64encode(_png()).decode()))
    assert [i.media_type for i in observation_images(gui)] == ["image/png"]
    assert observation_images(Observation(text="text only")) == []
    assert observation_images(ScreenObservation(text="no shot")) == []

    class Own(Observation):
        def images(self):
            return [ObservedImage.from_bytes(_png(rgb=(1, 2, 3)), "image/png")]

    assert len(observation_images(Own())) == 1


def test_fit_image_keeps_an_image_within_budget_and_leaves_a_small_one_alone():
    big = observation_images(screen())[0]
    small = fit_image(big, max_pixels=320 * 180)
    assert small.width * small.height <= 320 * 180 and small.width / small.height == pytest.approx(16 / 9, rel=0.02)
    assert fit_image(big, max_bytes=2_000).data.__len__() <= 2_000
    same = fit_image(big, max_pixels=1280 * 720, max_bytes=10**7)
    assert same.sha256 == big.sha256
    with pytest.raises(ValueError, match="positive"):
        fit_image(big, max_pixels=0)


def test_the_families_real_screenshots_are_found():
    # The web and GUI families' own observation classes (tests may import families; the kernel may not).
    web = pytest.importorskip("envgym_web.observe")
    assert set(web.Screenshot.model_fields) == set(Shot.model_fields)  # the fake above is the web shape
    shot = web.Screenshot(width=64, height=48, jpeg_base64=base64.b64encode(_jpeg((64, 48))).decode())
    [found] = observation_images(web.WebObservation(text="page", screenshot=shot))
    assert found.media_type == "image/jpeg" and (found.width, found.height) == (64, 48)
    gui = pytest.importorskip("envgym_gui.observe")
    desktop = gui.GuiObservation(text="desk", screenshot=gui.Screenshot(
        width=64, height=48, png_base64=base64.b64encode(_png(rgb=(9, 9, 9))).decode()))
    [found] = observation_images(desktop)
    assert found.media_type == "image/png" and found.data == desktop.screenshot.png()


def test_image_parts_are_openai_data_urls_and_bad_base64_is_named():
    [part] = image_parts(observation_images(screen((32, 32))))
    assert part["type"] == "image_url" and part["image_url"]["url"].startswith("data:image/jpeg;base64,")
    with pytest.raises(ValueError, match="not valid base64"):
        _ = ObservedImage("@@@", "image/png").data
