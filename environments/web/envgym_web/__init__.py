"""envgym's web family: local web apps and MiniWoB++ in a real Chromium, through Playwright's async API.

Registered ids: ``web/shop-v1`` and ``web/forum-v1`` (envgym apps, suites ``web-shop`` and ``web-forum``)
and ``web/miniwob-v1`` (MiniWoB++ pages from the ``miniwob`` package, suite ``web-miniwob``).
"""

from __future__ import annotations

__all__ = ["APP_ENVS", "register_all"]

APP_ENVS = {
    "shop": "A shop in a real browser: search, cart, checkout, order history (write-action graded).",
    "forum": "A forum with an admin panel in a real browser: posts, replies, moderation, roles, bans.",
}


def register_all() -> None:
    # Imported here: the hook may run while ``import envgym`` itself is still in progress.
    from envgym.plugin import register

    for app, description in APP_ENVS.items():
        register(f"web/{app}-v1", "envgym_web.env:WebAppEnv", kwargs={"app": app}, suites=(f"web-{app}",),
                 max_episode_steps=30, description=description)
    register("web/miniwob-v1", "envgym_web.miniwob:MiniWobEnv", suites=("web-miniwob",), max_episode_steps=20,
             description="MiniWoB++ task pages (miniwob package, MIT), graded by the page's own reward.")
