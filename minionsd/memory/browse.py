"""The read methods the web view (SPEC §5.3) needs beyond the core API, usable by any client:
records browsed with filters and stable pages, a record's provenance and supersede chain,
the retrievals that selected a record, the configured agents with their notebooks and latest
retrievals, and the digest's sections newest first.

Everything here is read-only and returns what files and SQL hold now; text shown to a person
was redacted on its way in (SPEC §3.1), and text read from a file someone may edit by hand (an
archived original, notes.md, a notebook) is redacted on its way out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from minionsd.errors import InvalidParams, NotFound
from minionsd.fileio import read_text
from minionsd.home import check_name, safe_child
from minionsd.memory.app import App, Surface
from minionsd.memory.knowledge import shown_path
from minionsd.memory.recall import TelemetryQueue
from minionsd.storage import browse, journal, kb_index, records
from minionsd.text.notesfile import split_sections, strip_markers
from minionsd.text.redact import redact

DIGEST_MAX_SECTIONS = 500


def provenance(conn: Any, record_id: str, now: Any) -> dict[str, Any]:
    """The record's files and supersede chain (NotFound for an unknown id)."""
    record = records.fetch(conn, record_id, now)
    kb = list(kb_index.paths_of_record(conn, record_id))
    archived: list[str] = []
    source = record["source"] or ""
    if source.startswith("knowledge/"):
        kb.append(source)
    elif source.startswith("notes/archive/"):
        archived.append(source)
    for note in journal.notes_of_record(conn, record_id):
        if note["kb_path"]:
            kb.append(note["kb_path"])
        if note["archive_path"]:
            archived.append(note["archive_path"])
    # A hand-made file name is shown with its secret redacted (knowledge.get reads it so).
    return {"id": record_id, "kb_entries": list(dict.fromkeys(shown_path(p) for p in kb)),
            "archived": list(dict.fromkeys(archived))} | browse.supersede_chain(
                conn, record_id, now)


def digest_sections(text: str | None, limit: int) -> dict[str, Any]:
    """notes.md's header and newest `limit` sections, each redacted: the file may have been
    edited by hand (only the sections shown are redacted, not the whole file)."""
    if text is None:
        return {"sections": [], "total": 0, "header": ""}
    header, sections = split_sections(text)
    newest = [strip_markers(s).strip() for s in reversed(sections[-limit:])]
    return {"header": redact(strip_markers(header).strip()), "total": len(sections),
            "sections": [redact(s) for s in newest if s]}


def archived_note(archive: Path, name: Any) -> dict[str, Any]:
    """An archived note as a person may see it: redacted like every derived surface (the file
    keeps what its author wrote; a page must not show a secret redaction removes)."""
    path = safe_child(archive, name, "name")
    if path.is_symlink() or not path.is_file():
        raise NotFound(f"no archived note named {name!r} in notes/archive", name=name)
    text = read_text(path) or ""
    return {"path": f"notes/archive/{name}", "text": redact(text)}


class BrowseSurface(Surface):
    """memory.browse, memory.provenance, telemetry.selections, agents.list, agents.get,
    digest.get, archive.get. `telemetry` is recall's queue: rows of retrievals that already
    answered are written before a listing of them is read."""

    def __init__(self, app: App, telemetry: TelemetryQueue) -> None:
        super().__init__(app)
        self.telemetry = telemetry

    def _agent_info(self, agent_id: str, with_text: bool = False) -> dict[str, Any]:
        """The agent's page; with `with_text`, its notebook's text too, redacted (a hand edit
        may have added a secret to the file)."""
        configured = self.app.config.agents.get(agent_id)
        temporary = bool((configured or {}).get("temporary", False))
        notebook = self.app.home.notebook(agent_id)
        text = (read_text(notebook, self.app.file_warnings)
                if configured and not temporary else None)
        return {"id": agent_id, "name": (configured or {}).get("name") or agent_id,
                "configured": configured is not None, "temporary": temporary,
                "notebook": self.app.home.rel(notebook) if text is not None else None,
                "notebook_bytes": len(text.encode("utf-8")) if text is not None else 0,
                "notebook_text": redact(text) if with_text and text is not None else None}

    def methods(self) -> dict[str, Any]:
        app = self.app

        async def memory_browse(query: Any = None, type: Any = None, scope: Any = None,
                                status: Any = None, project: Any = None, agent: Any = None,
                                trust: Any = None, cursor: Any = None,
                                limit: Any = None) -> dict[str, Any]:
            params = {"query": query, "type": type, "scope": scope, "status": status,
                      "project": project, "agent": agent, "trust": trust, "cursor": cursor,
                      "limit": limit}
            return await app.db.read(browse.browse, params, app.now())

        async def memory_provenance(id: Any) -> dict[str, Any]:
            if not isinstance(id, str) or not id:
                raise InvalidParams("'id' must be a non-empty string", param="id")
            return await app.db.read(provenance, id, app.now())

        async def telemetry_selections(id: Any, limit: Any = None) -> dict[str, Any]:
            if not isinstance(id, str) or not id:
                raise InvalidParams("'id' must be a non-empty string", param="id")
            await _flush_telemetry()
            return await app.db.read(browse.selections, id, limit)

        async def agents_list() -> dict[str, Any]:
            ids = sorted(app.config.agents)
            await _flush_telemetry()
            last = await app.db.read(browse.last_retrieval_at, ids)
            infos = await app.off_loop(
                lambda: [self._agent_info(i) for i in ids], name="agents-list")
            return {"agents": [{k: v for k, v in info.items() if k != "notebook_text"}
                               | {"last_retrieval_at": last[info["id"]]} for info in infos]}

        async def agents_get(id: Any, limit: Any = None) -> dict[str, Any]:
            agent_id = check_name(id, "id", 200)
            await _flush_telemetry()
            rows = await app.db.read(browse.agent_retrievals, agent_id, limit)
            info = await app.off_loop(self._agent_info, agent_id, True, name="agents-get")
            if not info["configured"] and not rows:
                raise NotFound(f"no configured agent and no retrievals for {agent_id!r}",
                               id=agent_id)
            return info | {"retrievals": rows}

        async def digest_get(limit: Any = None) -> dict[str, Any]:
            if limit is None:
                limit = 50
            if isinstance(limit, bool) or not isinstance(limit, int) \
                    or not 1 <= limit <= DIGEST_MAX_SECTIONS:
                raise InvalidParams(f"'limit' must be an integer from 1 to "
                                    f"{DIGEST_MAX_SECTIONS}", param="limit")
            text = await app.off_loop(read_text, app.home.notes, app.file_warnings,
                                      name="digest-get")
            return {"path": "notes.md"} | digest_sections(text, limit)

        async def archive_get(name: Any) -> dict[str, Any]:
            return await app.off_loop(archived_note, app.home.archive, name,
                                      name="archive-get")

        async def _flush_telemetry() -> None:
            self.telemetry.flush()
            await app.db.settled()

        return {"memory.browse": memory_browse, "memory.provenance": memory_provenance,
                "telemetry.selections": telemetry_selections, "agents.list": agents_list,
                "agents.get": agents_get, "digest.get": digest_get,
                "archive.get": archive_get}
