"""Apps beyond the desktop image's own, and the image each app's episodes run in.

The desktop image (``sandboxes/desktop``) holds the apps of :data:`envgym_gui.desktop.BASE_APPS`. An image
built ``FROM`` it can add more: it ships ``/opt/envgym/desktop/apps.d/<key>.json`` (the daemon reads them at
start) and names itself here, in :data:`EXTRA_APPS` (app key -> the image recipe under ``sandboxes/`` that
holds it). :func:`image_for` is what the env asks when it picks the desktop an episode of an app runs on.
"""

from __future__ import annotations

EXTRA_APPS: dict[str, str] = {}
"""App key -> the image recipe (a folder under ``sandboxes/``) whose desktops have it."""


def image_for(app: str | None) -> str:
    """The image recipe an episode that opens ``app`` (or no app) runs in."""
    return EXTRA_APPS.get(app or "", "desktop")
