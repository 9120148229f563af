"""An eval run's typed configuration, and what every process that plays its episodes derives from it.

:class:`EvalConfig` decides a run's results (its hash goes into every record). The episodes of a run play in
this process or in worker processes (:mod:`envgym._eval_workers`), and each of them derives the same things from
the config: an episode's seed (:func:`episode_seed`), the envs (:func:`env_maker`: the run's judge, simulated
user and virtual-time budget applied through ``make``) and the garbage collector's settings while episodes
play (:func:`run_heap`). They live here, below both :mod:`envgym.eval` and :mod:`envgym._eval_workers`;
:mod:`envgym.eval` re-exports the names it always had.
"""

from __future__ import annotations

import contextlib
import gc
import inspect
import os
from collections.abc import Callable, Iterator
from typing import Any

from pydantic import Field, model_serializer

from envgym.agents import AgentConfig
from envgym.compose import make
from envgym.errors import SpecError
from envgym.registry import load_entry_point, spec
from envgym.task import TaskSpec
from envgym.types import FrozenModel, content_hash
from envgym.user import UserConfig
from envgym.verify import JudgeConfig

__all__ = ["EvalConfig", "JudgeSettings", "budget_kwargs", "env_maker", "episode_seed", "run_heap", "user_kwargs"]


class JudgeSettings(FrozenModel):
    base_url: str
    model: str
    api_key_env: str | None = None


_BUDGET_KEYS = ("max_virtual_time", "virtual_time_factor")
"""EvalConfig's virtual-time budget fields: handed to timed envs, in the config only when set."""


class EvalConfig(FrozenModel):
    """Everything that decides an evaluation's results (its hash goes into every record)."""

    suites: tuple[str, ...] = Field(min_length=1)
    split: str | None = "test"
    agent: AgentConfig
    runs: int = Field(default=1, ge=1)
    """K: episodes per task (pass@k / pass^k need K > 1)."""
    seed: int = 0
    limit: int | None = Field(default=None, ge=1)
    """Evaluate only the first N tasks of each suite."""
    judge: JudgeSettings | None = None
    max_steps: int | None = Field(default=None, ge=1)
    """Cap every task's step limit (slow local models); part of the config, so of the config hash."""
    step_timeout_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Override every task's per-step deadline (CPU models can need minutes per step)."""
    user: UserConfig | None = None
    """The simulated user of conversational envs (:mod:`envgym.user`); None = each env's default (scripted)."""
    max_virtual_time: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Cap every timed task's virtual-time budget (seconds, or steps on a step clock; see
    :mod:`envgym.timed.env`); other envs have no virtual time. In the config (and its hash) only when set."""
    virtual_time_factor: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Cap it also at this many times the virtual time the task's reference solution takes (1.0: an optimal
    agent's time). In the config (and its hash) only when set."""

    @model_serializer(mode="wrap")
    def _omit_unset_budget(self, handler: Any) -> Any:  # runs made before they existed keep their hash
        data = handler(self)
        for key in _BUDGET_KEYS:
            if isinstance(data, dict) and data.get(key) is None:
                data.pop(key, None)
        return data

    @property
    def hash(self) -> str:
        # ``user`` joins the hash only when set, so runs made before it existed keep their hash (and resume)
        return content_hash(self.model_dump(mode="json", exclude={"user"} if self.user is None else None))


def budget_kwargs(env_id: str, config: EvalConfig, capabilities: dict[str, bool] | None = None) -> dict[str, Any]:
    """The run's virtual-time budget as constructor keywords of an env whose world keeps virtual time (its class
    says ``virtual_time``, as :class:`~envgym.timed.env.TimedWorldEnv` does); {} for other envs. ``capabilities``:
    the spec's, when the caller has read them already (they are read once per env id)."""
    wanted = {key: value for key in _BUDGET_KEYS if (value := getattr(config, key)) is not None}
    if not wanted:
        return {}
    spec_ = spec(env_id)
    capabilities = capabilities if capabilities is not None else spec_.capabilities
    flag = "--" + next(iter(wanted)).replace("_", "-")
    if not capabilities["virtual_time"]:
        if capabilities["time_evolving"]:
            raise SpecError(f"{flag}: {env_id} is time-evolving but keeps no virtual time (its class does not say "
                            "virtual_time, as TimedWorldEnv does), so it takes no virtual-time budget",
                            field=next(iter(wanted)))
        return {}
    params = inspect.signature(load_entry_point(spec_.entry_point)).parameters.values()
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        missing = sorted(set(wanted) - {p.name for p in params})
        if missing:
            raise SpecError(f"{env_id}'s constructor takes no {', '.join(missing)} (a TimedWorldEnv subclass "
                            "should pass its budget keywords on to TimedWorldEnv)", field=missing[0])
    return wanted


def user_kwargs(env_id: str, config: EvalConfig, capabilities: dict[str, bool] | None = None) -> dict[str, Any]:
    """``{"user": ...}`` for an env that talks to a simulated user (its class says ``simulated_user``)."""
    if config.user is None:
        return {}
    capabilities = capabilities if capabilities is not None else spec(env_id).capabilities
    return {"user": config.user} if capabilities["simulated_user"] else {}


@contextlib.contextmanager
def run_heap() -> Iterator[None]:
    """The garbage collector's settings while a run's episodes play (here and in each worker), restored after.

    What was loaded before the episodes (modules, tasks, the plan) is frozen (``gc.freeze``: never traversed
    again), and the youngest generation is collected every 10,000 allocations, not 700: an episode allocates
    thousands of short-lived objects (messages, rows, records) that die young, so most collections found
    nothing to free and a full one walked the whole heap. Cheap tool episodes spent ~0.13 ms each in the
    collector (10% of their CPU); with these settings ~0.03. Nothing is collected first: a full collection
    walked ~45,000 objects for 35-45 ms (in this process and in each worker, before its first episode) to
    free a few dozen, which stay frozen with the rest until the run ends. A caller that froze objects itself
    keeps them frozen.
    """
    threshold = gc.get_threshold()
    froze = gc.get_freeze_count() == 0
    gc.freeze()
    gc.set_threshold(10_000, threshold[1], threshold[2])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        if froze:
            gc.unfreeze()


def episode_seed(config: EvalConfig, task: TaskSpec, run_index: int) -> int:
    return int(content_hash([config.seed, task.hash, run_index]).removeprefix("sha256:")[:8], 16)


def env_maker(config: EvalConfig) -> Callable[[str], Any]:
    """``make_env`` of the run's pools: the judge, the simulated user and the virtual-time budget applied."""
    judge = None
    if config.judge is not None:  # the kernel's, handed to make() (the Grading wrapper), never to an env
        key = os.environ.get(config.judge.api_key_env) if config.judge.api_key_env else None
        judge = JudgeConfig(base_url=config.judge.base_url, model=config.judge.model, api_key=key)
    kwargs: dict[str, dict[str, Any]] = {}

    def make_env(env_id: str) -> Any:
        if env_id not in kwargs:  # looked up once per env id, not per env built
            flags = spec(env_id).capabilities  # read once per env id
            kwargs[env_id] = {**user_kwargs(env_id, config, flags), **budget_kwargs(env_id, config, flags)}
        return make(env_id, judge=judge, **kwargs[env_id])

    return make_env
