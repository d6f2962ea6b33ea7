"""The HTTP gateway (`minionsctl serve`, SPEC §5.2): a client of the daemon's socket that
serves MCP over Streamable HTTP, JSON-RPC over HTTP, /healthz and /metrics to agents on other
machines, with bearer tokens and scopes. It opens no database and keeps no memory of its own.

By concern: identity (who a token is and what its scopes allow), tokens (verifying a token
through the daemon, cached for a few seconds), policy (scope checks and identity rewriting of
params), daemon_link (the async socket client), guard (Host, Origin, size, query-string and
rate checks), rpc_http (/rpc), mcp_http (/mcp), metrics, app (the Starlette app), serve (the
process). The daemon and ordinary CLI commands never import this package.
"""
