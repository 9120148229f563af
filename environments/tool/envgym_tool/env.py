"""The bundled tool envs: the kernel's :class:`envgym.tools.ToolEnv` with this family's tampering agents.

Everything a tool env does is the kernel's (:mod:`envgym.tools`), the same code a third-party domain runs
on; the family adds only its domains (``envgym_tool.domains``) and the tampering agents ``envgym check``
runs beside the kernel's generic ones (:mod:`envgym_tool.tamper`). ``domain`` is a
:class:`~envgym.tools.Domain`, a ``"package.module:DOMAIN"`` reference, or the short name of a bundled
domain (``"retail"``, ``"assistant"``, ``"codes"``, ``"telecom"``). :class:`ConversationToolEnv` is the same for
the conversational domains (a simulated user on the other side).
"""

from __future__ import annotations

from typing import Any, ClassVar

from envgym.plugin import TamperAgent
from envgym.plugin.tools import ConversationToolEnv as KernelConversationToolEnv
from envgym.plugin.tools import Domain
from envgym.plugin.tools import ToolEnv as KernelToolEnv
from envgym_tool import DOMAINS
from envgym_tool.tamper import TAMPER_AGENTS


class _Bundled:
    """Takes a bundled domain's short name where the kernel's env takes a domain (its constructor, its ``warm``)."""

    def __init__(self, domain: Domain | str, **kwargs: Any) -> None:
        super().__init__(_bundled(domain), **kwargs)  # type: ignore[call-arg]

    @classmethod
    def warm(cls, *, domain: Domain | str, **kwargs: Any) -> None:
        super().warm(domain=_bundled(domain), **kwargs)  # type: ignore[misc]


def _bundled(domain: Domain | str) -> Domain | str:
    """A bundled domain's short name as the reference the kernel loads; anything else as it is."""
    return f"envgym_tool.domains.{domain}:DOMAIN" if isinstance(domain, str) and domain in DOMAINS else domain


class ToolEnv(_Bundled, KernelToolEnv):
    """``tool/<domain>-vN``: the kernel's tool env plus the family's tampering agents."""

    tamper_agents: ClassVar[tuple[type[TamperAgent], ...]] = TAMPER_AGENTS


class ConversationToolEnv(_Bundled, KernelConversationToolEnv):
    """``tool/<domain>-vN`` of a conversational domain: the kernel's env with a simulated user, plus the
    family's tampering agents."""

    tamper_agents: ClassVar[tuple[type[TamperAgent], ...]] = TAMPER_AGENTS
