"""The pages (SPEC §5.3): each one or two daemon calls as the signed-in token, rendered by a
template or answered as JSON with the same data. Filters live in the query string; ids and
paths in URLs are the ones the CLI and MCP tools take.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from minionsd.gateway.web.view import Viewer, WebError, WebView, strip_json

Handler = Callable[[Request, Viewer], Awaitable[Response]]
FILTERS = ("type", "scope", "status", "project", "agent", "trust")
TRY_MAX_CHARS = 20_000


def _query_filters(request: Request) -> dict[str, Any]:
    params: dict[str, Any] = {}
    q = request.query_params.get("q", "").strip()
    if q:
        params["query"] = q
    for name in FILTERS:
        value = request.query_params.get(name, "").strip()
        if value:
            params[name] = value
    cursor = request.query_params.get("cursor", "").strip()
    if cursor:
        params["cursor"] = cursor
    return params


class Pages:
    def __init__(self, view: WebView) -> None:
        self.view = view

    async def overview(self, request: Request, viewer: Viewer) -> Response:
        status = await self.view.call(viewer, "status")
        return self.view.page(request, viewer, "overview.html", {"status": status})

    async def inbox(self, request: Request, viewer: Viewer) -> Response:
        notes, quarantined = await asyncio.gather(
            self.view.call(viewer, "inbox.list"),
            self.view.call(viewer, "inbox.list", {"quarantined": True}))
        return self.view.page(request, viewer, "inbox.html",
                              {"notes": notes["notes"],
                               "quarantined": quarantined["quarantined"]})

    async def records(self, request: Request, viewer: Viewer) -> Response:
        params = _query_filters(request)
        result = await self.view.call(viewer, "memory.browse", params | {"limit": 50})
        shown = {k: v for k, v in params.items() if k != "cursor"}
        return self.view.page(request, viewer, "records.html",
                              {"filters": shown, "records": result["records"],
                               "total": result["total"],
                               "total_capped": result.get("total_capped", False),
                               "order": result.get("order", "newest"),
                               "next_cursor": result["next_cursor"]})

    async def record(self, request: Request, viewer: Viewer) -> Response:
        record_id = strip_json(request.path_params["id"])
        try:
            record = await self.view.call(viewer, "memory.get", {"id": record_id})
        except WebError as exc:
            if exc.status == 404 and "purged" in exc.detail:
                return self.view.page(request, viewer, "purged.html",
                                      {"id": record_id, "detail": exc.detail}, status=404)
            raise
        provenance, recalled = await asyncio.gather(
            self.view.call(viewer, "memory.provenance", {"id": record_id}),
            self.view.call(viewer, "telemetry.selections", {"id": record_id, "limit": 50}))
        return self.view.page(request, viewer, "record.html",
                              {"record": record, "provenance": provenance,
                               "recalled_by": recalled})

    async def knowledge(self, request: Request, viewer: Viewer) -> Response:
        category = request.query_params.get("category") or None
        params = {"category": category} if category else {}
        listing = await self.view.call(viewer, "knowledge.list", params)
        by_category: dict[str, list[dict[str, Any]]] = {}
        for entry in listing["entries"]:
            by_category.setdefault(entry["category"], []).append(entry)
        return self.view.page(request, viewer, "knowledge.html",
                              {"entries": listing["entries"], "category": category},
                              extra={"by_category": sorted(by_category.items())})

    async def knowledge_entry(self, request: Request, viewer: Viewer) -> Response:
        category = request.path_params["category"]
        name = strip_json(request.path_params["name"])
        entry = await self.view.call(viewer, "knowledge.get",
                                     {"path": f"knowledge/{category}/{name}"})
        return self.view.page(request, viewer, "entry.html", {"entry": entry})

    async def digest(self, request: Request, viewer: Viewer) -> Response:
        digest = await self.view.call(viewer, "digest.get", {"limit": 100})
        return self.view.page(request, viewer, "digest.html", {"digest": digest})

    async def agents(self, request: Request, viewer: Viewer) -> Response:
        agents = await self.view.call(viewer, "agents.list")
        return self.view.page(request, viewer, "agents.html", agents)

    async def agent(self, request: Request, viewer: Viewer) -> Response:
        agent_id = strip_json(request.path_params["id"])
        agent = await self.view.call(viewer, "agents.get", {"id": agent_id, "limit": 20})
        return self.view.page(request, viewer, "agent.html", {"agent": agent})

    async def try_task(self, request: Request, viewer: Viewer) -> Response:
        text = request.query_params.get("task", "")
        project = request.query_params.get("project", "").strip() or None
        agent = request.query_params.get("agent", "").strip() or None
        form = {"task": text, "project": project, "agent": agent}
        if not text.strip():
            return self.view.page(request, viewer, "try.html", {"form": form, "result": None})
        task = _task_from(text)
        params: dict[str, Any] = {"task": task}
        if project:
            params["project"] = project
        identity = viewer.identity
        if agent and agent != identity.agent:
            if not viewer.can("admin"):
                raise WebError(403, "Not allowed", "only an admin sign-in can try a task as "
                               f"another agent; yours recalls as {identity.agent!r}")
            identity = replace(identity, agent=agent)
        if agent:
            params["agent"] = agent
        result = await self.view.call(viewer, "prompt.assemble", params, identity=identity)
        return self.view.page(request, viewer, "try.html",
                              {"form": form, "task": task, "result": result})

    async def archived(self, request: Request, viewer: Viewer) -> Response:
        name = strip_json(request.path_params["name"])
        note = await self.view.call(viewer, "archive.get", {"name": name})
        return self.view.page(request, viewer, "archived.html", {"note": note})

    async def pinned(self, request: Request, viewer: Viewer) -> Response:
        pinned = await self.view.call(viewer, "pinned.get")
        return self.view.page(request, viewer, "pinned.html", {"pinned": pinned})


def _task_from(text: str) -> dict[str, Any]:
    """A Task from the form: Task JSON when the text is a JSON object, else the text as the
    task's title and description. Its id is always the view's own (`web-try:…`), so its
    telemetry row is never counted as an agent's recall."""
    if len(text) > TRY_MAX_CHARS:
        raise WebError(400, "That did not work",
                       f"the task is longer than {TRY_MAX_CHARS} characters")
    stripped = text.strip()
    task: dict[str, Any]
    if stripped.startswith("{"):
        try:
            task = json.loads(stripped)
        except ValueError as exc:
            raise WebError(400, "That did not work",
                           f"the task looks like JSON but is not valid JSON: {exc}") from None
        if not isinstance(task, dict):
            raise WebError(400, "That did not work", "Task JSON must be an object")
    else:
        first = stripped.splitlines()[0][:200]
        task = {"title": first, "description": stripped}
    original = task.get("id")
    suffix = original if isinstance(original, str) and original else secrets.token_hex(4)
    task["id"] = f"web-try:{suffix}"[:200]
    return task
