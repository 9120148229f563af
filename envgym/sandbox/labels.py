"""The labels on every container envgym starts, and what they say about whose it is.

Every container carries ``envgym.managed=1``, the run id, the owner's host, pid and process start time (so a
reused pid is not mistaken for the owner), and an expiry (wall time): :func:`owner_labels`.
:func:`orphan_reason` reads them back: why a container should be reaped, or None while its owner holds it.
The reaper (:mod:`envgym.sandbox.reaper`) and the engine's event subscription
(:mod:`envgym.sandbox.dockerevents`) build on these; this module needs no Docker SDK and imports nothing of
envgym.
"""

from __future__ import annotations

import os
import secrets
import socket
import time

MANAGED = "envgym.managed"
RUN = "envgym.run"
OWNER_HOST = "envgym.owner_host"
OWNER_PID = "envgym.owner_pid"
OWNER_START = "envgym.owner_start"
EXPIRES = "envgym.expires"
EXPIRY_SLACK_S = 60

_run_id: str | None = None


def default_run_id() -> str:
    """One id per controller process, made on first use."""
    global _run_id
    if _run_id is None:
        _run_id = f"{os.getpid()}-{secrets.token_hex(4)}"
    return _run_id


def process_start(pid: int) -> str:
    """The kernel's start time of ``pid`` (clock ticks since boot), or "" if it does not exist."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return ""
    return stat[stat.rindex(b")") + 2:].split()[19].decode()


def owner_labels(run_id: str, lifetime_s: float, *, now: float | None = None) -> dict[str, str]:
    now = time.time() if now is None else now
    return {MANAGED: "1", RUN: run_id, OWNER_HOST: socket.gethostname(), OWNER_PID: str(os.getpid()),
            OWNER_START: process_start(os.getpid()), EXPIRES: str(int(now + lifetime_s + EXPIRY_SLACK_S))}


def orphan_reason(labels: dict[str, str], *, now: float | None = None) -> str | None:
    """Why a container with these labels should be reaped, or None if its owner still holds it."""
    now = time.time() if now is None else now
    try:
        if float(labels.get(EXPIRES, "0")) < now:
            return "expired"
    except ValueError:
        return "bad expiry label"
    if labels.get(OWNER_HOST) != socket.gethostname():
        return None  # another machine's container: only its expiry can tell
    pid = labels.get(OWNER_PID, "")
    if not pid.isdigit() or process_start(int(pid)) != labels.get(OWNER_START):
        return "owner process gone"
    return None
