"""The envgym web apps. Each module exports ``APP``, an :class:`~envgym_web.apps.base.App`."""

from __future__ import annotations

import importlib

from envgym.errors import SpecError
from envgym_web.apps.base import App

APPS = {
    "shop": "A shop: search, categories, product pages, cart, checkout, order history and cancellations.",
    "forum": "A forum with an admin panel: boards, posts, replies, moderation, users, roles and bans.",
}


def load_app(name: str) -> App:
    if name not in APPS:
        raise SpecError(f"unknown web app {name!r}; known: {', '.join(APPS)}")
    return importlib.import_module(f"envgym_web.apps.{name}").APP
