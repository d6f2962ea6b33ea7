"""Agent integrations: the MCP server (`minionsctl mcp`), Claude Code hooks (`minionsctl hook`)
and the configuration writer (`minionsctl connect`).

Nothing here is imported by the daemon or by the other minionsctl commands; minionsd/cli/ imports
these modules inside the command functions that need them. None imports the `mcp` SDK:
`minionsctl mcp` speaks the protocol itself (protocol.py, mcp_server.py) so that it starts in a
fraction of a second.
"""
