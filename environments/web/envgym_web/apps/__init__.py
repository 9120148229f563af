"""The envgym web apps. Each module exports ``APP``, an :class:`~envgym_web.apps.base.App`."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from envgym_web.apps.base import App

__all__ = ["APPS", "load_app"]

APPS = {
    "shop": "A shop: search, categories, product pages, cart, checkout, order history and cancellations.",
    "forum": "A forum with an admin panel: boards, posts, replies, moderation, users, roles and bans.",
}


def load_app(name: str) -> App:
    if name not in APPS:
        from envgym.plugin import SpecError

        raise SpecError(f"unknown web app {name!r}; known: {', '.join(APPS)}")
    return importlib.import_module(f"envgym_web.apps.{name}").APP
