"""``text-textworld-gen``: TextWorld games by the thousand, each built from its seed by TextWorld's generator.

:func:`generate` is the generator (registered in :func:`envgym_textgames.register_all`). A task is one game
of the TextWorld challenge :data:`CHALLENGE`, which this module registers with TextWorld (so ``tw-make
envgym-quests-v1 --world-size 6 ...`` builds the same game). The challenge is TextWorld's ``tw-make custom``
game (a map of ``--world-size`` rooms, at least ``--nb-objects`` objects, one quest of exactly
``--quest-length`` actions, found by TextWorld's backward chaining over its knowledge base) with one more
setting, ``--goal``: the family of the quest's *last* action (what the objective asks for), so that a split
can hold goal families out. A task is built in three moves:

1. **Settings** from the request: the level's world size, objects and quest length (:data:`LEVELS`), a
   goal family of the request's split, and a game seed drawn from the request's ``rng`` (the next one when
   TextWorld finds no quest of that length on a seed's map, or when the walkthrough types a name Inform's
   parser would ask about, :func:`_ambiguous`).
2. **The game**, generated in memory (no compiling): its objective becomes the instruction and its
   walkthrough (TextWorld's winning policy over the quest's dependency tree) the reference solution,
   replayed on TextWorld's own logic state to prove it completes the quest (:class:`RuntimeError` if not:
   a bug here or in TextWorld).
3. **Grading** is the game's (``game_score``, won iff the compiled game says won). The task's
   ``initial_state`` is ``{"challenge", "args", "seed"}``; ``text/textworld-v1`` compiles the game from it
   before the first episode into ``~/.cache/envgym/textworld`` (Inform 7; seconds), never into the repo.

Template families are goal families (:data:`GOALS`; train and test share none, so a model trained on
``train`` is tested on quests that end with actions it never had to finish with)::

    train: take, put-on, open, unlock
    test:  insert, eat, drop, close-lock

Levels (:data:`LEVELS`) grow the world and the quest: 1: 3 rooms, 6 objects, 2 actions, things named with
adjectives (``--adjectives``: with bare nouns a two-command quest over three rooms has few walkthroughs to
give, and they repeated); 2: 6 rooms, 12 objects, 4 actions; 3: 10 rooms, 20 objects, 7 actions, and the
objective names only the last action (TextWorld's ``--only-last-action``: the agent must find the way there
itself).
"""

from __future__ import annotations

import argparse
import functools
import warnings
from dataclasses import dataclass
from typing import Any

from envgym.plugin import Action, Limits, TaskSpec

NAME = "text-textworld-gen"
CHALLENGE = "envgym-quests-v1"
"""The TextWorld challenge's name; the version changes whenever a game of the same settings would change."""

GOALS: dict[str, tuple[str, tuple[str, ...]]] = {
    # family: (split, TextWorld rules the quest's last action may be)
    "take": ("train", ("take", "take/c", "take/s")),
    "put-on": ("train", ("put",)),
    "open": ("train", ("open/c", "open/d")),
    "unlock": ("train", ("unlock/c", "unlock/d")),
    "insert": ("test", ("insert",)),
    "eat": ("test", ("eat",)),
    "drop": ("test", ("drop",)),
    "close-lock": ("test", ("close/c", "close/d", "lock/c", "lock/d")),
}
TEMPLATES = {family: split for family, (split, _) in GOALS.items()}


@dataclass(frozen=True)
class Level:
    world_size: int
    nb_objects: int
    quest_length: int
    brief: bool
    """The objective names only the quest's last action."""
    adjectives: bool = False
    """Things' names may take an adjective from TextWorld's grammar (``--adjectives``): more names to draw."""


LEVELS = {1: Level(3, 6, 2, False, adjectives=True), 2: Level(6, 12, 4, False), 3: Level(10, 20, 7, True)}
SEED_TRIES = 20
"""Game seeds tried per task before giving up (TextWorld finds no quest on some maps)."""


# --- the TextWorld challenge -------------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--world-size", type=int, required=True, help="rooms in the world")
    parser.add_argument("--nb-objects", type=int, required=True, help="at least this many objects")
    parser.add_argument("--quest-length", type=int, required=True, help="actions the quest takes")
    parser.add_argument("--goal", choices=sorted(GOALS), required=True, help="the family of the last action")
    parser.add_argument("--brief", action="store_true", help="the objective names only the last action")
    parser.add_argument("--adjectives", action="store_true",
                        help="names may take an adjective (TextWorld's include_adj)")


def make(settings: dict[str, Any], options: Any = None) -> Any:
    """A game of the challenge (TextWorld's ``make(settings, options)``; every choice from ``options.seeds``)."""
    import textworld
    from textworld.generator import GenerationWarning, make_grammar, make_quest, make_world
    from textworld.generator.data import KnowledgeBase

    options = options or textworld.GameOptions()
    options.kb = KnowledgeBase.default()  # parsed once per process (GameOptions would parse it per game)
    options.nb_rooms, options.nb_objects = settings["world_size"], settings["nb_objects"]
    chaining = options.chaining
    chaining.min_length = chaining.max_length = chaining.max_depth = settings["quest_length"]
    chaining.min_breadth = chaining.max_breadth = 1
    options.grammar.only_last_action = bool(settings["brief"])
    options.grammar.include_adj = bool(settings.get("adjectives"))
    options.grammar.allowed_variables_numbering = True  # names stay unique in large worlds
    rngs = options.rngs
    world = make_world(options.nb_rooms, nb_objects=0, rngs=rngs)
    # as textworld.generator.make_game, with the last action restricted to the goal's rules
    rules = options.kb.rules
    chaining.rules_per_depth = [[rules[name] for name in GOALS[settings["goal"]][1]]]
    chaining.backward = chaining.create_variables = True
    chaining.rng = rngs["quest"]
    chaining.restricted_types = {"r", "d"}
    quests = make_quest(world, options)
    placed = sum(1 for e in world.entities if e.type not in {"r", "d", "I", "P"})
    if options.nb_objects > placed:
        world.populate(options.nb_objects - placed, rng=rngs["objects"])
    with warnings.catch_warnings():  # large worlds run short of names: TextWorld falls back on others (seeded)
        warnings.simplefilter("ignore", GenerationWarning)
        game = textworld.Game(world, make_grammar(options.grammar, rng=rngs["grammar"]), quests)
    game.metadata["uuid"] = options.uuid
    game.metadata["desc"] = f"{CHALLENGE} {settings['goal']}"
    return game


