"""`status` tells a configured-but-failing LLM and a refused config reload apart from a
healthy daemon (the JSON fields and one `minionsctl status` line each)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from tests.conftest import REPO, wait_for


def ctl_status(home) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MINIONS_", "ANTHROPIC_"))}
    env["MINIONS_HOME"] = str(home)
    done = subprocess.run([sys.executable, "-m", "minionsd.cli", "status"], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_last_llm_failure_shows_in_status(make_daemon, short_home, fake_anthropic):
    short_home.mkdir(parents=True)
    (short_home / "config.toml").write_text(
        "[engine]\ninbox_settle_ms = 0\nauto_consolidate_memory = false\n"
        f'[llm]\nbase_url = "{fake_anthropic.url}"\ntimeout_s = 2\nmax_retries = 0\n')
    daemon = make_daemon(env={"ANTHROPIC_API_KEY": "test-key"})
    llm = daemon.call("status")["llm"]
    assert llm == {"configured": True, "last_failure": None, "last_ok_at": None}
    assert "last failure" not in ctl_status(short_home)
    fake_anthropic.set_mode("error", status=529)
    daemon.call("inbox.submit", author="dallas", body="first note")
    assert daemon.call("consolidation.run", force=True)["mode"] == "regex"
    failure = daemon.call("status")["llm"]["last_failure"]
    assert failure["purpose"] == "digest" and "529" in failure["reason"] and failure["at"]
    line = next(x for x in ctl_status(short_home).splitlines()
                if x.startswith("  last failure:"))
    assert "529" in line and "(digest)" in line
    fake_anthropic.set_mode("text", text="chatter without any heading, long enough to count")
    daemon.call("inbox.submit", author="dallas", body="second note")
    daemon.call("consolidation.run", force=True)
    assert "unusable answer" in daemon.call("status")["llm"]["last_failure"]["reason"]
    fake_anthropic.set_mode("text", text="### 2026-12-01: Digest\n**By:** Engine\n\n- a fine "
                                         "bullet that is long enough _(dallas)_\n")
    daemon.call("inbox.submit", author="dallas", body="third note")
    assert daemon.call("consolidation.run", force=True)["mode"] == "llm"
    llm = daemon.call("status")["llm"]
    assert llm["last_ok_at"] >= llm["last_failure"]["at"]


def test_refused_config_reload_shows_in_status(make_daemon, short_home):
    short_home.mkdir(parents=True)
    config = short_home / "config.toml"
    config.write_text("[engine]\ninbox_settle_ms = 0\n")
    daemon = make_daemon()
    assert daemon.call("status")["config"]["last_reload_failure"] is None
    config.write_text("[engine]\ninbox_consolidate_treshold = 3\n")
    daemon.proc.send_signal(signal.SIGHUP)
    failure = wait_for(lambda: daemon.call("status")["config"]["last_reload_failure"],
                       what="the refused reload in status")
    assert "inbox_consolidate_treshold" in failure["reason"]
    line = next(x for x in ctl_status(short_home).splitlines()
                if x.startswith("  reload failed:"))
    assert "inbox_consolidate_treshold" in line
    config.write_text("[engine]\ninbox_settle_ms = 10\n")
    daemon.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: daemon.call("status")["config"]["last_reload_at"], what="a good reload")
