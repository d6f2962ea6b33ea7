"""The foundation methods end to end: a real daemon process, its real socket."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading

import pytest

from minionsd.client import Client, RpcError


def raw_exchange(daemon, payload: bytes) -> list[dict]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(daemon.socket))
        sock.sendall(payload)
        sock.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def add(client: Client, body: str, **extra) -> str:
    params = {"body": body, "type": "semantic", "scope": "global", "trust": "human",
              "source": "test"} | extra
    return client.call("memory.add", params)["id"]


def test_status_shape(daemon):
    status = daemon.call("status")
    assert status["pid"] == daemon.proc.pid
    assert status["home"] == str(daemon.home)
    assert status["socket"] == str(daemon.socket)
    assert set(status["inbox"]) >= {"pending", "eligible", "held"}
    assert set(status["consolidation"]) >= {"last_at", "last_mode", "batches", "circuit_breaks"}
    assert status["records"] == {"active": 0, "superseded": 0, "retracted": 0, "expired": 0}
    assert status["retrieval"] == {"enabled": True, "shadow": False}
    assert status["llm"] == {"configured": False, "last_failure": None, "last_ok_at": None}
    assert status["config"]["last_reload_failure"] is None
    assert isinstance(status["jobs"], list)


def test_socket_is_private(daemon):
    assert stat.S_IMODE(os.stat(daemon.socket).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(daemon.home / "engine").st_mode) == 0o700


def test_add_get_search_roundtrip(daemon):
    with daemon.client() as client:
        rid = add(client, "The TokenRefresher retries on ERR_CONN_RESET in "
                          "src/auth/token_refresh.py", title="Token refresh retries",
                  paths=["src/auth/token_refresh.py"], tags=["auth"])
        add(client, "Unrelated note about the build cache")
        record = client.call("memory.get", {"id": rid})
        assert record["id"] == rid and record["status"] == "active"
        assert record["paths"] == ["src/auth/token_refresh.py"]
        assert record["created_at"].endswith("Z")
        found = client.call("memory.search", {"query": "token refresh"})
        assert found["total"] >= 1
        assert found["records"][0]["id"] == rid
        assert "snippet" in found["records"][0] and "rank" in found["records"][0]
        for query in ['"unbalanced', "NEAR(", "AND OR NOT", "title:x", "*", "", "c++ -x"]:
            result = client.call("memory.search", {"query": query})
            assert isinstance(result["total"], int)


def test_search_total_counts_before_limit(daemon):
    with daemon.client() as client:
        for i in range(5):
            add(client, f"cache eviction note number {i}")
        result = client.call("memory.search", {"query": "eviction", "limit": 2})
        assert len(result["records"]) == 2 and result["total"] == 5


def test_lifecycle_and_invalid_transitions(daemon):
    with daemon.client() as client:
        old = add(client, "use library A for parsing", trust="agent", importance=0.2)
        new = add(client, "use library B for parsing")
        with pytest.raises(RpcError) as err:
            client.call("memory.supersede", {"id": old, "by": "M-missing"})
        assert err.value.code == -32001 and "M-missing" in err.value.detail
        superseded = client.call("memory.supersede", {"id": old, "by": new})
        assert superseded["status"] == "superseded" and superseded["superseded_by"] == new
        with pytest.raises(RpcError) as err:
            client.call("memory.supersede", {"id": old, "by": new})
        assert err.value.code == -32003
        searched = client.call("memory.search", {"query": "parsing"})
        assert [r["id"] for r in searched["records"]] == [new]
        searched = client.call("memory.search", {"query": "parsing",
                                                 "status": ["superseded"]})
        assert [r["id"] for r in searched["records"]] == [old]
        pinned = client.call("memory.pin", {"id": old})
        assert pinned["status"] == "active" and pinned["pinned"] is True
        assert pinned["trust"] == "system"
        assert pinned["importance"] >= 0.9 and pinned["confidence"] >= 0.9
        retracted = client.call("memory.retract", {"id": new, "reason": "wrong"})
        assert retracted["status"] == "retracted" and retracted["retracted_reason"] == "wrong"
        with pytest.raises(RpcError) as err:
            client.call("memory.retract", {"id": new, "reason": "again"})
        assert err.value.code == -32003 and "already retracted" in err.value.detail
        expired = client.call("memory.expire", {"id": old})
        assert expired["status"] == "expired"
        with pytest.raises(RpcError) as err:
            client.call("memory.get", {"id": "M-nope"})
        assert err.value.code == -32001
        counts = client.call("status")["records"]
        assert counts == {"active": 0, "superseded": 0, "retracted": 1, "expired": 1}


def test_expiry_applies_at_read_time(daemon):
    with daemon.client() as client:
        rid = add(client, "temporary workaround for flaky deploys",
                  expires_at="2001-01-01T00:00:00Z")
        assert client.call("memory.get", {"id": rid})["status"] == "expired"
        assert client.call("memory.search", {"query": "workaround"})["total"] == 0


@pytest.mark.parametrize(("params", "param"), [
    ({"type": "semantic", "scope": "global", "trust": "human", "source": "s"}, "body"),
    ({"body": "x", "type": "bogus", "scope": "global", "trust": "human", "source": "s"},
     "type"),
    ({"body": "x", "type": "semantic", "scope": "planet:x", "trust": "human", "source": "s"},
     "scope"),
    ({"body": "x", "type": "semantic", "scope": "global", "trust": "human", "source": "s",
      "importance": 2}, "importance"),
    ({"body": 5, "type": "semantic", "scope": "global", "trust": "human", "source": "s"},
     "body"),
    ({"body": "x", "type": "semantic", "scope": "global", "trust": "human", "source": "s",
      "colour": "red"}, "colour"),
])
def test_invalid_params_name_the_param(daemon, params, param):
    with daemon.client() as client, pytest.raises(RpcError) as err:
        client.call("memory.add", params)
    assert err.value.code == -32602
    assert param in err.value.detail


def test_jsonrpc_envelope_errors(daemon):
    replies = raw_exchange(daemon, b"{not json\n"
                                   b"[]\n"
                                   b'{"jsonrpc":"1.0","method":"status","id":1}\n'
                                   b'{"jsonrpc":"2.0","method":"nope","id":2}\n'
                                   b'{"jsonrpc":"2.0","method":"memory.get","params":{},"id":3}\n'
                                   b'{"jsonrpc":"2.0","method":"status"}\n'
                                   b'[{"jsonrpc":"2.0","method":"status","id":"a"},5,'
                                   b'{"jsonrpc":"2.0","method":"status"}]\n'
                                   b'[{"jsonrpc":"2.0","method":"status"}]\n')
    assert replies[0]["error"]["code"] == -32700 and replies[0]["id"] is None
    assert replies[1]["error"]["code"] == -32600  # empty batch: one error, not an array
    assert replies[2]["error"]["code"] == -32600 and replies[2]["id"] == 1
    assert replies[3]["error"]["code"] == -32601
    assert replies[4]["error"]["code"] == -32602 and "id" in replies[4]["error"]["data"]["detail"]
    batch = replies[5]
    assert isinstance(batch, list) and len(batch) == 2
    assert batch[0]["id"] == "a" and "result" in batch[0]
    assert batch[1]["error"]["code"] == -32600
    assert len(replies) == 6  # the notification and the all-notification batch get nothing
    for reply in replies[:5]:
        assert "Traceback" not in json.dumps(reply)


def test_oversized_request_gets_error_then_close(make_daemon, short_home):
    short_home.mkdir(parents=True)
    (short_home / "config.toml").write_text("[server]\nmax_request_bytes = 2048\n")
    daemon = make_daemon()
    big = json.dumps({"jsonrpc": "2.0", "method": "status", "id": 1,
                      "params": {"pad": "x" * 5000}}).encode() + b"\n"
    replies = raw_exchange(daemon, big + b'{"jsonrpc":"2.0","method":"status","id":2}\n')
    assert len(replies) == 1 and replies[0]["error"]["code"] == -32600
    assert "max_request_bytes" in replies[0]["error"]["data"]["detail"]
    assert daemon.call("status")["pid"] == daemon.proc.pid  # still serving


def test_many_concurrent_clients(daemon):
    errors: list[Exception] = []

    def worker(n: int) -> None:
        try:
            with daemon.client() as client:
                for i in range(5):
                    add(client, f"concurrent note {n}-{i} about queue backpressure")
                    client.call("memory.search", {"query": "backpressure"})
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert daemon.call("memory.search", query="backpressure")["total"] == 200


def test_config_get_set(daemon):
    with daemon.client() as client:
        assert client.call("config.get", {"key": "engine.memory_retrieval_top_k"}) == {"value": 8}
        assert client.call("config.get", {"key": "server.socket"}) == {"value": ""}
        result = client.call("config.set", {"key": "engine.memory_retrieval_top_k",
                                            "value": 4})
        assert result["key"] == "engine.memory_retrieval_top_k" and result["value"] == 4
        assert client.call("config.get", {"key": "engine.memory_retrieval_top_k"}) == {"value": 4}
        whole = client.call("config.get")["value"]
        assert whole["engine"]["memory_retrieval_top_k"] == 4
        with pytest.raises(RpcError) as err:
            client.call("config.set", {"key": "engine.memory_retreival_top_k", "value": 1})
        assert err.value.code == -32602 and "engine.memory_retreival_top_k" in err.value.detail
        assert "did you mean" in err.value.detail
        with pytest.raises(RpcError) as err:
            client.call("config.set", {"key": "engine.memory_retrieval_top_k", "value": "9"})
        assert err.value.code == -32602 and "engine.memory_retrieval_top_k" in err.value.detail
    assert "memory_retrieval_top_k = 4" in (daemon.home / "config.toml").read_text()


def test_second_daemon_refuses_and_sigterm_exits_zero(daemon, make_daemon):
    second = make_daemon(home=daemon.home, start=False)
    proc = second.spawn()
    assert proc.wait(20) != 0
    assert f"pid {daemon.proc.pid}" in second.log()
    assert daemon.stop() == 0
    assert not daemon.socket.exists()
    assert not (daemon.home / "engine" / "minionsd.pid").exists()


def test_stale_pid_and_socket_are_taken_over(make_daemon, short_home):
    daemon = make_daemon()
    daemon.kill()  # SIGKILL leaves pid file and socket behind
    assert daemon.socket.exists()
    again = make_daemon(home=short_home)
    assert again.call("status")["pid"] == again.proc.pid


def test_bad_config_exits_2_naming_the_key(make_daemon, short_home):
    short_home.mkdir(parents=True)
    (short_home / "config.toml").write_text("[engine]\ninbox_consolidate_treshold = 3\n")
    daemon = make_daemon(start=False)
    proc = daemon.spawn()
    assert proc.wait(20) == 2
    assert "engine.inbox_consolidate_treshold" in daemon.log()
    assert "did you mean" in daemon.log()


def test_newer_database_is_refused(make_daemon, short_home):
    import sqlite3

    (short_home / "engine").mkdir(parents=True)
    conn = sqlite3.connect(short_home / "engine" / "state.db")
    conn.execute("PRAGMA user_version = 999")
    conn.close()
    daemon = make_daemon(start=False)
    assert daemon.spawn().wait(20) != 0
    assert "newer" in daemon.log()


def test_sighup_reloads_config(daemon):
    import signal

    (daemon.home / "config.toml").write_text("[engine]\nmemory_retrieval_top_k = 3\n")
    daemon.proc.send_signal(signal.SIGHUP)
    from tests.conftest import wait_for

    wait_for(lambda: daemon.call("config.get", key="engine.memory_retrieval_top_k")["value"]
             == 3, what="config reload")


def test_cli_against_daemon(daemon):
    env = dict(os.environ, MINIONS_HOME=str(daemon.home))

    def ctl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "minionsd.cli", *args], env=env,
                              capture_output=True, text=True, timeout=30)

    assert ctl("status").returncode == 0
    with daemon.client() as client:
        rid = add(client, "deploys need the VPN on")
    shown = ctl("show", rid)
    assert shown.returncode == 0 and "deploys need the VPN on" in shown.stdout
    as_json = ctl("--json", "search", "VPN")
    assert json.loads(as_json.stdout)["total"] == 1
    assert json.loads(ctl("search", "VPN", "--json").stdout)["total"] == 1
    assert ctl("show", "M-missing").returncode == 1
    assert ctl("bogus-command").returncode == 2
    assert ctl("config", "set", "engine.memory_retrieval_top_k", "6").returncode == 0
    assert ctl("config", "get", "engine.memory_retrieval_top_k").stdout.strip() == "6"
    assert ctl("retract", rid, "--reason", "obsolete").returncode == 0
    daemon.stop()
    down = ctl("status")
    assert down.returncode == 3 and "minionsd --home" in down.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to connect as another uid")
def test_other_uid_is_refused(make_daemon, tmp_path_factory):
    import tempfile

    sock_dir = tempfile.mkdtemp(prefix="ms-", dir="/tmp")
    os.chmod(sock_dir, 0o777)
    sock_path = f"{sock_dir}/s.sock"
    daemon = make_daemon(args=[], start=False)
    daemon.home.mkdir(parents=True, exist_ok=True)
    (daemon.home / "config.toml").write_text(f'[server]\nsocket = "{sock_path}"\n')
    daemon.spawn()
    from tests.conftest import wait_for

    wait_for(lambda: os.path.exists(sock_path), what="socket")
    assert stat.S_IMODE(os.stat(sock_path).st_mode) == 0o600
    # Loosen the file mode so only the daemon's own peer-uid check stands in the way.
    os.chmod(sock_path, 0o666)
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        code = 1
        try:
            os.setuid(65534)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(5)
                sock.connect(sock_path)
                try:
                    sock.sendall(b'{"jsonrpc":"2.0","method":"status","id":1}\n')
                    code = 0 if sock.recv(4096) == b"" else 2
                except (ConnectionResetError, BrokenPipeError):
                    code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0  # connection closed without an answer
    with Client(sock_path) as client:
        assert client.call("status")["socket"] == sock_path