def register_challenge() -> None:
    """Register :data:`CHALLENGE` with TextWorld (once per process)."""
    import textworld.challenges

    if CHALLENGE not in textworld.challenges.CHALLENGES:
        textworld.challenges.register(CHALLENGE, "envgym: a tw-make custom game whose quest ends with a goal "
                                                 "family's action", make, add_arguments)


# --- the generator -----------------------------------------------------------------------------------------

def challenge_args(level: Level, goal: str) -> list[str]:
    return ["--world-size", str(level.world_size), "--nb-objects", str(level.nb_objects), "--quest-length",
            str(level.quest_length), "--goal", goal, *(["--brief"] if level.brief else []),
            *(["--adjectives"] if level.adjectives else [])]


def build(args: list[str], seed: int) -> Any:
    """The game (in memory, not compiled) that ``text/textworld-v1`` compiles from ``{"challenge": CHALLENGE,
    "args": args, "seed": seed}``; QuestGenerationError when the seed's map has no such quest."""
    import textworld

    from envgym_textgames.textworld import _LIBRARY, _settings

    register_challenge()
    options = textworld.GameOptions()
    options.seeds = seed
    with _LIBRARY:
        return make(_settings(CHALLENGE, args), options)


def _proven(game: Any) -> tuple[list[str], set[str]]:
    """The game's walkthrough, after replaying its policy on TextWorld's logic state wins the quest, and the names
    of the things its commands name."""
    from textworld.generator.game import GameProgression

    progression = GameProgression(game)
    policy = progression.winning_policy or ()
    for action in policy:
        progression.update(action)
    walkthrough = list(game.walkthrough or ())
    if not policy or not progression.completed or len(walkthrough) != len(policy):
        raise RuntimeError(f"{NAME}: the walkthrough of {game.metadata.get('uuid')} does not win its quest")
    named = {game.infos[v.name].name for action in policy for v in action.variables if v.name in game.infos}
    return walkthrough, {name for name in named if name}


def _ambiguous(game: Any, named: set[str]) -> str | None:
    """A name the walkthrough types that Inform's parser would not resolve alone: every word of it is a word of
    another thing's name too ("take keycard from box" beside a "type 6 box" asks "Which do you mean?"). None
    when there is none."""
    names = sorted({info.name for info in game.infos.values() if info.name and info.type not in ("r", "P", "I")})
    for name in sorted(named):
        words = set(name.lower().split())
        for other in names:
            if other != name and words <= set(other.lower().split()):
                return f"{name!r} (also {other!r})"
    return None


@functools.lru_cache(maxsize=512)
def _task(task_id: str, env_id: str, split: str, level_no: int, seed: int, templates: tuple[str, ...]) -> TaskSpec:
    import random

    from textworld.generator import QuestGenerationError

    from envgym.plugin import GenerationRequest

    request = GenerationRequest(generator=NAME, seed=seed, level=level_no, split=split, env_id=env_id,
                                templates=templates)
    rng: random.Random = request.rng()
    level = LEVELS[level_no]
    goal = rng.choice(templates)
    args = challenge_args(level, goal)
    for _ in range(SEED_TRIES):
        game_seed = rng.randrange(2**31)
        try:
            game = build(args, game_seed)
        except QuestGenerationError:
            continue
        walkthrough, named = _proven(game)
        if _ambiguous(game, named) is None:
            break
    else:
        raise RuntimeError(f"{NAME}: no quest with unambiguous names on {SEED_TRIES} maps for {task_id} "
                           f"({' '.join(args)})")
    objective = " ".join(game.objective.split())
    instruction = (f"A TextWorld game. {objective}\nPlay it with act(command) (e.g. 'look', 'inventory', "
                   "'go north', 'take coin', 'open door'); the game tells you when you have won. Send a message "
                   "without tool calls to stop.")
    return TaskSpec(
        id=task_id, env_id=env_id, split=split,  # type: ignore[arg-type]
        instruction=instruction,
        initial_state={"challenge": CHALLENGE, "args": args, "seed": game_seed},
        limits=Limits(max_steps=max(30, 4 * len(walkthrough)), episode_timeout_s=900, step_timeout_s=60),
        verifiers=(_game_score(),),
        solution=tuple(Action.call("act", command=c) for c in walkthrough),
        tags=("text", "textworld", "generated", f"level-{level_no}", goal),
        metadata={"templates": [goal], "level": level_no, "seed": seed, "generator": NAME,
                  "world_size": level.world_size, "nb_objects": level.nb_objects,
                  "quest_length": level.quest_length})


def _game_score() -> Any:
    from envgym_textgames.game import GameScoreSpec

    return GameScoreSpec(game="textworld")


def generate(request: Any) -> TaskSpec:
    """The task of ``request`` (a :class:`~envgym.plugin.GenerationRequest`); see the module docstring."""
    return _task(request.task_id, request.env_id, request.split, request.level, request.seed, request.templates)
