"""A `knowledge/` directory that is a symlink out of the home (SPEC §2 v3: never followed).
The watcher does not read through it, and does not take the files minionsd itself wrote there
for deleted files either: their records stay active, and `status.warnings` names them."""

from __future__ import annotations

import os

from tests.conftest import wait_for
from tests.integration.test_consolidation import home_with


def test_a_linked_knowledge_directory_retracts_nothing(make_daemon, short_home, tmp_path):
    home = home_with(short_home, "auto_consolidate_memory = false\n")
    elsewhere = tmp_path / "team-kb"
    elsewhere.mkdir()
    os.symlink(elsewhere, home / "knowledge")
    daemon = make_daemon()
    made = daemon.call("knowledge.create", category="conventions", author="ripley",
                       title="Kiwi naming", body="Kiwi services are named after birds.")

    def settled() -> bool:  # the watcher has looked at the new file, one way or the other
        warned = {w["file"] for w in daemon.call("status")["warnings"]}
        return made["path"] in warned or \
            daemon.call("memory.get", id=made["record_id"])["status"] != "active"

    wait_for(settled, timeout=20, what="the watcher to look at the new entry")
    assert daemon.call("memory.get", id=made["record_id"])["status"] == "active"
    assert (elsewhere / made["path"].removeprefix("knowledge/")).is_file()
