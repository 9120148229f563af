"""Sandboxes for a family whose episodes run in containers or processes (part of the plug-in surface).

Covered by Semantic Versioning like all of :mod:`envgym.plugin` (see ``CHANGELOG.md``). Imported only by
the families that need it: it brings in the sandbox package (the Docker client itself loads on first use).

- the contract: :class:`Sandbox` (start / exec / read / write / copy_out / stop), its
  :class:`SandboxState`, an exec's :class:`ExecResult`, a long-lived :class:`Channel` into a sandbox;
- backends: :class:`DockerSandbox` (hardened; :class:`DockerEngine` is its engine connection, and
  :func:`connect` the plain Docker API client), :class:`LocalSandbox` (a process; warns with
  :class:`InsecureSandboxWarning`);
- hardening: :class:`SandboxProfile`, its profiles :data:`DEFAULT` and :data:`STRICT`, and :data:`WRITABLE`
  (the paths a profile may leave writable);
- sharing warm containers across episodes: the :mod:`leases` module (``hold`` / ``lease`` / ``release`` /
  ``unhold``);
- images built from ``sandboxes/``: :func:`tag_for`, :func:`image_recipes`, :func:`build_images`;
- the errors: :class:`SandboxError` and its subclasses.
"""

from __future__ import annotations

from envgym.sandbox import (
    Channel,
    ChannelClosed,
    DockerSandbox,
    ExecResult,
    ExecTimeout,
    ImageMissing,
    InsecureSandboxWarning,
    LocalSandbox,
    Sandbox,
    SandboxCrashed,
    SandboxError,
    SandboxFileNotFound,
    SandboxState,
    leases,
    tag_for,
)
from envgym.sandbox.dockerengine import DockerEngine, connect
from envgym.sandbox.images import build as build_images
from envgym.sandbox.images import image_exists
from envgym.sandbox.images import recipes as image_recipes
from envgym.sandbox.profile import DEFAULT, STRICT, WRITABLE, SandboxProfile

__all__ = [
    "DEFAULT",
    "STRICT",
    "WRITABLE",
    "Channel",
    "ChannelClosed",
    "DockerEngine",
    "DockerSandbox",
    "ExecResult",
    "ExecTimeout",
    "ImageMissing",
    "InsecureSandboxWarning",
    "LocalSandbox",
    "Sandbox",
    "SandboxCrashed",
    "SandboxError",
    "SandboxFileNotFound",
    "SandboxProfile",
    "SandboxState",
    "build_images",
    "connect",
    "image_exists",
    "image_recipes",
    "leases",
    "tag_for",
]
