"""Which simulated user runs, as typed configuration, and the factory that builds one per episode.

``parse_user("scripted" | "openai:MODEL" | "hf[:MODEL_PATH]", base_url=...)`` gives a :data:`UserConfig`
(a discriminated union on ``type``); :func:`build_users` gives a :class:`UserFactory` that owns what
episodes share (an HTTP client, a loaded model) and starts one :class:`~envgym.user.SimulatedUser` per
episode. ``describe()`` is what records carry to say which user ran. An ``hf`` user's model is loaded once
per process and configuration (envs of one run share it), never per env.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from envgym.errors import SpecError
from envgym.types import FrozenModel, Usage
from envgym.user.llm import LLMUser
from envgym.user.profile import UserProfile
from envgym.user.simulator import ScriptedUser, SimulatedUser

__all__ = ["HFUserConfig", "OpenAIUserConfig", "ScriptedUserConfig", "UserConfig", "UserFactory", "build_users",
           "parse_user"]


class ScriptedUserConfig(FrozenModel):
    type: Literal["scripted"] = "scripted"

    def completer(self) -> None:
        """No model: the scripted user answers from the profile."""
        return None


class OpenAIUserConfig(FrozenModel):
    type: Literal["openai"] = "openai"
    model: str
    base_url: str = "http://127.0.0.1:8000/v1"
    api_key_env: str | None = None
    """Name of the environment variable holding the key (read when the user is built, never stored)."""
    temperature: float = 0.0
    max_tokens: int | None = 256
    timeout_s: float = 60.0
    retries: int = 3

    def completer(self) -> _OpenAICompleter:
        """The chat endpoint this user speaks through (one HTTP client for every episode of the factory)."""
        return _OpenAICompleter(self)


class HFUserConfig(FrozenModel):
    type: Literal["hf"] = "hf"
    model_path: str | None = None
    """A GGUF file or a transformers folder; None = the embedded SmolLM2-135M-Instruct."""
    max_new_tokens: int = 96
    seed: int = 0

    def completer(self) -> _HFCompleter:
        """The local model this user speaks through (loaded once per process and configuration)."""
        return _HFCompleter(self)


UserConfig = Annotated[ScriptedUserConfig | OpenAIUserConfig | HFUserConfig, Field(discriminator="type")]
USER_KINDS = ("scripted", "openai", "hf")


def parse_user(spec: str, **options: Any) -> ScriptedUserConfig | OpenAIUserConfig | HFUserConfig:
    """A command line's user name (``scripted``, ``openai:MODEL``, ``hf[:PATH]``); ``options`` fill other fields."""
    kind, _, arg = spec.partition(":")
    extra = {k: v for k, v in options.items() if v is not None}
    if kind == "scripted" and not arg:
        return ScriptedUserConfig()
    if kind == "openai":
        if not arg:
            raise SpecError("the openai user needs a model: --user openai:MODEL", field="user")
        return OpenAIUserConfig(model=arg, **extra)
    if kind == "hf":
        fields = {k: v for k, v in extra.items() if k in HFUserConfig.model_fields}
        return HFUserConfig(model_path=arg or None, **fields)
    raise SpecError(f"unknown user {spec!r} (known: scripted, openai:MODEL, hf[:MODEL_PATH])", field="user")


def coerce(config: UserConfig | dict[str, Any] | str | None) -> ScriptedUserConfig | OpenAIUserConfig | HFUserConfig:
    """A config from what an env's keyword argument holds (None = scripted)."""
    if config is None:
        return ScriptedUserConfig()
    if isinstance(config, str):
        return parse_user(config)
    if isinstance(config, dict):
        from pydantic import TypeAdapter, ValidationError

        try:
            return TypeAdapter(UserConfig).validate_python(config)
        except ValidationError as exc:
            raise SpecError(f"bad user config: {exc.errors()[0]['msg']}", field="user") from None
    return config


class _OpenAICompleter:
    def __init__(self, config: OpenAIUserConfig) -> None:
        from envgym.agents.openai import OpenAIAgentFactory  # httpx: only for a user that needs it

        self._factory = OpenAIAgentFactory(config.base_url, config.model, api_key_env=config.api_key_env,
                                           temperature=config.temperature, max_tokens=config.max_tokens,
                                           timeout_s=config.timeout_s, retries=config.retries,
                                           key_required=config.api_key_env is not None)

    async def complete(self, messages: list[dict[str, Any]]) -> tuple[str, Usage]:
        from envgym.agents.openai import parse_completion

        action, usage = parse_completion(await self._factory.complete(messages, []))
        return action.text or "", usage

    async def aclose(self) -> None:
        await self._factory.aclose()


class _HFCompleter:
    def __init__(self, config: HFUserConfig) -> None:
        self.config = config

    async def complete(self, messages: list[dict[str, Any]]) -> tuple[str, Usage]:
        generation = await _hf_model(self.config).generate(messages)
        return generation.text, Usage(prompt_tokens=len(generation.prompt_ids),
                                      completion_tokens=len(generation.completion_ids), calls=1)

    async def aclose(self) -> None:
        """The model stays loaded for the process's other factories."""


class UserFactory:
    """Starts one simulated user per episode from one configuration (see the module docstring); the config
    builds what its users speak through (:meth:`completer`), so there is no chain of kinds here."""

    def __init__(self, config: ScriptedUserConfig | OpenAIUserConfig | HFUserConfig) -> None:
        self.config = config
        self._completer = config.completer()

    def describe(self) -> dict[str, Any]:
        """Which user runs (what records carry): the config without secrets (keys are never in it)."""
        return self.config.model_dump(mode="json")

    def start(self, profile: UserProfile, opening: str) -> SimulatedUser:
        if self._completer is None:
            return ScriptedUser(profile, opening)
        return LLMUser(profile, opening, self._completer.complete)

    async def aclose(self) -> None:
        if self._completer is not None:
            await self._completer.aclose()


_hf_models: dict[HFUserConfig, Any] = {}


def _hf_model(config: HFUserConfig) -> Any:
    """The process's loaded model for this config (shared by every env of a run; loaded on first use)."""
    model = _hf_models.get(config)
    if model is None:
        from envgym.agents.hf import HFAgentFactory

        model = _hf_models[config] = HFAgentFactory(model_path=config.model_path,
                                                    max_new_tokens=config.max_new_tokens, seed=config.seed)
    return model


def build_users(config: UserConfig | dict[str, Any] | str | None) -> UserFactory:
    """The factory for ``config`` (a config, its dict, a command-line name, or None for the scripted user)."""
    return UserFactory(coerce(config))
