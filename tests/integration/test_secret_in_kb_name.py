"""A token in a hand-made knowledge file's name (SPEC §3.3: secrets never reach a prompt): the
record's source and a title taken from the name are redacted, as a dropped note's name is."""

from __future__ import annotations

from tests.integration.test_consolidation import home_with

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
KEY = "AKIA" + "IOSFODNN7EXAMPLQ"


def test_a_token_in_a_kb_file_name_reaches_no_source_title_or_prompt(make_daemon, short_home):
    home = home_with(short_home, "auto_consolidate_memory = false\n")
    directory = home / "knowledge" / "conventions"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"deploy-{TOKEN}.md").write_text(
        "# Mango deploy\n\nThe mango deploy uses the ops token.\n")
    (directory / f"mango-{KEY}-keys.md").write_text("The mango keys rotate monthly.\n")
    daemon = make_daemon()
    assert daemon.call("maintenance.run", job="kb_sweep")["report"]["imported"] == 2
    found = daemon.call("memory.search", query="mango", limit=10)["records"]
    assert len(found) == 2
    for record in found:
        shown = daemon.call("memory.get", id=record["id"])
        for field in ("source", "title"):
            assert TOKEN not in shown[field] and KEY not in shown[field], (field, shown[field])
        assert shown["source"].startswith("knowledge/conventions/")
    prompt = daemon.call("prompt.assemble", task={"id": "t-1", "title": "mango deploy keys"})
    assert prompt["retrieval"]["selected"], prompt["retrieval"]
    for secret in (TOKEN, KEY):
        assert secret not in prompt["text"] and secret.lower() not in prompt["text"].lower()
    # The files keep their names and stay bound to their records: an edit updates, no copy.
    (directory / f"deploy-{TOKEN}.md").write_text(
        "# Mango deploy\n\nThe mango deploy uses the ops token from the vault.\n")
    report = daemon.call("maintenance.run", job="kb_sweep")["report"]
    assert (report["updated"], report["imported"]) == (1, 0)
