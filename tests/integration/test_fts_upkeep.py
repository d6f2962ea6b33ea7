"""The private FTS5 upkeep: after a burst of writes the index is merged back to few segments."""

from __future__ import annotations

from tests.conftest import wait_for


def test_index_segments_are_merged_after_a_write_burst(daemon):
    d = daemon
    # One transaction per record: every memory.add leaves an FTS5 segment behind until merged.
    for i in range(40):
        d.call("memory.add", body=f"note {i}: token refresh retry number {i}", type="semantic",
               scope="global", trust="human", source="test")
    hits_before = d.call("memory.search", query="refresh", limit=50)["total"]
    wait_for(lambda: (d.call("status")["index"]["fts_segments"] or 99) <= 4, timeout=30)
    # Merging changes how the index is stored, never what it finds.
    assert d.call("memory.search", query="refresh", limit=50)["total"] == hits_before == 40
    assert d.call("memory.search", query="number", limit=5)["total"] == 40
