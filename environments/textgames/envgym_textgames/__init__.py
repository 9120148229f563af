"""envgym's text-game family: benchmarks others wrote, played through one ``act(command)`` tool.

Registered ids: ``text/scienceworld-v1`` (ScienceWorld's 30 task types, suite ``text-scienceworld``; extra
``scienceworld``) and ``text/textworld-v1`` (generated TextWorld games of the four challenge families, suite
``text-textworld``; extra ``textworld``), both graded by the game's own score through the verifier kind
``game_score`` (:mod:`envgym_textgames.game`). Task generators: ``text-textworld-gen``
(:mod:`envgym_textgames.textworld_gen`: seeded TextWorld games at three levels, ``text-textworld-gen@0:10000``
is a suite) and ``text-scienceworld-gen`` (:mod:`envgym_textgames.scienceworld_gen`: ScienceWorld's
variations on its own split).
"""

from __future__ import annotations

__all__ = ["register_all"]


def register_all() -> None:
    # Imported here: the hook may run while ``import envgym`` itself is still in progress.
    from envgym.plugin import register, register_generator, register_verifier

    register("text/scienceworld-v1", "envgym_textgames.scienceworld:ScienceWorldEnv",
                    suites=("text-scienceworld",), max_episode_steps=1000,
                    description="ScienceWorld (scienceworld package, Apache-2.0): 30 science task types in a "
                                "text world, graded by its own score.")
    register("text/textworld-v1", "envgym_textgames.textworld:TextWorldEnv", suites=("text-textworld",),
                    max_episode_steps=1000,
                    description="TextWorld (textworld package, MIT): generated games of the challenge families "
                                "tw-simple, tw-cooking, tw-coin_collector, tw-treasure_hunter, graded by the game.")
    register_verifier("game_score", "envgym_textgames.game:GameScoreSpec",
                             "envgym_textgames.game:check_game_score")  # imported when a task is graded
    # the modules import only the plug-in surface: the games' packages load when a task is made
    from envgym_textgames import scienceworld_gen, textworld_gen

    register_generator(textworld_gen.NAME, "envgym_textgames.textworld_gen:generate", family="text",
                       env_id="text/textworld-v1", levels=tuple(textworld_gen.LEVELS),
                       templates=textworld_gen.TEMPLATES,
                       description="TextWorld games built from the seed by TextWorld's generator: rooms, objects "
                                   "and quest length grow with the level; the quest's last action (goal family) "
                                   "is held out between train and test.")
    register_generator(scienceworld_gen.NAME, "envgym_textgames.scienceworld_gen:generate", family="text",
                       env_id="text/scienceworld-v1", levels=(1, 2, 3), templates=scienceworld_gen.TEMPLATES,
                       description="ScienceWorld's 7,207 task variations on its own train/dev/test split (finite), "
                                   "levels by gold-path length of the task type; gold paths replayed to 100.")
