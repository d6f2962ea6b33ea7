"""Clients keep reaching the running daemon after `config set server.socket` (applied at the
next start): the daemon records the socket it bound in engine/minionsd.bound."""

from __future__ import annotations

import json
import os
import signal
import socket

from tests.conftest import wait_for
from tests.integration.test_cli import clean_env, ok, run_ctl


def test_config_set_socket_keeps_clients_on_the_running_daemon(daemon, short_home):
    env = clean_env(MINIONS_HOME=str(daemon.home))
    ctl = lambda *args: run_ctl(*args, env=env)  # noqa: E731
    other = short_home.parent / "other.sock"
    out = ok(ctl("config", "set", "server.socket", str(other)))
    assert "takes effect after a restart" in out
    # The daemon still listens where it bound; every client still finds it there.
    status = json.loads(ok(ctl("status", "--json")))
    assert status["socket"] == str(daemon.socket)
    ok(ctl("note", "still reachable after the socket change", "--title", "socket change"))
    from minionsd.client import Client
    with Client.for_home(daemon.home) as client:
        assert client.call("config.get", {"key": "server.socket"}) == {"value": str(other)}
    record = daemon.home / "engine" / "minionsd.bound"
    assert record.read_text().split("\n")[:2] == [str(daemon.proc.pid), str(daemon.socket)]

    # Stopped: the record is gone and clients look where the config says.
    assert daemon.stop() == 0
    assert not record.exists()
    down = ctl("status")
    assert down.returncode == 3 and str(other) in down.stderr, down.stderr

    # Restarted: the daemon binds the new path and clients follow it.
    daemon.spawn()
    wait_for(lambda: ctl("status").returncode == 0, timeout=60, what=daemon.log())
    assert json.loads(ok(ctl("status", "--json")))["socket"] == str(other)
    # A record left by a dead daemon is ignored: clients go by config.toml.
    assert daemon.stop(signal.SIGKILL) != 0
    assert record.exists()
    down = ctl("status")
    assert down.returncode == 3 and str(other) in down.stderr, down.stderr


def test_a_record_naming_a_dead_pid_is_ignored(tmp_path):
    from minionsd.client import socket_for_home

    engine = tmp_path / "engine"
    engine.mkdir()
    (engine / "minionsd.bound").write_text("999999999\n/nowhere/x.sock\n")
    assert socket_for_home(tmp_path) == engine / "minionsd.sock"
    (engine / "minionsd.bound").write_text(f"{os.getpid()}\n/somewhere/x.sock\n")
    assert socket_for_home(tmp_path) == engine / "minionsd.sock"  # no such socket
    live = tmp_path / "live.sock"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(live))
        (engine / "minionsd.bound").write_text(f"{os.getpid()}\n{live}\n")
        assert socket_for_home(tmp_path) == live
    (engine / "minionsd.bound").write_text("garbage")
    assert socket_for_home(tmp_path) == engine / "minionsd.sock"


def test_a_gateway_follows_the_daemon_to_its_new_socket(daemon, short_home):
    from tests.gateway_harness import GatewayProcess, call_rpc, make_token

    token = make_token(daemon, "boot", "boot-bot", "read")
    gateway = GatewayProcess(daemon).start()
    try:
        assert "result" in call_rpc(gateway, token, "status")
        other = short_home.parent / "moved.sock"
        daemon.call("config.set", key="server.socket", value=str(other))
        assert call_rpc(gateway, token, "status")["result"]["socket"] == str(daemon.socket)
        assert daemon.stop() == 0
        daemon.spawn()
        env = clean_env(MINIONS_HOME=str(daemon.home))
        wait_for(lambda: run_ctl("status", env=env).returncode == 0, timeout=60,
                 what=daemon.log())
        assert call_rpc(gateway, token, "status")["result"]["socket"] == str(other)
    finally:
        gateway.stop()
