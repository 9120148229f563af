"""The registry: environments, named suites, task generators and verifier kinds, from any installed package,
one way.

There is one registration mechanism. A package (this repository's families included, exactly like a
third-party one) declares a callable in the entry-point group ``envgym.environments``, named after its
family; the callable registers what the package brings::

    def register_all() -> None:                     # [project.entry-points."envgym.environments"] mine = "..."
        import envgym
        envgym.register("mine/shop-v1", "my_pkg.env:ShopEnv", suites=("mine-shop",), max_episode_steps=20)
        envgym.register_suite("mine-shop", Path(__file__).parent / "tasks")       # a folder or a .jsonl file
        envgym.register_verifier("shop_total", ShopTotalSpec, check_total)        # an open verifier kind
        envgym.plugin.register_generator("mine-shop-gen", "my_pkg.gen:shop", family="mine",  # seeded tasks
                                         env_id="mine/shop-v1", levels=(1, 2),
                                         templates={"buy": "train", "sell": "test"})

A hook is loaded the first time an id of its family is asked for, or when anything needs every
registration (``list_envs``, ``list_suites``, an unknown suite or verifier type); a hook that fails raises
:class:`PluginError`, never silently disappears. ``import envgym`` loads no hook; importing Gymnasium beside
it loads every hook, to register the ids with Gymnasium (:mod:`envgym.gym`), and this may happen while
``import envgym`` is in progress, so a hook imports envgym inside its body, not at the top of its module.

This module is the bottom of the registration stack: it holds the tables and imports nothing above
:mod:`envgym.types`. Building an id is :func:`envgym.compose.make`'s (``envgym.make``), which reads these
tables; Gymnasium learns ids through :func:`on_register` listeners (:mod:`envgym.gym` adds one); the built-in
verifier kinds are put in the same table as every plug-in's by :mod:`envgym.verify`
(:func:`register_builtin_verifier`), so grading has one dispatch path. Capability flags (``needs_sandbox``,
``time_evolving``, ``has_write_actions``, ``multimodal``) are readable from the spec before anything is built
(:attr:`EnvSpec.capabilities`) and from every wrapper. :func:`isolated` swaps in an empty registry (tests).
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import importlib
import inspect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from envgym._deprecation import moved_attribute
from envgym._entry_points import installed
from envgym.errors import PluginError, RegistryError
from envgym.types import FrozenModel

if TYPE_CHECKING:
    pass

ENTRY_POINT_GROUP = "envgym.environments"
ENV_ID_RE = re.compile(r"^(?P<family>[a-z][a-z0-9_]*)/(?P<name>[a-z][a-z0-9_\-]*?)-v(?P<version>\d+)$")


class EnvSpec(FrozenModel):
    """How to build one environment id."""

    id: str
    entry_point: str
    """``module:attribute`` of the Env subclass (or factory) to call with ``kwargs``."""
    kwargs: dict[str, Any] = Field(default_factory=dict)
    suites: tuple[str, ...] = ()
    """Bundled suites whose tasks this env serves by default (``reset()`` without a task)."""
    max_episode_steps: int | None = None
    description: str = ""
    nondeterministic: bool = False
    """Gymnasium's flag: the same seed may not give equal observations (a desktop app's pixels under load)."""

    @property
    def capabilities(self) -> dict[str, bool]:
        """The env's capability flags, read from its class without building it (imports its module)."""
        factory = load_entry_point(self.entry_point)
        return {flag: bool(getattr(factory, flag, False)) for flag in CAPABILITIES}

    @property
    def family(self) -> str:
        return parse_id(self.id)[0]

    @property
    def version(self) -> int:
        return parse_id(self.id)[2]


CAPABILITIES = ("needs_sandbox", "time_evolving", "has_write_actions", "multimodal", "simulated_user", "virtual_time",
                "sql_state")
"""The capability flags every Env class declares (class variables) and every wrapper forwards."""

SUITE_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.\-]*$")


class SuiteSpec(FrozenModel):
    """A named suite: where its task files are (a folder of ``*.jsonl`` or one ``.jsonl`` file)."""

    name: str
    path: str
    description: str = ""
    user: bool = False
    """Made on this machine by its user (``envgym swe import`` / ``mine``), not shipped by envgym or a plug-in
    package: what the project's own checks leave out."""


