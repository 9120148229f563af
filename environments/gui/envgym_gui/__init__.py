"""envgym's GUI family: Debian desktop applications in hardened containers, screenshots in, mouse and keyboard out.

Registered ids: ``gui/desktop-v1`` (:class:`envgym_gui.env.DesktopEnv`: a text editor, a file manager, a
terminal, LibreOffice Calc and Writer and an image editor on Xvfb, one fresh container per episode) with the
first-party suites written here, and ``gui/osworld-v1`` (the same env on tasks imported from OSWorld's task
format, :mod:`envgym_gui.osworld`). The verifier kind ``desktop`` (:mod:`envgym_gui.verify`) grades them.
"""

from __future__ import annotations

__all__ = ["SUITES", "register_all", "register_verifier"]

SUITES = ("gui-calc", "gui-writer", "gui-files")
"""The first-party suites of ``gui/desktop-v1``."""


def register_all() -> None:
    # Imported here: the hook may run while ``import envgym`` itself is still in progress.
    from envgym.plugin import register

    # Real apps' pixels are not always equal for the same seed under load (LibreOffice draws its toolbars in
    # late idle callbacks): Gymnasium's own flag says so. envgym check's own determinism check still runs.
    register("gui/desktop-v1", "envgym_gui.env:DesktopEnv", suites=SUITES, max_episode_steps=30,
                    nondeterministic=True,
                    description="Desktop apps (LibreOffice Calc/Writer, editor, files, terminal, image editor) "
                                "in a container; graded on the files and state the apps leave.")
    register("gui/osworld-v1", "envgym_gui.env:DesktopEnv", suites=("gui-osworld",), max_episode_steps=30,
                    nondeterministic=True,
                    description="OSWorld tasks imported by envgym_gui.osworld (the ones that need no download), "
                                "on the same desktop; OSWorld's Apache-2.0 licence.")
    register_verifier()


def register_verifier() -> None:
    """Register the verifier kind ``desktop`` by reference: :mod:`envgym_gui.verify` (and its file readers) is
    imported when a task is graded, not by every envgym command that loads the plug-ins."""
    from envgym.plugin import register_verifier

    register_verifier("desktop", "envgym_gui.verify:DesktopSpec", "envgym_gui.verify:check_desktop")
