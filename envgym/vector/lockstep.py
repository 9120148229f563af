"""Lockstep mode: Gymnasium's ``VectorEnv`` semantics over envgym's async envs, all stepped at once.

``AsyncVectorEnv`` is the async core: ``n`` envgym envs on one event loop, each batched ``reset``/``step``
awaiting every sub-env concurrently (``asyncio.gather``), so a batch takes as long as its slowest env,
not the sum. ``GymnasiumVectorEnv`` is its thin sync facade, a real ``gymnasium.vector.VectorEnv``, so
existing Gymnasium code runs unchanged::

    async with AsyncVectorEnv([lambda: envgym.make("tool/retail-v1")] * 8) as envs:
        obs, infos = await envs.reset(seed=0)             # obs: tuple of n envgym Observations
        obs, rewards, terminations, truncations, infos = await envs.step(actions)

    envs = GymnasiumVectorEnv("tool/retail-v1", num_envs=8)  # obs: tuple of n canonical JSON texts

Semantics are those of ``gymnasium.vector.SyncVectorEnv`` (tested against it on the same envs):
``seed`` is ``None``, an int (sub-env ``i`` gets ``seed + i``) or a list; ``options`` go to every
sub-env (``options["task"]`` picks the task, as in the Gymnasium facade) and ``options["reset_mask"]``
resets only the masked sub-envs. Autoreset follows ``gymnasium.vector.AutoresetMode``: NEXT_STEP (the
step after an episode ends resets that sub-env and returns reward 0, not done, the reset's info),
SAME_STEP (the ending step resets at once; its last observation and info are ``infos["final_obs"]`` /
``infos["final_info"]``), DISABLED (the caller resets ended sub-envs with ``reset_mask``; stepping one
before that raises :class:`ResetNeeded`). Infos are batched exactly as Gymnasium does (arrays plus
``_key`` masks). Rewards are float64 arrays; terminations and truncations bool arrays.

Observations are envgym :class:`Observation` objects in the async core (frozen, so never copied) and
their canonical JSON text in the facade, identical to what ``SyncVectorEnv`` over
``gymnasium.make("envgym/…")`` returns. Actions are ``Action`` objects or the facade's text/JSON forms.
If a sub-env raises, every other sub-env still finishes its call, then the first error propagates; reset
the vector env before stepping again. There are no deadlines here: use the pool for that.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from envgym.compose import make
from envgym.env import Env
from envgym.errors import ResetNeeded
from envgym.gym import AnyText, observation_text, parse_action
from envgym.types import Observation
from envgym.vector.pool import _cancel_and_wait

T = TypeVar("T")


class AsyncVectorEnv:
    """``n`` envgym envs stepped in lockstep on one event loop; see the module docstring."""

    # Gymnasium's own info batching (it reads only ``num_envs``), so infos match SyncVectorEnv's exactly.
    _add_info = gymnasium.vector.VectorEnv._add_info

    def __init__(self, env_fns: Sequence[Callable[[], Env]], *,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP) -> None:
        if not env_fns:
            raise ValueError("AsyncVectorEnv needs at least one env")
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.envs: list[Env] = [fn() for fn in env_fns]
        self.num_envs = len(self.envs)
        self.metadata: dict[str, Any] = {"autoreset_mode": self.autoreset_mode}
        self.closed = False
        self._obs: list[Observation | None] = [None] * self.num_envs
        self._steps = [0] * self.num_envs  # per-episode step counters: tool-call ids as the Gymnasium facade makes
        self._terminations = np.zeros(self.num_envs, dtype=np.bool_)
        self._truncations = np.zeros(self.num_envs, dtype=np.bool_)
        self._autoreset = np.zeros(self.num_envs, dtype=np.bool_)

    async def reset(self, *, seed: int | Sequence[int | None] | None = None,
                    options: dict[str, Any] | None = None) -> tuple[tuple[Observation, ...], dict[str, Any]]:
        if seed is None:
            seeds: list[int | None] = [None] * self.num_envs
        elif isinstance(seed, int):
            seeds = [seed + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise ValueError(f"got {len(seeds)} seeds for num_envs={self.num_envs}")
        mask = None
        if options is not None and "reset_mask" in options:
            options = dict(options)
            mask = options.pop("reset_mask")
            if not isinstance(mask, np.ndarray) or mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
                raise TypeError(f"options['reset_mask'] must be a bool numpy array of shape ({self.num_envs},)")
            if not mask.any():
                raise ValueError("options['reset_mask'] must select at least one sub-env")
        indices = [i for i in range(self.num_envs) if mask is None or mask[i]]
        results = await _gather([self._reset_one(i, seeds[i], options) for i in indices])
        if mask is None:
            mask = np.ones(self.num_envs, dtype=np.bool_)
        self._terminations[mask] = self._truncations[mask] = self._autoreset[mask] = False
        infos: dict[str, Any] = {}
        for i, (obs, info) in zip(indices, results, strict=True):
            self._obs[i] = obs
            infos = self._add_info(infos, info, i)
        return tuple(self._obs), infos  # type: ignore[arg-type]

    async def step(self, actions: Sequence[Any]) -> tuple[tuple[Observation, ...], np.ndarray, np.ndarray,
                                                          np.ndarray, dict[str, Any]]:
        if len(actions) != self.num_envs:
            raise ValueError(f"got {len(actions)} actions for num_envs={self.num_envs}")
        if self.autoreset_mode is AutoresetMode.DISABLED and self._autoreset.any():
            ended = [int(i) for i in np.flatnonzero(self._autoreset)]
            raise ResetNeeded(f"sub-envs {ended} ended; with autoreset disabled, reset them with "
                              "options={'reset_mask': ...} before stepping")
        results = await _gather([self._step_one(i, a) for i, a in enumerate(actions)])
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        infos: dict[str, Any] = {}
        for i, (obs, reward, terminated, truncated, info, final) in enumerate(results):
            self._obs[i] = obs
            rewards[i] = reward
            self._terminations[i], self._truncations[i] = terminated, truncated
            if final is not None:
                infos = self._add_info(infos, {"final_obs": final[0], "final_info": final[1]}, i)
            infos = self._add_info(infos, info, i)
        self._autoreset = self._terminations | self._truncations
        return tuple(self._obs), rewards, self._terminations.copy(), self._truncations.copy(), infos  # type: ignore[arg-type]

    async def _reset_one(self, i: int, seed: int | None,
                         options: dict[str, Any] | None) -> tuple[Observation, dict[str, Any]]:
        self._steps[i] = 0
        return await self.envs[i].reset(task=(options or {}).get("task"), seed=seed, options=options)

    async def _step_one(self, i: int, action: Any):
        if self.autoreset_mode is AutoresetMode.NEXT_STEP and self._autoreset[i]:
            obs, info = await self._reset_one(i, None, None)
            return obs, 0.0, False, False, info, None
        self._steps[i] += 1
        obs, reward, terminated, truncated, info = await self.envs[i].step(parse_action(action, self._steps[i]))
        final = None
        if self.autoreset_mode is AutoresetMode.SAME_STEP and (terminated or truncated):
            final = (obs, info)
            obs, info = await self._reset_one(i, None, None)
        return obs, float(reward), bool(terminated), bool(truncated), info, final

    async def close(self) -> None:
        """Close every sub-env (concurrently). Idempotent."""
        if not self.closed:
            self.closed = True
            await _gather([env.close() for env in self.envs])

    async def __aenter__(self) -> AsyncVectorEnv:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AsyncVectorEnv(num_envs={self.num_envs}, autoreset_mode={self.autoreset_mode.name})"


async def _gather(coros: list[Coroutine[Any, Any, T]]) -> list[T]:
    """Run all concurrently, await all, then raise the first error, so no sub-env is left mid-call.

    ``asyncio.gather`` with one done-counter instead of its per-child bookkeeping: a third less overhead
    per sub-env, which is most of lockstep's cost on fast envs. Cancelling the caller cancels every call
    and waits for them to unwind.
    """
    loop = asyncio.get_running_loop()
    tasks = [loop.create_task(coro) for coro in coros]
    all_done = loop.create_future()
    left = len(tasks)

    def one_done(_: asyncio.Task[T]) -> None:
        nonlocal left
        left -= 1
        if left == 0 and not all_done.done():
            all_done.set_result(None)

    for task in tasks:
        task.add_done_callback(one_done)
    try:
        if tasks:
            await all_done
    except asyncio.CancelledError:
        await _cancel_and_wait(tasks)
        raise
    errors = [task.exception() for task in tasks]  # retrieves every error, so none is logged as unretrieved
    for error in errors:
        if error is not None:
            raise error
    return [task.result() for task in tasks]


class GymnasiumVectorEnv(gymnasium.vector.VectorEnv):
    """The sync facade: a ``gymnasium.vector.VectorEnv`` over :class:`AsyncVectorEnv`, on a private loop.

    The signature is Gymnasium's ``vector_entry_point`` convention (``env_id``, ``num_envs``, kwargs);
    other kwargs go to :func:`envgym.make`. ``async_env`` is the core, for Observations instead of text.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - Gymnasium's convention

    def __init__(self, env_id: str, num_envs: int = 1, *,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP, **kwargs: Any) -> None:
        super().__init__()
        self.async_env = AsyncVectorEnv([functools.partial(make, env_id, **kwargs)] * num_envs,
                                        autoreset_mode=autoreset_mode)
        self.num_envs = num_envs
        self.metadata = {"render_modes": [], "autoreset_mode": self.async_env.autoreset_mode}
        self.single_observation_space = AnyText(max_length=10_000_000)
        self.single_action_space = AnyText(max_length=100_000)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"envgym-vector:{env_id}", daemon=True)
        self._thread.start()

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def reset(self, *, seed: int | list[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[tuple[str, ...], dict[str, Any]]:
        obs, infos = self._run(self.async_env.reset(seed=seed, options=options))
        return tuple(observation_text(o) for o in obs), infos

    def step(self, actions: Sequence[Any]) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray,
                                                    dict[str, Any]]:
        obs, rewards, terminations, truncations, infos = self._run(self.async_env.step(actions))
        if "final_obs" in infos:
            infos["final_obs"] = np.array([None if o is None else observation_text(o) for o in infos["final_obs"]],
                                          dtype=object)
        return tuple(observation_text(o) for o in obs), rewards, terminations, truncations, infos

    def close_extras(self, **kwargs: Any) -> None:
        if self._loop.is_closed():
            return
        try:
            self._run(self.async_env.close())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop.close()