@dataclass(frozen=True)
class VerifierKind:
    """A verifier kind a plug-in registered: the spec model task files name by ``type`` and its check."""

    type: str
    model: type
    """A :class:`~envgym.types.FrozenModel` subclass with a ``type: Literal[...]`` field."""
    fn: Callable[..., Any]
    """``async (spec, ctx: VerifyContext) -> Verdict``."""
    ref: str | None = None
    """The reference ``model`` was registered by, if it was (see :func:`register_verifier`)."""


_registry: dict[str, EnvSpec] = {}
_suites: dict[str, SuiteSpec] = {}
_verifiers: dict[str, VerifierKind | _VerifierRef] = {}
_verifiers_generation = 0
"""Bumped whenever the verifier kinds may change (a registration, an isolated block's start and end): parsed
task files cached under one generation hold specs of that generation's kinds."""
_loaded: set[str] = set()
_plugins_enabled = True
_listeners: list[Callable[[EnvSpec], None]] = []
_builtin_verifiers: dict[str, VerifierKind] = {}
"""The kernel's own verifier kinds (:mod:`envgym.verify` puts them here); :func:`isolated` keeps them."""

BUILTIN_VERIFIER_TYPES = frozenset({"write_action", "answer", "rubric", "all_of", "any_of"})
"""The verifier ``type`` names the kernel reserves, its generic kinds (a plug-in cannot register them);
``envgym.verify.spec``'s models for them are registered under exactly these names (a test holds them equal).
Every other kind is a plug-in's, the bundled ones (``tests``, ``timed_write``, ...) included: the package
``envgym_verifiers`` registers them through its entry point like any third party."""


def parse_id(env_id: str) -> tuple[str, str, int]:
    """Split ``family/name-vN``; raise RegistryError naming the grammar when malformed."""
    match = ENV_ID_RE.match(env_id)
    if not match:
        raise RegistryError(f"malformed env id {env_id!r}: expected 'family/name-vN', e.g. 'tool/retail-v1'")
    return match["family"], match["name"], int(match["version"])


def register(env_id: str, entry_point: str, *, kwargs: dict[str, Any] | None = None,
             suites: tuple[str, ...] = (), max_episode_steps: int | None = None, description: str = "",
             nondeterministic: bool = False, override: bool = False) -> EnvSpec:
    """Register an environment id. Registering an existing id raises unless ``override``."""
    parse_id(env_id)
    if env_id in _registry and not override:
        raise RegistryError(f"env id {env_id!r} is already registered (pass override=True to replace it)")
    spec_ = EnvSpec(id=env_id, entry_point=entry_point, kwargs=kwargs or {}, suites=suites,
                    max_episode_steps=max_episode_steps, description=description, nondeterministic=nondeterministic)
    _registry[env_id] = spec_
    for listener in _listeners:
        listener(spec_)
    return spec_


def on_register(listener: Callable[[EnvSpec], None]) -> None:
    """Call ``listener`` with every env spec registered from now on, and with each one an :func:`isolated`
    block's end brings back (how :mod:`envgym.gym` tells Gymnasium every id without this module knowing it)."""
    if listener not in _listeners:
        _listeners.append(listener)


def _load_plugins(family: str | None = None) -> None:
    if not _plugins_enabled:
        return
    for ep in installed(ENTRY_POINT_GROUP):
        if ep.name in _loaded or (family is not None and ep.name != family):
            continue
        _loaded.add(ep.name)
        try:
            hook: Callable[[], None] = ep.load()
            hook()
        except Exception as exc:
            _loaded.discard(ep.name)
            raise PluginError(f"environment plug-in {ep.name!r} ({ep.value}) failed to load: {exc!r}") from exc


def spec(env_id: str) -> EnvSpec:
    """The registration of ``env_id``; unknown ids raise RegistryError with a did-you-mean."""
    family, name, _ = parse_id(env_id)
    if env_id not in _registry:
        _load_plugins(family)
    if env_id in _registry:
        return _registry[env_id]
    _load_plugins()  # a plug-in's entry point need not be named after the family it registers
    if env_id in _registry:
        return _registry[env_id]
    known = sorted(_registry)
    same_name = [k for k in known if k.rsplit("-v", 1)[0] == f"{family}/{name}"]
    if same_name:
        hint = f"; versions registered: {', '.join(same_name)}"
    else:
        close = difflib.get_close_matches(env_id, known, n=3, cutoff=0.5)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise RegistryError(f"unknown env id {env_id!r}{hint} (run 'envgym list' to see all)")


def list_envs(family: str | None = None) -> list[str]:
    """Every registered id (loading all plug-ins), optionally of one family."""
    _load_plugins(family)
    return sorted(k for k in _registry if family is None or k.startswith(f"{family}/"))


