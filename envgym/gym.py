"""The Gymnasium facade: every envgym id as a synchronous ``gymnasium.Env``.

Importing this module (which ``import envgym`` does as soon as Gymnasium is imported too, in either
order) registers each id ``family/name-vN`` with Gymnasium as ``envgym/family-name-vN`` (Gymnasium's
grammar allows one namespace), loading every plug-in; ids registered later follow at once. So::

    import envgym, gymnasium
    env = gymnasium.make("envgym/tool-retail-v1")
    obs, info = env.reset(seed=0)                  # obs: the Observation as canonical JSON text
    obs, reward, terminated, truncated, info = env.step('{"name": "get_order", "arguments": {"order_id": "o1"}}')

Actions are text: a JSON tool call ``{"name", "arguments"}``, a JSON action ``{"text", "tool_calls"}``, or
any other string as the final message; ``Action`` objects are accepted too. The async env runs on a private
event loop in a background thread, so the facade also works inside programs that already run a loop.
"""

from __future__ import annotations

import asyncio
import json
import threading
import warnings
from collections.abc import Coroutine
from typing import Any, TypeVar

import gymnasium
from gymnasium import spaces

from envgym.compose import make
from envgym.env import Env
from envgym.errors import PluginError
from envgym.registry import EnvSpec, list_envs, on_register, spec
from envgym.types import Action, Observation, ToolCall, canonical_json

T = TypeVar("T")
GYM_NAMESPACE = "envgym"


def gym_id(env_id: str) -> str:
    """``tool/retail-v1`` -> ``envgym/tool-retail-v1``."""
    return f"{GYM_NAMESPACE}/{env_id.replace('/', '-')}"


class AnyText(spaces.Text):
    """A text space holding any string up to ``max_length`` (Gymnasium's Text limits the charset)."""

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length


def _arguments(args: Any) -> str:
    """A call's arguments as the JSON text the env decodes; what cannot be JSON stays visibly not JSON."""
    if isinstance(args, str):
        return args
    try:
        return json.dumps(args, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as exc:  # the env reports it as invalid arguments
        return f"<not JSON: {type(exc).__name__}>"


def _call(call: Any, step: int, i: int) -> ToolCall:
    """One tool call of a facade action; a malformed one keeps its text, so the env reports it, never a crash."""
    if not isinstance(call, dict):
        return ToolCall(id=f"call_{step}_{i}", name="", arguments=_arguments(call))
    name = call.get("name")
    call_id = call.get("id")
    return ToolCall(id=call_id if isinstance(call_id, str) and call_id else f"call_{step}_{i}",
                    name=name if isinstance(name, str) else "" if name is None else _arguments(name),
                    arguments=_arguments(call.get("arguments", {})))


def parse_action(action: Any, step: int) -> Action:
    """Turn a facade action (Action, dict, JSON text or plain text) into an Action.

    A dict with ``name`` is a call, one with ``tool_calls``/``text`` an action; a non-empty dict with none of
    these is text for the env to read (its JSON: an action space of the env's own, such as OSWorld's
    computer_13 ``{"action_type": ...}``). A call without a usable ``name`` gets the empty name, arguments that are
    not JSON stay unparseable text, so the env answers with ``last_action_error`` (an agent's invalid
    action is an observation). Only a value that is no action at all (not a str, dict or Action) is a
    ``TypeError``: it is outside the text action space.
    """
    if isinstance(action, Action):
        return action
    original = action if isinstance(action, str) else None
    if isinstance(action, str):
        try:
            action = json.loads(action)
        except (json.JSONDecodeError, RecursionError):
            return Action(text=action)
        if not isinstance(action, dict):
            return Action(text=json.dumps(action))
    if isinstance(action, dict):
        if action and not {"name", "tool_calls", "text"} & action.keys():
            # an object in an action space of the env's own (OSWorld's computer_13: {"action_type": ...}) is
            # text for the env to read, not an empty action
            return Action(text=original if original is not None else json.dumps(action))
        if "name" in action:
            return Action(tool_calls=(_call(action, step, 0),))
        calls = action.get("tool_calls") or []
        calls = calls if isinstance(calls, list | tuple) else [calls]
        text = action.get("text")
        return Action(text=text if isinstance(text, str) or text is None else _arguments(text),
                      tool_calls=tuple(_call(call, step, i) for i, call in enumerate(calls)))
    raise TypeError(f"unsupported action type {type(action).__name__}")


def observation_text(obs: Observation) -> str:
    return canonical_json(obs.model_dump(mode="json"))


class GymnasiumEnv(gymnasium.Env[str, str]):
    """A synchronous ``gymnasium.Env`` over an async envgym env."""

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - Gymnasium's convention

    def __init__(self, env_id: str, **kwargs: Any) -> None:
        self.env_id = env_id
        self.observation_space = AnyText(max_length=10_000_000)
        self.action_space = AnyText(max_length=100_000)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"envgym:{env_id}", daemon=True)
        self._thread.start()
        self._env: Env = make(env_id, **kwargs)
        self._steps = 0

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    @property
    def async_env(self) -> Env:
        return self._env

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        task = (options or {}).get("task")
        obs, info = self._run(self._env.reset(task=task, seed=seed, options=options))
        self._steps = 0
        return observation_text(obs), info

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self._steps += 1
        obs, reward, terminated, truncated, info = self._run(self._env.step(parse_action(action, self._steps)))
        return observation_text(obs), float(reward), terminated, truncated, info

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            self._run(self._env.close())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop.close()


def register_gymnasium_id(env_id: str, *, nondeterministic: bool = False) -> None:
    """Make ``gymnasium.make(gym_id(env_id))`` build the sync facade (idempotent). ``nondeterministic`` is
    Gymnasium's flag: the same seed may not give equal observations (a desktop app's pixels under load)."""
    name = gym_id(env_id)
    if name not in gymnasium.registry:
        gymnasium.register(id=name, entry_point="envgym.gym:GymnasiumEnv", kwargs={"env_id": env_id},
                           vector_entry_point="envgym.vector.lockstep:GymnasiumVectorEnv",
                           disable_env_checker=True, nondeterministic=nondeterministic)


def register_gymnasium_envs() -> None:
    """Register every envgym id, loading all plug-ins, with Gymnasium."""
    for env_id in list_envs():
        register_gymnasium_id(env_id, nondeterministic=spec(env_id).nondeterministic)


def _gymnasium_learns(spec_: EnvSpec) -> None:
    register_gymnasium_id(spec_.id, nondeterministic=spec_.nondeterministic)


def _register_on_import() -> None:
    on_register(_gymnasium_learns)  # ids registered from now on follow at once
    try:
        register_gymnasium_envs()
    except PluginError as exc:  # a broken third-party plug-in must not make Gymnasium or envgym unimportable
        warnings.warn(f"{exc}; its ids are not registered with Gymnasium", RuntimeWarning, stacklevel=2)


_register_on_import()
