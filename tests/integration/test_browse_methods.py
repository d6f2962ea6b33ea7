"""The read methods the web view stands on, through the real socket: memory.browse (filters,
stable keyset pages), memory.provenance (supersede chain both ways), telemetry.selections (who
recalled a record, the view's own tries left out), agents.list / agents.get, digest.get and the
ages in inbox.list."""

from __future__ import annotations

import pytest

from minionsd.client import RpcError


def _add(daemon, body: str, **extra):
    params = {"body": body, "type": "semantic", "scope": "global", "trust": "agent",
              "source": "test"} | extra
    return daemon.call("memory.add", **params)["id"]


def test_browse_pages_are_stable_while_records_arrive(daemon):
    ids = [_add(daemon, f"note number {i} about caching") for i in range(7)]
    first = daemon.call("memory.browse", limit=3)
    assert [r["id"] for r in first["records"]] == ids[::-1][:3]
    assert first["total"] == 7 and first["next_cursor"]
    _add(daemon, "a newer note arrives between two pages")
    second = daemon.call("memory.browse", limit=3, cursor=first["next_cursor"])
    assert [r["id"] for r in second["records"]] == ids[::-1][3:6]
    third = daemon.call("memory.browse", limit=3, cursor=second["next_cursor"])
    assert [r["id"] for r in third["records"]] == ids[::-1][6:]
    assert third["next_cursor"] is None
    assert "body" not in first["records"][0] and first["records"][0]["excerpt"]


def test_browse_filters_and_search(daemon):
    human = _add(daemon, "retry storms in the payments queue", trust="human",
                 scope="project:pay", project="pay")
    _add(daemon, "retry budgets for the search service")
    retracted = _add(daemon, "retry forever, it is fine")
    daemon.call("memory.retract", id=retracted, reason="wrong advice")
    got = daemon.call("memory.browse", query="retry")
    assert {r["id"] for r in got["records"]} >= {human} and got["total"] == 2
    assert [r["id"] for r in daemon.call("memory.browse", trust="human")["records"]] == [human]
    assert [r["id"] for r in daemon.call("memory.browse", project="pay")["records"]] == [human]
    assert [r["id"] for r in daemon.call("memory.browse", status="retracted")["records"]] == [
        retracted]
    assert daemon.call("memory.browse", status="all")["total"] == 3
    assert daemon.call("memory.browse", status="retracted")["total"] == 1
    assert daemon.call("memory.browse")["total"] == 2  # active, from the kept counters
    assert daemon.call("memory.browse", status="all", trust="agent")["total"] == 2
    hit = daemon.call("memory.browse", query="payments", status="all")["records"][0]
    assert hit["id"] == human and "payments" in hit["excerpt"]
    with pytest.raises(RpcError) as err:
        daemon.call("memory.browse", trust="boss")
    assert err.value.code == -32602 and "trust" in str(err.value)
    with pytest.raises(RpcError) as err:
        daemon.call("memory.browse", cursor="x12")
    assert "cursor" in str(err.value)


def test_provenance_and_selections(daemon):
    old = _add(daemon, "the build cache lives in /var/cache/build on the runners")
    new = _add(daemon, "the build cache moved to /srv/cache on the runners")
    newest = _add(daemon, "the build cache is in object storage now")
    daemon.call("memory.supersede", id=old, by=new)
    daemon.call("memory.supersede", id=new, by=newest)
    chain = daemon.call("memory.provenance", id=new)
    assert [r["id"] for r in chain["supersedes"]] == [old]
    assert [r["id"] for r in chain["superseded_by"]] == [newest]
    assert chain["superseded_by"][0]["status"] == "active"
    assert [r["id"] for r in daemon.call("memory.provenance", id=newest)["supersedes"]] == [
        new, old]
    task = {"id": "T-1", "title": "where is the build cache on the runners"}
    daemon.call("memory.retrieve", task=task, agent="dallas")
    daemon.call("prompt.assemble", task={"id": "web-try:abc", "title": task["title"]},
                agent="dallas")
    rows = daemon.call("telemetry.selections", id=newest)
    assert rows["total"] == 1 and rows["rows"][0]["task_id"] == "T-1"
    assert rows["rows"][0]["agent"] == "dallas"
    assert daemon.call("telemetry.selections", id=old)["total"] == 0
    with pytest.raises(RpcError) as err:
        daemon.call("memory.provenance", id="M-nope")
    assert err.value.code == -32001


def test_agents_and_digest(daemon, short_home):
    config = short_home / "config.toml"
    config.write_text('[agents.dallas]\nname = "Dallas"\n')
    daemon.stop()
    daemon.start()
    notebook = short_home / "knowledge" / "agents" / "dallas.md"
    notebook.write_text("# Dallas\n\n- prefers small commits\n")
    daemon.call("memory.retrieve", task={"id": "T-9", "title": "small commits"}, agent="dallas")
    agents = daemon.call("agents.list")["agents"]
    assert [(a["id"], a["name"], a["notebook"]) for a in agents] == [
        ("dallas", "Dallas", "knowledge/agents/dallas.md")]
    assert agents[0]["last_retrieval_at"]
    one = daemon.call("agents.get", id="dallas")
    assert "prefers small commits" in one["notebook_text"]
    assert [r["task_id"] for r in one["retrievals"]] == ["T-9"]
    with pytest.raises(RpcError) as err:
        daemon.call("agents.get", id="nobody")
    assert err.value.code == -32001
    (short_home / "notes.md").write_bytes(
        b"# Team notes\n\n---\n\n### One\nfirst\n\n---\n\n### Two\nsecond \xff\n")
    digest = daemon.call("digest.get")
    assert digest["total"] == 2 and digest["sections"][0].startswith("---\n\n### Two")
    assert "\ufffd" in digest["sections"][0]
    assert [w["file"] for w in daemon.call("status")["warnings"]] == ["notes.md"]
    daemon.call("inbox.submit", body="hello", author="dallas", title="plain")
    daemon.call("inbox.submit", body="not yet", author="dallas", title="kept", hold=True)
    notes = {n["name"].split("-")[1]: n for n in daemon.call("inbox.list")["notes"]}
    assert notes["plain"]["modified_at"].endswith("Z")
    assert notes["kept"]["held"] and notes["kept"]["held_by_file"]
    assert not notes["plain"]["held_by_file"]


def test_archived_notes_are_shown_redacted(daemon, short_home):
    secret = "AKIA" + "ABCDEFGHIJKLMNOP"
    daemon.call("inbox.submit", body=f"deploy key {secret} for the runners", author="dallas",
                title="Runner key")
    daemon.call("consolidation.run", force=True)
    record = daemon.call("memory.browse", query="runner key")["records"][0]
    [path] = daemon.call("memory.provenance", id=record["id"])["archived"]
    assert secret in (short_home / path).read_text()  # the archive keeps what was written
    note = daemon.call("archive.get", name=path.rsplit("/", 1)[1])
    assert note["path"] == path and secret not in note["text"] and "REDACTED" in note["text"]
    for bad, code in (("../config.toml", -32602), ("nope.md", -32001)):
        with pytest.raises(RpcError) as err:
            daemon.call("archive.get", name=bad)
        assert err.value.code == code
