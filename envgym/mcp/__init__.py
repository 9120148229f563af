"""envgym over the Model Context Protocol: serve an episode's tools to any MCP client.

:class:`~envgym.mcp.serve.EpisodeServer` serves one episode of any env (stdio, or Streamable HTTP on
127.0.0.1 at a per-episode URL); ``envgym mcp serve ENV_ID`` is its command (:mod:`envgym.mcp.cli`,
registered through the ``envgym.cli`` entry point). Every call goes through ``env.step``. The other
direction, an env whose tools are an MCP server's, is the ``envgym_mcp`` plug-in. Importing this package
needs nothing; :mod:`envgym.mcp.serve` needs the ``mcp`` extra (``mcp>=2.3``).
"""

__all__: list[str] = []