def load_entry_point(entry_point: str) -> Callable[..., Any]:
    module_name, _, attr = entry_point.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise PluginError(f"cannot import {module_name!r} for entry point {entry_point!r}: {exc}") from exc
    try:
        return getattr(module, attr)
    except AttributeError as exc:
        raise PluginError(f"{module_name!r} has no attribute {attr!r} (entry point {entry_point!r})") from exc


# --- named suites -----------------------------------------------------------------------------------------

def register_suite(name: str, path: str | Path, *, description: str = "", override: bool = False,
                   user: bool = False) -> SuiteSpec:
    """Name a suite: ``envgym eval --suite NAME``, ``load_suite(NAME)`` and ``envgym list`` find it. ``user``: a
    suite the user made (an import), not one a package ships (:attr:`SuiteSpec.user`)."""
    if not SUITE_NAME_RE.match(name):
        raise RegistryError(f"malformed suite name {name!r}: lowercase letters, digits, '_', '.', '-'")
    where = Path(path)
    if not (where.is_dir() or where.suffix == ".jsonl"):
        raise RegistryError(f"suite {name!r}: {where} is neither a folder nor a .jsonl file")
    resolved = str(where.resolve())
    old = _suites.get(name)
    if old is not None and old.path != resolved and not override:
        raise RegistryError(f"suite {name!r} is already registered at {old.path} (pass override=True to replace it)")
    suite = SuiteSpec(name=name, path=resolved, description=description, user=user)
    _suites[name] = suite
    return suite


def suite_spec(name: str) -> SuiteSpec | None:
    """The registration of suite ``name``, or None (loads every plug-in before saying None)."""
    if name not in _suites:
        _load_plugins()
    return _suites.get(name)


def list_suites() -> list[str]:
    """Every registered suite name (loading all plug-ins)."""
    _load_plugins()
    return sorted(_suites)


def suite_name_for(path: str | Path) -> str | None:
    """The registered name of the suite at ``path``, if one is registered there."""
    resolved = str(Path(path).resolve())
    _load_plugins()
    return next((s.name for s in _suites.values() if s.path == resolved), None)


# --- task generators --------------------------------------------------------------------------------------

class GeneratorSpec(FrozenModel):
    """A registered task generator: how to build task ``seed`` of a level and split (see :mod:`envgym.generate`)."""

    name: str
    entry_point: str | None = None
    """``module:attribute`` of the generator function (None: registered as a callable, :attr:`fn`)."""
    family: str
    env_id: str
    """The env every task it makes is for."""
    levels: tuple[int, ...]
    """Its difficulty levels, easiest first; a seed range without ``level=`` mixes them (seed ``s`` gets
    ``levels[s % len(levels)]``)."""
    templates: dict[str, str]
    """Template family -> the split it belongs to: a task of split S is made only from S's families, so train
    and test share no template family."""
    size: int = 10_000
    """The seeds its bare name means as a suite (``NAME`` is ``NAME@0:size``)."""
    description: str = ""

    @property
    def splits(self) -> tuple[str, ...]:
        """The splits it makes tasks of, in the order ``train``, ``test``, ``dev``."""
        return tuple(s for s in ("train", "test", "dev") if s in self.templates.values())

    def templates_of(self, split: str) -> tuple[str, ...]:
        """The template families of ``split``, in registration order."""
        return tuple(t for t, s in self.templates.items() if s == split)


_generators: dict[str, GeneratorSpec] = {}
_generator_fns: dict[str, Callable[..., Any]] = {}


