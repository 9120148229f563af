"""envgym's tool-use family, a plug-in registered through the ``envgym.environments`` entry point.

The env itself is the kernel's (:mod:`envgym.tools`, the public API a third-party tool domain uses too);
this package brings only its domains (modules of ``envgym_tool.domains``, each exporting ``DOMAIN``), their
task authoring (``envgym_tool.authoring``), its tampering agents (``envgym_tool.tamper``, bound to the env in
``envgym_tool.env``) and this registration. The ``telecom`` domain is conversational: its envs talk to a
simulated user (:mod:`envgym.user`). Each domain's tasks are the bundled suite ``tool-<domain>``; the retail
domain also has a task generator, ``tool-retail-gen`` (:mod:`envgym_tool.authoring.retail_gen`:
``tool-retail-gen@0:10000`` is a suite).
"""

from __future__ import annotations

__all__ = ["CONVERSATIONAL", "DOMAINS", "RETAIL_TEMPLATES", "register_all"]

DOMAINS = {
    "retail": "A shop's customers, orders, products, returns and refunds.",
    "assistant": "A personal assistant's calendar, email and contacts.",
    "codes": "Short code look-ups with partial credit (the CPU training recipe's task family).",
    "telecom": "A mobile operator's support line; the customer is a simulated user who holds the facts.",
}
CONVERSATIONAL = frozenset({"telecom"})
"""Domains whose agent talks to a simulated user (:class:`envgym.tools.ConversationToolEnv`)."""
RETAIL_TEMPLATES = {
    "cancel": "train", "order-address": "train", "return": "train", "swap-variant": "train",
    "refuse-shipped": "train",
    "account-address": "test", "email": "test", "damaged-refund": "test", "refuse-window": "test",
}
"""``tool-retail-gen``'s template families and the split of each (:mod:`envgym_tool.authoring.retail_gen`)."""


def register_all() -> None:
    # Imported here: the hook may run while ``import envgym`` itself is still in progress.
    from envgym.plugin import register, register_generator

    for domain, description in DOMAINS.items():
        env_class = "ConversationToolEnv" if domain in CONVERSATIONAL else "ToolEnv"
        register(f"tool/{domain}-v1", f"envgym_tool.env:{env_class}", kwargs={"domain": domain},
                 suites=(f"tool-{domain}",), max_episode_steps=30, description=description)
    register_generator("tool-retail-gen", "envgym_tool.authoring.retail_gen:generate", family="tool",
                       env_id="tool/retail-v1", levels=(1, 2, 3), templates=RETAIL_TEMPLATES,
                       description="Seeded retail shops and multi-step customer requests (cancel, return, "
                                   "exchange, addresses, refunds).")
