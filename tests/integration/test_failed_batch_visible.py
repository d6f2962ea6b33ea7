"""A batch that keeps failing stays visible until a batch runs through: in `status` (also after
another `consolidate` and after a restart), in `minionsctl inbox` (its notes are "in open
batch", not "waiting"), and as an error from `consolidate --force` (a real daemon, socket, CLI)."""

from __future__ import annotations

import pytest

from minionsd.rpc.client import RpcError
from tests.integration.test_cli import clean_env, run_ctl


def ctl(home, *args: str):
    return run_ctl(*args, env=clean_env(MINIONS_HOME=str(home)))


def failure(daemon) -> str | None:
    last = daemon.call("status")["consolidation"]["last_failure"]
    return last and last["reason"]


def test_a_failing_batch_stays_in_status_and_consolidate_reports_it(make_daemon, short_home):
    short_home.mkdir(parents=True)
    (short_home / "config.toml").write_text(
        "[engine]\ninbox_settle_ms = 0\nauto_consolidate_memory = false\n")
    daemon = make_daemon()
    notes = short_home / "notes.md"
    notes.unlink(missing_ok=True)
    notes.mkdir()  # stands for anything that makes every batch fail
    daemon.call("inbox.submit", author="ripley", title="VPN for deploys",
                body="Deploys need the VPN on")
    with pytest.raises(RpcError):
        daemon.call("consolidation.run", force=True)
    assert "is a directory" in failure(daemon)
    # Again, with the cause unchanged: still an error, still in status.
    with pytest.raises(RpcError) as caught:
        daemon.call("consolidation.run", force=True)
    assert "is a directory" in caught.value.detail
    assert "is a directory" in failure(daemon)
    assert any(w["file"] == "notes/inbox" for w in daemon.call("status")["warnings"])
    done = ctl(short_home, "consolidate", "--force")
    assert done.returncode != 0 and "is a directory" in done.stderr, done
    listed = daemon.call("inbox.list")["notes"]
    assert [n["in_open_batch"] for n in listed] == [True]
    shown = ctl(short_home, "inbox")
    assert shown.returncode == 0 and "in open batch" in shown.stdout, shown

    # A restart redoes the open batch at start: it fails again, and status says so.
    daemon.stop()
    daemon = make_daemon()
    assert "is a directory" in failure(daemon)
    assert "in open batch" in ctl(short_home, "inbox").stdout

    # The cause fixed: the batch runs through and the failure goes.
    notes.rmdir()
    result = daemon.call("consolidation.run", force=True)
    assert result["notes"] == 1
    assert failure(daemon) is None
    assert daemon.call("inbox.list")["notes"] == []
    assert not any(w["file"] == "notes/inbox" for w in daemon.call("status")["warnings"])
