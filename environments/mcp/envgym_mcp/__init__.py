"""envgym's MCP family: envs whose tools are an MCP server's (a plug-in through ``envgym.environments``).

:class:`envgym_mcp.env.McpToolEnv` runs an MCP server inside a sandbox and serves its tools as an envgym
tool env, graded on the server's state (:mod:`envgym_mcp.env`); :mod:`envgym_mcp.client` is the small MCP
client it needs (no SDK); ``envgym_mcp/servers/kanban.py`` is the example server written here, whose tasks
are the ``mcp-kanban`` suite (``envgym_mcp.authoring``). ``mcp/server-v1`` runs whatever server each task
names in ``metadata.server`` (:func:`envgym_mcp.spec.server_of`): the bundled ``mcp-sqlite``, ``mcp-time`` and
``mcp-git`` suites run the PyPI servers of those names (``envgym_mcp.examples``), no code of theirs here.
Serving an envgym env *as* an MCP server is the kernel's ``envgym mcp serve`` (:mod:`envgym.mcp`).
"""

from __future__ import annotations

__all__ = ["register_all"]


def register_all() -> None:
    from envgym.plugin import register

    register("mcp/server-v1", "envgym_mcp.env:McpToolEnv", suites=("mcp-sqlite", "mcp-time", "mcp-git"),
             max_episode_steps=30, description="Any MCP server a task names (metadata.server), in a sandbox of its "
             "own image built offline from its PyPI package.")
    register("mcp/kanban-v1", "envgym_mcp.env:McpToolEnv", kwargs={"server": "kanban"}, suites=("mcp-kanban",),
             max_episode_steps=30, description="A team's kanban board, an MCP server (stdio) in a Docker sandbox.")
