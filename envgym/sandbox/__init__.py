"""Sandboxes: isolated places to run an episode's commands (``docker``, ``local``, ``fake`` backends).

See :mod:`envgym.sandbox.base` for the contract, :mod:`~envgym.sandbox.profile` for hardening,
:mod:`~envgym.sandbox.pool` for the warm pool and :mod:`~envgym.sandbox.reaper` for orphan removal. The
Docker backend needs the ``docker`` extra; importing this package does not.
"""

from __future__ import annotations

import typing

from envgym import _lazy

if typing.TYPE_CHECKING:
    from envgym.sandbox.base import Channel, ExecResult, Sandbox, SandboxState, Session
    from envgym.sandbox.docker import DockerSandbox
    from envgym.sandbox.errors import (
        BrokenArchive,
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

# imported on first use: pydantic and the backends stay out of `envgym sandbox --help` and `envgym --help`
__getattr__, __dir__ = _lazy.lazy_exports(__name__, {
    "envgym.sandbox.base": ("Channel", "ExecResult", "Sandbox", "SandboxState", "Session"),
    "envgym.sandbox.docker": ("DockerSandbox",),
    "envgym.sandbox.errors": ("BrokenArchive", "ChannelClosed", "DaemonUnavailable", "ExecTimeout", "ImageMissing",
                              "SandboxCrashed", "SandboxError", "SandboxFileNotFound", "SandboxStateError",
                              "SpecRejected", "UnsafeArchive"),
    "envgym.sandbox.fake": ("FakeSandbox",),
    "envgym.sandbox.images": ("tag_for",),
    "envgym.sandbox.local": ("InsecureSandboxWarning", "LocalSandbox"),
    "envgym.sandbox.pool": ("SandboxPool",),
    "envgym.sandbox.profile": ("DEFAULT", "PROFILES", "STRICT", "SandboxProfile", "validate_spec"),
})

__all__ = [
    "DEFAULT",
    "PROFILES",
    "STRICT",
    "BrokenArchive",
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

