"""SandboxCrashed's blame: set by the backend from the engine's evidence, kept by an env's re-wording of it."""

from __future__ import annotations

import pickle

from envgym.rollout import blame_of
from envgym.sandbox import SandboxCrashed
from envgym.types import Blame


def _reworded(cause: BaseException) -> SandboxCrashed:
    try:
        try:
            raise cause
        except SandboxCrashed as exc:
            raise SandboxCrashed(f"the episode's container died: {exc}") from exc  # as envgym_swe's env does
    except SandboxCrashed as outer:
        return outer


def test_a_crash_from_outside_is_infra_and_stays_so_when_reworded():
    outside = SandboxCrashed("container abc killed from outside (signal 9)", blame="infra")
    assert blame_of(outside, "env") is Blame.INFRA and blame_of(_reworded(outside), "env") is Blame.INFRA
    again = pickle.loads(pickle.dumps(outside))  # a worker process's error crossing to the parent
    assert again.blame == "infra" and str(again) == str(outside)


def test_a_crash_with_no_outside_cause_is_the_stages():
    inside = SandboxCrashed("container abc is exited (exit code 143; no kill from outside)")
    assert inside.blame is None and _reworded(inside).blame is None
    assert blame_of(inside, "env") is Blame.AGENT and blame_of(_reworded(inside), "reset") is Blame.INFRA
    own = _reworded(SandboxCrashed("x", blame="infra"))
    own.blame = "agent"  # an instance's own blame wins over its cause's
    assert blame_of(own, "env") is Blame.AGENT