def register_generator(name: str, fn: Callable[..., Any] | str, *, family: str, env_id: str,
                       levels: tuple[int, ...] | list[int], templates: dict[str, str], size: int = 10_000,
                       description: str = "", override: bool = False) -> GeneratorSpec:
    """Name a task generator: ``NAME@START:STOP`` is then a suite wherever one is accepted, ``envgym tasks generate
    NAME`` writes its tasks and ``envgym check NAME`` admits it (:mod:`envgym.generate` has the contract).

    ``fn`` is ``(GenerationRequest) -> TaskSpec`` or a reference ``"package.module:ATTR"`` to one (imported when
    the first task is made). ``family`` is ``env_id``'s family; ``levels`` distinct non-negative integers,
    easiest first; ``templates`` maps each template family to its split (``train``, ``test`` or ``dev``).
    """
    if not SUITE_NAME_RE.match(name) or "@" in name:
        raise RegistryError(f"malformed generator name {name!r}: lowercase letters, digits, '_', '.', '-'")
    if parse_id(env_id)[0] != family:
        raise RegistryError(f"generator {name!r}: env id {env_id!r} is not of family {family!r}")
    if isinstance(fn, str) and not re.fullmatch(r"[\w.]+:[\w.]+", fn):
        raise RegistryError(f"generator {name!r}: {fn!r} is not a reference 'package.module:ATTR'")
    levels = tuple(levels)
    if not levels or len(set(levels)) != len(levels) or any(not isinstance(x, int) or x < 0 for x in levels):
        raise RegistryError(f"generator {name!r}: levels must be distinct integers >= 0, got {levels!r}")
    bad = {t: s for t, s in templates.items() if s not in ("train", "test", "dev")}
    if not templates or bad:
        raise RegistryError(f"generator {name!r}: templates must map each template family to train, test or dev"
                            + (f" (got {bad})" if bad else ""))
    if size < 1:
        raise RegistryError(f"generator {name!r}: size must be at least 1, got {size}")
    if name in _generators and not override:
        raise RegistryError(f"generator {name!r} is already registered (pass override=True to replace it)")
    spec_ = GeneratorSpec(name=name, entry_point=fn if isinstance(fn, str) else None, family=family,
                          env_id=env_id, levels=levels, templates=dict(templates), size=size,
                          description=description)
    _generators[name] = spec_
    _generator_fns.pop(name, None)
    if not isinstance(fn, str):
        _generator_fns[name] = fn
    return spec_


def generator_spec(name: str) -> GeneratorSpec | None:
    """The registration of generator ``name``, or None (loads every plug-in before saying None)."""
    if name not in _generators:
        _load_plugins()
    return _generators.get(name)


def generator_fn(name: str) -> Callable[..., Any]:
    """The function of registered generator ``name`` (imported on first use if registered by reference)."""
    found = generator_spec(name)
    if found is None:
        raise RegistryError(f"unknown generator {name!r}")
    if name not in _generator_fns:
        _generator_fns[name] = load_entry_point(found.entry_point or "")
    return _generator_fns[name]


def list_generators() -> list[str]:
    """Every registered generator name (loading all plug-ins)."""
    _load_plugins()
    return sorted(_generators)


# --- verifier kinds ---------------------------------------------------------------------------------------

def register_verifier(type_name: str, model: type | str, fn: Callable[..., Any] | str, *,
                      override: bool = False) -> VerifierKind | None:
    """Open a verifier kind: task files may then list ``{"type": type_name, ...}`` verifiers.

    ``model`` is a frozen pydantic model (subclass :class:`~envgym.types.FrozenModel`) whose ``type`` field is
    ``Literal[type_name]``; ``fn`` is ``async (spec, ctx) -> Verdict``, ``ctx`` a
    :class:`~envgym.verify.VerifyContext` (the task, the initial and final state, the calls, the answer).

    Either may be a reference, ``"package.module:ATTR"`` (as env entry points are): then nothing is imported
    until a task names the kind (:func:`verifier_kind`), so a plug-in's hook stays cheap for every command
    that never grades with it; the checks above run then, and a bad reference or model is a
    :class:`~envgym.errors.RegistryError` naming it. Returns the kind, or None while it is such a reference.
    """
    if type_name in BUILTIN_VERIFIER_TYPES:
        raise RegistryError(f"verifier type {type_name!r} is built in; choose another name")
    for ref in (model, fn):
        if isinstance(ref, str) and not re.fullmatch(r"[\w.]+:[\w.]+", ref):
            raise RegistryError(f"verifier type {type_name!r}: {ref!r} is not a reference 'package.module:ATTR'")
    known = _verifiers.get(type_name)
    if known is not None and not override and not _same_model(known, model):
        raise RegistryError(f"verifier type {type_name!r} is already registered (pass override=True to replace it)")
    global _verifiers_generation
    kind: VerifierKind | _VerifierRef
    if isinstance(model, str) or isinstance(fn, str):
        kind = _VerifierRef(type=type_name, model=model, fn=fn)
    else:
        kind = _checked(type_name, model, fn)
    _verifiers[type_name] = kind
    _verifiers_generation += 1
    return kind if isinstance(kind, VerifierKind) else None


