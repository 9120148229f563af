"""Sandboxes: isolated places to run an episode's commands (``docker``, ``local``, ``fake`` backends).

See :mod:`envgym.sandbox.base` for the contract, :mod:`~envgym.sandbox.profile` for hardening,
:mod:`~envgym.sandbox.pool` for the warm pool and :mod:`~envgym.sandbox.reaper` for orphan removal. The
Docker backend needs the ``docker`` extra; importing this package does not.
"""

from envgym.sandbox.base import Channel, ExecResult, Sandbox, SandboxState, Session
from envgym.sandbox.errors import (
    ChannelClosed,
    DaemonUnavailable,
    ExecTimeout,
    ImageMissing,
    SandboxCrashed,
    SandboxError,
    SandboxFileNotFound,
    SandboxStateError,
    SpecRejected,
    UnsafeArchive,
)
from envgym.sandbox.fake import FakeSandbox
from envgym.sandbox.images import tag_for
from envgym.sandbox.local import InsecureSandboxWarning, LocalSandbox
from envgym.sandbox.pool import SandboxPool
from envgym.sandbox.profile import DEFAULT, PROFILES, STRICT, SandboxProfile, validate_spec

__all__ = [
    "DEFAULT",
    "PROFILES",
    "STRICT",
    "Channel",
    "ChannelClosed",
    "DaemonUnavailable",
    "DockerSandbox",
    "ExecResult",
    "ExecTimeout",
    "FakeSandbox",
    "ImageMissing",
    "InsecureSandboxWarning",
    "LocalSandbox",
    "Sandbox",
    "SandboxCrashed",
    "SandboxError",
    "SandboxFileNotFound",
    "SandboxPool",
    "SandboxProfile",
    "SandboxState",
    "SandboxStateError",
    "Session",
    "SpecRejected",
    "UnsafeArchive",
    "tag_for",
    "validate_spec",
]


def __getattr__(name: str) -> object:
    if name == "DockerSandbox":  # the docker module imports nothing from the SDK at import time either,
        from envgym.sandbox.docker import DockerSandbox  # but it is the heaviest; keep it out of `import envgym`

        return DockerSandbox
    raise AttributeError(name)
