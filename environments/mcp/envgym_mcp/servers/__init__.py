"""MCP servers written here, run inside sandboxes by :class:`envgym_mcp.env.McpToolEnv` (standard library only)."""

__all__: list[str] = []
