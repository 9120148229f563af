"""The environment registry: ids ``family/name-vN``, lazy entry-point plug-ins, helpful failures.

``register`` records how to build an env; ``make`` builds it wrapped in order-enforcing and time-limit
wrappers; ``spec`` returns the registration; ``list_envs`` lists ids. Plug-ins (this repository's families
included) declare a callable in the entry-point group ``envgym.environments`` named after their family;
it is loaded the first time an id of that family is asked for, and a plug-in that fails to load raises
:class:`PluginError`, never silently disappears. Unknown ids get a did-you-mean. ``import envgym`` loads
every plug-in to register its ids with Gymnasium, so a hook must import envgym inside its body, not at
the top of its module.
"""

from __future__ import annotations

import difflib
import importlib
import re
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from pydantic import Field

from envgym.errors import PluginError, RegistryError
from envgym.types import FrozenModel

if TYPE_CHECKING:
    from envgym.env import Env

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

    @property
    def family(self) -> str:
        return parse_id(self.id)[0]

    @property
    def version(self) -> int:
        return parse_id(self.id)[2]


_registry: dict[str, EnvSpec] = {}
_loaded: set[str] = set()


def parse_id(env_id: str) -> tuple[str, str, int]:
    """Split ``family/name-vN``; raise RegistryError naming the grammar when malformed."""
    match = ENV_ID_RE.match(env_id)
    if not match:
        raise RegistryError(f"malformed env id {env_id!r}: expected 'family/name-vN', e.g. 'tool/retail-v1'")
    return match["family"], match["name"], int(match["version"])


def register(env_id: str, entry_point: str, *, kwargs: dict[str, Any] | None = None,
             suites: tuple[str, ...] = (), max_episode_steps: int | None = None, description: str = "",
             override: bool = False) -> EnvSpec:
    """Register an environment id. Registering an existing id raises unless ``override``."""
    parse_id(env_id)
    if env_id in _registry and not override:
        raise RegistryError(f"env id {env_id!r} is already registered (pass override=True to replace it)")
    spec_ = EnvSpec(id=env_id, entry_point=entry_point, kwargs=kwargs or {}, suites=suites,
                    max_episode_steps=max_episode_steps, description=description)
    _registry[env_id] = spec_
    from envgym.gym import register_gymnasium_id

    register_gymnasium_id(env_id)
    return spec_


def _load_plugins(family: str | None = None) -> None:
    for ep in entry_points(group=ENTRY_POINT_GROUP):
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
    _load_plugins()
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


def make(env_id: str, **kwargs: Any) -> Env:
    """Build ``env_id`` wrapped in order-enforcing and time-limit wrappers. ``kwargs`` override the spec's."""
    from envgym.wrappers import OrderEnforcing, TimeLimit

    spec_ = spec(env_id)
    factory = load_entry_point(spec_.entry_point)
    env = factory(**{**spec_.kwargs, **kwargs})
    env.spec = spec_
    return OrderEnforcing(TimeLimit(env, max_steps=spec_.max_episode_steps))
