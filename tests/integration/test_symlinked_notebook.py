"""A notebook that is a symlink out of knowledge/agents/ (SPEC §2 v3): never followed, and it
fails neither that agent's prompts nor a batch holding its notes; `status.warnings` names it."""

from __future__ import annotations

import os

from tests.integration.test_consolidation import home_with


def test_a_notebook_linked_out_of_the_home_fails_no_prompt_or_batch(make_daemon, short_home,
                                                                       tmp_path):
    home = home_with(short_home, "auto_consolidate_memory = false\n")
    outside = tmp_path / "elsewhere.md"
    outside.write_text("# Not minionsd's\n\nQuince outside text that no prompt may show.\n")
    agents = home / "knowledge" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    link = agents / "dallas.md"
    os.symlink(outside, link)
    daemon = make_daemon()
    daemon.call("inbox.submit", author="dallas", title="Fig rollout",
                body="The fig rollout needs the canary first.")
    daemon.call("inbox.submit", author="kane", title="Pear build",
                body="The pear build caches wheels.")
    result = daemon.call("consolidation.run", force=True)
    assert result["records_upserted"] == 2
    assert daemon.call("status")["inbox"]["pending"] == 0
    assert link.is_symlink() and "Quince outside" in outside.read_text()
    assert "fig rollout" not in outside.read_text().lower()
    prompt = daemon.call("prompt.assemble", task={"id": "t-1", "title": "quince outside"},
                         agent="dallas")
    assert "Quince outside" not in prompt["text"]
    warned = {w["file"]: w["reason"] for w in daemon.call("status")["warnings"]}
    assert "symlink" in warned["knowledge/agents/dallas.md"]
