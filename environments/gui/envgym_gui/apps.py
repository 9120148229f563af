"""Apps beyond the desktop image's own, and the image each app's episodes run in.

The desktop image (``sandboxes/desktop``) holds the apps of :data:`envgym_gui.desktop.BASE_APPS`. An image
built ``FROM`` it can add more: it ships ``/opt/envgym/desktop/apps.d/<key>.json`` (the daemon reads them at
start) and names itself here, in :data:`EXTRA_APPS` (app key -> the image recipe under ``sandboxes/`` that
holds it). :func:`image_for` is what the env asks when it picks the desktop an episode of an app runs on.

``sandboxes/desktop-apps`` (a ``FROM desktop`` recipe) holds the apps OSWorld's Linux tasks use, from Debian's
packages: LibreOffice Impress, GIMP, VLC, Thunderbird and Chromium. ``make setup`` does not build it (it is
large); :func:`ensure_image` builds it on first use, or ``envgym sandbox build desktop-apps`` ahead of time.
"""

from __future__ import annotations

from collections.abc import Callable

EXTRA_APPS: dict[str, str] = {
    "impress": "desktop-apps",
    "gimp": "desktop-apps",
    "vlc": "desktop-apps",
    "thunderbird": "desktop-apps",
    "chromium": "desktop-apps",
}
"""App key -> the image recipe (a folder under ``sandboxes/``) whose desktops have it."""


def image_for(app: str | None) -> str:
    """The image recipe an episode that opens ``app`` (or no app) runs in."""
    return EXTRA_APPS.get(app or "", "desktop")


def ensure_image(app: str | None, log: Callable[[str], None] = print) -> str:
    """The tag of the image ``app`` runs in, built first (with its parents) when this host lacks it.

    Blocking (a build of ``desktop-apps`` downloads its Debian packages with the host's apt and takes minutes
    once): call it from a thread in async code. ``log`` gets one line before a build starts, then the build's.
    """
    from envgym.plugin.sandbox import build_images, connect, tag_for

    recipe = image_for(app)
    tag = tag_for(recipe)
    api = connect()
    try:
        present = bool(api.images(name=tag))
    finally:
        api.close()
    if present:
        return tag
    log(f"{tag} (the image of app {app!r}) is not built on this host: building it now, once "
        f"(`envgym sandbox build {recipe}` does the same ahead of time)")
    return build_images([recipe], log=log)[-1][0]
