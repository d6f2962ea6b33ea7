"""`POST /mcp`: the MCP tools and resources of SPEC §5.1 over Streamable HTTP, with the `mcp`
SDK's stateless session manager (JSON responses), for the handshake revisions (2025-06-18,
2025-11-25) and the per-request one (2026-07-28) alike.

Nothing about a tool is defined here: names, descriptions, schemas, annotations and what each
does come from minionsd/agents/tools.py and resources.py, the same code `minionsctl mcp` runs.
This module adapts them: it lists only the tools the token's scopes allow, and runs a tool in
a worker thread with a Session whose transport is the gateway's own scope-checked,
identity-rewriting call (GatewayCaller), so a tool can never do more than the token could
through /rpc. The request's identity reaches the handlers through a context variable set by
the ASGI entry point for each request.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import mcp_types as types
from mcp.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from starlette.types import Receive, Scope, Send

from minionsd import __version__
from minionsd.agents import resources, tools
from minionsd.agents.protocol import INSTRUCTIONS, SERVER_NAME, TITLE
from minionsd.agents.session import Session, ToolFailure
from minionsd.gateway.daemon_link import GatewayCaller
from minionsd.gateway.identity import Identity

# The daemon method behind each tool (SPEC §5.1's table): a tool is listed when the token may
# call its method.
TOOL_METHODS = {
    "memory_context": "prompt.assemble", "memory_search": "memory.search",
    "memory_get": "memory.get", "memory_note": "inbox.submit",
    "memory_outcome": "episode.capture", "memory_retract": "memory.retract",
    "memory_supersede": "memory.supersede", "knowledge_list": "knowledge.list",
    "knowledge_get": "knowledge.get"}


@dataclass(frozen=True)
class Caller:
    identity: Identity
    project: str | None


CURRENT: contextvars.ContextVar[Caller] = contextvars.ContextVar("minions_gateway_caller")


def allowed_tools(identity: Identity) -> list[tools.ToolSpec]:
    return [spec for spec in tools.TOOLS
            if identity.allows(TOOL_METHODS.get(spec.name, "admin"))]


def _tool(spec: tools.ToolSpec) -> types.Tool:
    hints = spec.annotations
    return types.Tool(name=spec.name, title=spec.title, description=spec.description,
                      input_schema=spec.input_schema,
                      annotations=types.ToolAnnotations(
                          title=spec.title, read_only_hint=hints["readOnlyHint"],
                          destructive_hint=hints["destructiveHint"],
                          idempotent_hint=hints["idempotentHint"],
                          open_world_hint=hints["openWorldHint"]))


def tool_result(session: Session, name: str, arguments: dict[str, Any] | None
                ) -> types.CallToolResult:
    """One tool call as the SDK's result, exactly as `minionsctl mcp` answers it
    (tools.answer: readable text, structured content without raw recalled text, or a tool
    error)."""
    wire = tools.answer(session, name, arguments)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=c["text"]) for c in wire["content"]],
        structured_content=wire["structuredContent"], is_error=wire["isError"])


class McpEndpoint:
    """The /mcp ASGI app and the SDK server behind it; `run()` belongs in the lifespan."""

    def __init__(self, caller: GatewayCaller) -> None:
        self.caller = caller
        self.server = self._build_server()
        self.manager = StreamableHTTPSessionManager(self.server, json_response=True,
                                                    stateless=True)

    def session(self) -> Session:
        """A tools.py Session for the current request: the token's agent and project, every
        call through the gateway's checks (from a worker thread back to the event loop)."""
        current = CURRENT.get()

        def transport(method: str, params: dict[str, Any]) -> Any:
            return anyio.from_thread.run(self.caller.call, method, params, current.identity)

        return Session(socket=self.caller.link.socket_path, home=None,
                       agent=current.identity.agent, project=current.project,
                       transport=transport)

    def _build_server(self) -> Server[Any]:
        async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
            return types.ListToolsResult(
                tools=[_tool(spec) for spec in allowed_tools(CURRENT.get().identity)])

        async def call_tool(_ctx: Any, params: types.CallToolRequestParams
                            ) -> types.CallToolResult:
            session = self.session()
            return await anyio.to_thread.run_sync(tool_result, session, params.name,
                                                  params.arguments)

        async def list_resources(_ctx: Any, _params: Any) -> types.ListResourcesResult:
            return types.ListResourcesResult(resources=[
                types.Resource(uri=spec.uri, name=spec.name, title=spec.title,
                               description=spec.description, mime_type=resources.MARKDOWN)
                for spec in resources.RESOURCES])

        async def list_templates(_ctx: Any, _params: Any) -> types.ListResourceTemplatesResult:
            spec = resources.TEMPLATE
            return types.ListResourceTemplatesResult(resource_templates=[
                types.ResourceTemplate(uri_template=spec.uri, name=spec.name, title=spec.title,
                                       description=spec.description,
                                       mime_type=resources.MARKDOWN)])

        async def read_resource(_ctx: Any, params: types.ReadResourceRequestParams
                                ) -> types.ReadResourceResult:
            uri = str(params.uri)
            session = self.session()
            try:
                text = await anyio.to_thread.run_sync(resources.read, session, uri)
            except resources.ResourceNotFound as exc:
                raise MCPError(code=types.INVALID_PARAMS, message=str(exc),
                               data={"uri": uri}) from None
            except ToolFailure as exc:  # as stdio: the text only, no daemon data
                raise MCPError(code=types.INTERNAL_ERROR, message=exc.text,
                               data={"uri": uri}) from None
            return types.ReadResourceResult(contents=[
                types.TextResourceContents(uri=uri, text=text, mime_type=resources.MARKDOWN)])

        return Server(SERVER_NAME, version=__version__, title=TITLE,
                      instructions=INSTRUCTIONS, on_list_tools=list_tools,
                      on_call_tool=call_tool, on_list_resources=list_resources,
                      on_list_resource_templates=list_templates,
                      on_read_resource=read_resource)

    async def handle(self, scope: Scope, receive: Receive, send: Send, caller: Caller) -> None:
        token = CURRENT.set(caller)
        try:
            await self.manager.handle_request(scope, receive, send)
        finally:
            CURRENT.reset(token)
