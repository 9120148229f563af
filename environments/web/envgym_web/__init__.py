"""envgym's web family: local web apps and MiniWoB++ in a real Chromium, through Playwright's async API.

Registered ids: ``web/shop-v1`` and ``web/forum-v1`` (envgym apps, suites ``web-shop`` and ``web-forum``)
and ``web/miniwob-v1`` (MiniWoB++ pages from the ``miniwob`` package, suite ``web-miniwob``). Task generators:
``web-shop-gen`` (:mod:`envgym_web.authoring.shop_gen`) and ``web-forum-gen`` (:mod:`envgym_web.authoring.forum_gen`),
seeded worlds and goals for each app (``web-shop-gen@0:10000`` is a suite).
"""

from __future__ import annotations

__all__ = ["APP_ENVS", "FORUM_TEMPLATES", "SHOP_TEMPLATES", "register_all"]

APP_ENVS = {
    "shop": "A shop in a real browser: search, cart, checkout, order history (write-action graded).",
    "forum": "A forum with an admin panel in a real browser: posts, replies, moderation, roles, bans.",
}
SHOP_TEMPLATES = {"buy": "train", "cheapest": "train", "cancel": "train", "price": "train", "order-total": "train",
                  "buy-pair": "test", "cart-fix": "test", "stock": "test", "order-count": "test"}
"""``web-shop-gen``'s template families and the split of each (:mod:`envgym_web.authoring.shop_gen`)."""
FORUM_TEMPLATES = {"create-post": "train", "reply": "train", "pin": "train", "set-role": "train", "author": "train",
                   "lock": "test", "delete-spam": "test", "ban": "test", "reply-count": "test"}
"""``web-forum-gen``'s template families and the split of each (:mod:`envgym_web.authoring.forum_gen`)."""


def register_all() -> None:
    # Imported here: the hook may run while ``import envgym`` itself is still in progress.
    from envgym.plugin import register, register_generator

    for app, description in APP_ENVS.items():
        register(f"web/{app}-v1", "envgym_web.env:WebAppEnv", kwargs={"app": app}, suites=(f"web-{app}",),
                 max_episode_steps=30, description=description)
    register("web/miniwob-v1", "envgym_web.miniwob:MiniWobEnv", suites=("web-miniwob",), max_episode_steps=20,
             description="MiniWoB++ task pages (miniwob package, MIT), graded by the page's own reward.")
    register_generator("web-shop-gen", "envgym_web.authoring.shop_gen:generate", family="web", env_id="web/shop-v1",
                       levels=(1, 2, 3), templates=SHOP_TEMPLATES,
                       description="Seeded EnvShop catalogues and order histories; 1-3 errands per level (buy, "
                                   "cancel, fix the cart, questions on prices, stock and orders).")
    register_generator("web-forum-gen", "envgym_web.authoring.forum_gen:generate", family="web",
                       env_id="web/forum-v1", levels=(1, 2, 3), templates=FORUM_TEMPLATES,
                       description="Seeded EnvForum users, boards and threads; 1-3 errands per level by a member, "
                                   "moderator or admin (post, reply, pin, lock, delete spam, roles, bans, questions).")
