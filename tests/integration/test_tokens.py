"""Gateway tokens on the daemon's side (SPEC §5.2): `minionsctl token create|list|revoke`, the
token shown once and kept as its SHA-256 digest only, token.verify's answers."""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import subprocess
import sys

from tests.conftest import REPO


def ctl(daemon, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINIONS_")}
    return subprocess.run([sys.executable, "-m", "minionsd.cli", "--home", str(daemon.home),
                           *args], capture_output=True, text=True, timeout=60, env=env,
                          cwd=REPO)


def test_token_create_list_revoke(daemon):
    made = ctl(daemon, "token", "create", "ci-runner", "--agent", "ci", "--scope", "write",
               "--project", "payments", "--expires", "30")
    assert made.returncode == 0, made.stderr
    token = made.stdout.splitlines()[0]
    assert re.fullmatch(r"mnt_[A-Za-z0-9_-]{43}", token)
    assert "only time it is shown" in made.stdout
    listed = ctl(daemon, "token", "list")
    assert "ci-runner" in listed.stdout and "read,write" in listed.stdout
    assert token not in listed.stdout
    as_json = json.loads(ctl(daemon, "--json", "token", "list").stdout)["tokens"][0]
    assert set(as_json) == {"name", "agent", "scopes", "project", "created_at", "expires_at",
                            "last_used", "revoked_at"}
    # only the digest is at rest
    with sqlite3.connect(daemon.home / "engine" / "state.db") as db:
        rows = db.execute("SELECT name, digest FROM gateway_tokens").fetchall()
    assert rows == [("ci-runner", hashlib.sha256(token.encode()).hexdigest())]
    assert token.encode() not in (daemon.home / "engine" / "state.db").read_bytes()

    answer = daemon.call("token.verify", token=token)
    assert answer | {"expires_at": None} == {"valid": True, "name": "ci-runner", "agent": "ci",
                                              "scopes": ["read", "write"],
                                              "project": "payments", "expires_at": None}
    revoked = ctl(daemon, "token", "revoke", "ci-runner")
    assert revoked.returncode == 0 and "revoked" in revoked.stdout
    assert daemon.call("token.verify", token=token) == {"valid": False, "reason": "revoked"}
    assert daemon.call("token.verify", token="nonsense") == {"valid": False,
                                                             "reason": "malformed"}


def test_token_refusals(daemon):
    again = [ctl(daemon, "token", "create", "dup", "--agent", "bot", "--scope", "read")
             for _ in range(2)]
    assert again[0].returncode == 0
    assert again[1].returncode == 1 and "exists already" in again[1].stderr
    human = ctl(daemon, "token", "create", "h", "--agent", "engine", "--scope", "read")
    assert human.returncode == 1 and "reserved" in human.stderr
    bad = ctl(daemon, "token", "create", "s", "--agent", "bot", "--scope", "root")
    assert bad.returncode == 2
    missing = ctl(daemon, "token", "revoke", "nobody")
    assert missing.returncode == 1 and "no token named" in missing.stderr
