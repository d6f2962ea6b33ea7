"""What a person can change from the view (SPEC §5.3), each a POST that needs the session's
CSRF token, a same-origin request and the scope the daemon method needs; the record's
lifecycle changes are behind a confirm page (GET shows what will happen, its form POSTs).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response

from minionsd.gateway.web.view import Viewer, WebError, WebView

Handler = Callable[[Request, Viewer], Awaitable[Response]]
MAX_FIELD = 100_000


@dataclass(frozen=True)
class RecordAction:
    name: str
    method: str
    scope: str
    title: str
    explain: str
    field: str | None = None   # the one input the action takes: reason or by
    done: str = ""


RECORD_ACTIONS = {a.name: a for a in (
    RecordAction("retract", "memory.retract", "write", "Retract this record",
                 "A retracted record is never recalled again. Say why: the reason is kept "
                 "with the record.", "reason", "retracted"),
    RecordAction("supersede", "memory.supersede", "write", "Supersede this record",
                 "Name the record that replaces this one; agents then recall that one "
                 "instead.", "by", "superseded"),
    RecordAction("pin", "memory.pin", "admin", "Pin this record",
                 "Pinning makes the record active again and raises its trust, importance "
                 "and confidence (it does not edit pinned.md).", None, "pinned"),
    RecordAction("expire", "memory.expire", "admin", "Expire this record",
                 "An expired record is never recalled again.", None, "expired"),
    RecordAction("purge", "memory.purge", "admin", "Purge this record for good",
                 "The record and its search entry are deleted for good; only an audit row "
                 "with your reason remains. The files that still hold its text are listed "
                 "afterwards so you can edit them. This cannot be undone.", "reason", ""),
)}


def _field(form: Any, name: str, *, required: bool = True) -> str:
    value = form.get(name)
    if not isinstance(value, str) or (required and not value.strip()):
        if required:
            raise WebError(400, "That did not work", f"the form's '{name}' is missing")
        return ""
    if len(value) > MAX_FIELD:
        raise WebError(400, "That did not work", f"'{name}' is too long")
    return value


class Actions:
    def __init__(self, view: WebView) -> None:
        self.view = view

    def _need(self, viewer: Viewer, scope: str, what: str) -> None:
        if not viewer.can(scope):
            raise WebError(403, "Not allowed",
                           f"{what} needs a token with the {scope!r} scope; yours has "
                           f"{', '.join(sorted(viewer.identity.scopes))}")

    async def consolidate(self, request: Request, viewer: Viewer, form: Any) -> Response:
        self._need(viewer, "admin", "consolidating")
        await self.view.call(viewer, "consolidation.run", {"force": True})
        return self.view.redirect("/", "consolidated")

    async def hold(self, request: Request, viewer: Viewer, form: Any) -> Response:
        self._need(viewer, "admin", "holding a note")
        held = _field(form, "held") == "true"
        await self.view.call(viewer, "inbox.hold", {"name": _field(form, "name"),
                                                    "held": held})
        return self.view.redirect("/inbox", "held" if held else "released")

    async def requeue(self, request: Request, viewer: Viewer, form: Any) -> Response:
        self._need(viewer, "admin", "requeueing a file")
        await self.view.call(viewer, "inbox.requeue", {"name": _field(form, "name")})
        return self.view.redirect("/inbox", "requeued")

    async def save_pinned(self, request: Request, viewer: Viewer, form: Any) -> Response:
        self._need(viewer, "admin", "editing pinned.md")
        text = _field(form, "text", required=False).replace("\r\n", "\n")
        await self.view.call(viewer, "pinned.set", {"text": text})
        return self.view.redirect("/pinned", "pinned-saved")

    def _action(self, request: Request) -> tuple[str, RecordAction]:
        action = RECORD_ACTIONS.get(request.path_params["action"])
        if action is None:
            raise WebError(404, "Not found", "no such action on a record")
        return request.path_params["id"], action

    async def confirm(self, request: Request, viewer: Viewer) -> Response:
        record_id, action = self._action(request)
        self._need(viewer, action.scope, f"{action.name} of a record")
        record = await self.view.call(viewer, "memory.get", {"id": record_id})
        return self.view.page(request, viewer, "confirm.html",
                              {"record": record, "action": action.name},
                              extra={"action": action})

    async def record_action(self, request: Request, viewer: Viewer, form: Any) -> Response:
        record_id, action = self._action(request)
        self._need(viewer, action.scope, f"{action.name} of a record")
        if form.get("confirm") != "yes":
            raise WebError(400, "Not confirmed", "tick the confirmation box to go ahead")
        params: dict[str, Any] = {"id": record_id}
        if action.field:
            params[action.field] = _field(form, action.field).strip()
        result = await self.view.call(viewer, action.method, params)
        if action.name == "purge":
            return self.view.page(request, viewer, "purged_done.html", {"result": result})
        return self.view.redirect(f"/records/{quote(record_id, safe='')}", action.done)
