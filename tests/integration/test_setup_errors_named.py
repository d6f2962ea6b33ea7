"""Set-up mistakes are named where they are made: `token create --expires 0`, `init` on a home
whose config.toml the daemon would refuse, and a `server.socket` the daemon cannot listen on
(minionsctl and minionsd run as subprocesses)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.integration.test_cli import clean_env, run_ctl


@pytest.mark.parametrize("days", ["0", "-1", "4000", "nan"])
def test_token_create_names_expires_and_the_range_it_takes(short_home, days):
    done = run_ctl("token", "create", "ci", "--agent", "ripley", "--scope", "read",
                   f"--expires={days}", env=clean_env(MINIONS_HOME=str(short_home)))
    assert done.returncode == 2, done
    assert "--expires must be a number of days more than 0 and at most 3650" in done.stderr


@pytest.mark.parametrize(("text", "named"), [
    ("[engine\n", "not valid TOML"),
    ("[engine]\ninbox_consolidate_treshold = 3\n", "inbox_consolidate_threshold"),
])
def test_init_says_a_kept_config_is_not_valid(short_home, text, named):
    short_home.mkdir(parents=True)
    (short_home / "config.toml").write_text(text)
    done = run_ctl("--home", str(short_home), "init", env=clean_env())
    assert done.returncode == 1, done
    assert "config.toml kept there is not valid" in done.stderr and named in done.stderr
    assert (short_home / "config.toml").read_text() == text  # kept as it was
    assert (short_home / "notes" / "inbox").is_dir()  # the layout is made all the same


def test_an_unusable_server_socket_is_named_at_start(short_home):
    short_home.mkdir(parents=True)
    (short_home / "config.toml").write_text('[server]\nsocket = "/proc/nope/x.sock"\n')
    done = subprocess.run([sys.executable, "-m", "minionsd.daemon", "--home", str(short_home)],
                          env=clean_env(), cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    line = next(x for x in done.stderr.splitlines() if x.startswith("minionsd: cannot start"))
    assert "server.socket" in line and "/proc/nope/x.sock" in line
