"""envgym's GUI family: Debian desktop applications in hardened containers, screenshots in, mouse and keyboard out.

Registered ids: ``gui/desktop-v1`` (:class:`envgym_gui.env.DesktopEnv`: a text editor, a file manager, a
terminal, LibreOffice Calc and Writer and an image editor on Xvfb, one fresh container per episode) with the
first-party suites written here, and ``gui/osworld-v1`` (:class:`envgym_gui.osworld_env.OSWorldEnv`: the same
desktop on tasks imported from OSWorld's task format, :mod:`envgym_gui.osworld`, that also takes OSWorld's own
pyautogui and computer_13 actions and can give its observation, so an agent written for OSWorld runs). The
verifier kind ``desktop`` (:mod:`envgym_gui.verify`) grades them.
The task generator ``gui-desktop-gen`` (:mod:`envgym_gui.authoring.desktop_gen`; ``gui-desktop-gen@0:10000``
is a suite) makes seeded tasks for ``gui/desktop-v1``.
"""

from __future__ import annotations

__all__ = ["GENERATOR_TEMPLATES", "SUITES", "register_all", "register_verifier"]

SUITES = ("gui-calc", "gui-writer", "gui-files")
"""The first-party suites of ``gui/desktop-v1``."""

GENERATOR_TEMPLATES = {
    "sheet-update": "train", "sheet-formula": "train", "doc-format": "train", "doc-rewrite": "train",
    "config-set": "train", "tree-organise": "train",
    "sheet-append": "test", "sheet-product": "test", "doc-align": "test", "doc-append": "test",
    "list-rename": "test", "tree-extract": "test",
}
"""``gui-desktop-gen``'s template families and the split of each (:mod:`envgym_gui.authoring.desktop_gen`)."""


def register_all() -> None:
    # Imported here: the hook may run while ``import envgym`` itself is still in progress.
    from envgym.plugin import register, register_generator

    # gui/desktop-v1's first observations are byte-identical for the same task (benchmarks/gui_determinism.py:
    # 200 of 200 for Calc, Writer, terminal and files, host load 2-54); gui/osworld-v1's other apps are unmeasured.
    register("gui/desktop-v1", "envgym_gui.env:DesktopEnv", suites=SUITES, max_episode_steps=30,
                    description="Desktop apps (LibreOffice Calc/Writer, editor, files, terminal, image editor) "
                                "in a container; graded on the files and state the apps leave.")
    register("gui/osworld-v1", "envgym_gui.osworld_env:OSWorldEnv", suites=("gui-osworld",),
                    max_episode_steps=30, nondeterministic=True,
                    description="OSWorld tasks imported by envgym_gui.osworld (the ones that need no download), "
                                "on the same desktop, with OSWorld's pyautogui / computer_13 actions and observation "
                                "beside envgym's; OSWorld's Apache-2.0 licence.")
    register_generator("gui-desktop-gen", "envgym_gui.authoring.desktop_gen:generate", family="gui",
                       env_id="gui/desktop-v1", levels=(1, 2, 3), templates=GENERATOR_TEMPLATES,
                       description="Seeded spreadsheets, documents and file trees with 1-3 edits each (Calc, "
                                   "Writer, editor, terminal), graded on the files the apps leave.")
    register_verifier()


def register_verifier() -> None:
    """Register the verifier kind ``desktop`` by reference: :mod:`envgym_gui.verify` (and its file readers) is
    imported when a task is graded, not by every envgym command that loads the plug-ins."""
    from envgym.plugin import register_verifier

    register_verifier("desktop", "envgym_gui.verify:DesktopSpec", "envgym_gui.verify:check_desktop")