@dataclass(frozen=True)
class _VerifierRef:
    """A verifier kind registered by reference: resolved (imported, checked) when first asked for."""

    type: str
    model: type | str
    fn: Callable[..., Any] | str

    def resolve(self) -> VerifierKind:
        def load(ref: type | Callable[..., Any] | str) -> Any:
            if not isinstance(ref, str):
                return ref
            try:
                return load_entry_point(ref)
            except PluginError as exc:
                raise RegistryError(f"verifier type {self.type!r}: {exc}") from exc

        kind = _checked(self.type, load(self.model), load(self.fn))
        return kind if not isinstance(self.model, str) else dataclasses.replace(kind, ref=self.model)


def _same_model(known: VerifierKind | _VerifierRef, model: type | str) -> bool:
    """Whether registering ``model`` again names the model ``known`` has (by the class or its reference)."""
    names = {known.model if isinstance(known.model, str) else _reference(known.model), getattr(known, "ref", None)}
    return known.model is model or (model if isinstance(model, str) else _reference(model)) in names


def _reference(model: type) -> str:
    return f"{model.__module__}:{model.__qualname__}"


def _checked(type_name: str, model: Any, fn: Any) -> VerifierKind:
    fields = getattr(model, "model_fields", None)
    if fields is None or "type" not in fields or fields["type"].default != type_name:
        raise RegistryError(f"verifier type {type_name!r}: its model must be a pydantic model with "
                            f"type: Literal[{type_name!r}] = {type_name!r}")
    if not inspect.iscoroutinefunction(fn):
        raise RegistryError(f"verifier type {type_name!r}: its check must be an async function (spec, ctx) -> Verdict")
    return VerifierKind(type=type_name, model=model, fn=fn)


def register_builtin_verifier(type_name: str, model: type, fn: Callable[..., Any]) -> VerifierKind:
    """The kernel's registration of one of its own kinds (:data:`BUILTIN_VERIFIER_TYPES`); a plug-in uses
    :func:`register_verifier`."""
    if type_name not in BUILTIN_VERIFIER_TYPES:
        raise RegistryError(f"{type_name!r} is not a built-in verifier type; register_verifier() opens a new one")
    kind = _builtin_verifiers[type_name] = _checked(type_name, model, fn)
    return kind


def verifiers_generation() -> int:
    """Changes whenever the registered verifier kinds may have changed (for caches of parsed tasks)."""
    return _verifiers_generation


def verifier_kind(type_name: str) -> VerifierKind | None:
    """The verifier kind of ``type``: a built-in one or a plug-in's (loads every plug-in before saying None; imports
    a kind registered by reference, once). Grading dispatches every spec through this one table."""
    builtin = _builtin_verifiers.get(type_name)
    if builtin is not None:
        return builtin
    if type_name not in _verifiers:
        _load_plugins()
    found = _verifiers.get(type_name)
    if isinstance(found, _VerifierRef):
        resolved = found.resolve()
        if _verifiers.get(type_name) is found:  # not replaced meanwhile: the next lookup finds it resolved
            _verifiers[type_name] = resolved
        return resolved
    return found


def list_verifier_kinds() -> list[str]:
    """Built-in and registered verifier types."""
    _load_plugins()
    return sorted({*BUILTIN_VERIFIER_TYPES, *_verifiers})


@contextlib.contextmanager
def isolated(*, plugins: bool = False) -> Iterator[None]:
    """A fresh, empty registry of envs, suites, generators and plug-in verifier kinds until the block ends (then
    the old one).

    Built-in verifier kinds stay. With ``plugins=False`` (the default) no entry-point hook loads inside, so
    only what the block registers exists; ``plugins=True`` lets the installed plug-ins load afresh.
    """
    global _registry, _suites, _verifiers, _loaded, _plugins_enabled, _verifiers_generation, _generators
    global _generator_fns
    saved = (_registry, _suites, _verifiers, _loaded, _plugins_enabled, _generators, _generator_fns)
    _registry, _suites, _verifiers, _loaded, _plugins_enabled = {}, {}, {}, set(), plugins
    _generators, _generator_fns = {}, {}
    _verifiers_generation += 1
    try:
        yield
    finally:
        _registry, _suites, _verifiers, _loaded, _plugins_enabled, _generators, _generator_fns = saved
        _verifiers_generation += 1
        for listener in _listeners:  # one added inside the block (Gymnasium's) learned only the block's ids
            for spec_ in _registry.values():
                listener(spec_)


def __getattr__(name: str) -> Any:
    if name == "make":  # moved to envgym.compose in 0.2 (the registry no longer builds envs)
        return moved_attribute(__name__, "envgym.compose", name, since="0.2", removal="0.3")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
