"""RPC surface for knowledge authoring and pinned context (files first, then SQL)."""

from __future__ import annotations

from typing import Any

from minionsd.memory import knowledge, pinned
from minionsd.memory.app import Surface


class KnowledgeSurface(Surface):
    def _create(self, params: dict[str, Any]) -> dict[str, Any]:
        now = self.app.now()
        path, text, fields = knowledge.prepare_entry(self.app.home, params, now)
        while True:
            try:
                knowledge.write_entry(path, text)
                break
            except FileExistsError:
                path, text, fields = knowledge.prepare_entry(self.app.home, params, now)
        rel = self.app.home.rel(path)
        record_id = self.app.db.write_blocking(knowledge.insert_record, rel, text, fields, now)
        return {"path": rel, "record_id": record_id}

    def methods(self) -> dict[str, Any]:
        app = self.app

        async def knowledge_create(category: Any, title: Any, body: Any, author: Any,
                                   project: Any = None, tags: Any = None,
                                   trust: Any = None) -> dict[str, Any]:
            params = {"category": category, "title": title, "body": body, "author": author,
                      "project": project, "tags": tags, "trust": trust}
            return await app.off_loop(self._create, params, name="kb-create")

        async def knowledge_list(category: Any = None, project: Any = None) -> dict[str, Any]:
            return await app.off_loop(knowledge.list_entries, app.home, category,
                                      app.file_warnings, project)

        async def knowledge_get(path: Any, project: Any = None) -> dict[str, Any]:
            return await app.off_loop(knowledge.get_entry, app.home, path,
                                      app.file_warnings, project)

        async def pinned_get() -> dict[str, Any]:
            return await app.off_loop(pinned.get, app.home, app.file_warnings)

        async def pinned_set(text: Any) -> dict[str, Any]:
            return await app.off_loop(pinned.set_text, app.home, text)

        async def pinned_append(text: Any) -> dict[str, Any]:
            return await app.off_loop(pinned.append, app.home, text, app.now(),
                                      app.file_warnings)

        return {"knowledge.create": knowledge_create, "knowledge.list": knowledge_list,
                "knowledge.get": knowledge_get, "pinned.get": pinned_get,
                "pinned.set": pinned_set, "pinned.append": pinned_append}
