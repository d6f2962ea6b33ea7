"""The gateway over plain HTTP (SPEC §5.2): POST /rpc with a real gateway process in front of a
real daemon, every refusal path, identity that cannot be spoofed, /healthz, /metrics."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, DaemonProcess, wait_for
from tests.gateway_harness import (
    GatewayProcess,
    call_rpc,
    daemon_and_gateway,
    gateway_with,
    make_token,
)


class Env:
    def __init__(self, daemon: DaemonProcess, gateway: GatewayProcess) -> None:
        self.daemon = daemon
        self.gateway = gateway
        self.read = make_token(daemon, "reader", "reader-bot", "read")
        self.write = make_token(daemon, "writer", "writer-bot", "write")
        self.admin = make_token(daemon, "admin", "admin-bot", "admin")
        self.bound = make_token(daemon, "bound", "pay-bot", "write", project="payments")


@pytest.fixture(scope="module")
def env() -> Iterator[Env]:
    with daemon_and_gateway("mg-") as (daemon, gateway):
        yield Env(daemon, gateway)


def rpc(method: str, **params: object) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}


# --- tokens: 401 ---------------------------------------------------------------------------

def test_no_token_is_401_with_the_bearer_challenge(env):
    for path in ("/rpc", "/metrics"):
        status, headers, body = (env.gateway.rpc(None, rpc("status")) if path == "/rpc"
                                 else _get(env.gateway, path, None))
        assert status == 401, path
        assert headers["www-authenticate"] == 'Bearer error="invalid_token"'
        assert body["error"]["reason"] == "missing"


def test_unknown_and_malformed_tokens_are_401(env):
    unknown = "mnt_" + "A" * 43
    for token, reason in ((unknown, "unknown"), ("hunter2", "malformed")):
        status, headers, body = env.gateway.rpc(token, rpc("status"))
        assert (status, body["error"]["reason"]) == (401, reason)
        assert headers["www-authenticate"] == 'Bearer error="invalid_token"'
        assert token not in str(body)


def test_a_revoked_token_is_refused_once_the_cache_lapses(env):
    token = make_token(env.daemon, "short-lived", "temp-bot", "read")
    assert call_rpc(env.gateway, token, "status")["result"]["version"]
    env.daemon.call("token.revoke", name="short-lived")
    # The gateway's cache holds an answer at most 5 s (tests/unit/test_gateway_auth.py
    # checks that bound with a fake clock); here: refused without restarting anything.
    wait_for(lambda: env.gateway.rpc(token, rpc("status"))[0] == 401, timeout=15,
             what="the revoked token to be refused")
    assert env.gateway.rpc(token, rpc("status"))[2]["error"]["reason"] == "revoked"


def test_an_expired_token_is_401(env):
    token = make_token(env.daemon, "expiring", "temp-bot", "read", expires_days=0.00002)
    wait_for(lambda: env.gateway.rpc(token, rpc("status"))[0] == 401, timeout=15,
             what="the token to expire")
    assert env.gateway.rpc(token, rpc("status"))[2]["error"]["reason"] == "expired"


# --- scopes: -32004 ------------------------------------------------------------------------

def test_a_method_outside_the_scopes_is_forbidden_naming_the_scope(env):
    reply = call_rpc(env.gateway, env.read, "inbox.submit", body="hi", author="x")
    assert reply["error"]["code"] == -32004 and reply["error"]["message"] == "forbidden"
    assert reply["error"]["data"]["scope"] == "write"
    assert "'write' scope" in reply["error"]["data"]["detail"]
    reply = call_rpc(env.gateway, env.write, "memory.pin", id="M-x")
    assert reply["error"]["data"]["scope"] == "admin"
    assert call_rpc(env.gateway, env.admin, "config.get", key="engine.memory_retrieval_top_k"
                    )["result"] == {"value": 8}


def test_token_methods_are_never_served_over_http(env):
    for method in ("token.create", "token.list", "token.revoke", "token.verify"):
        params = {"name": "x", "agent": "y", "scopes": "admin", "token": env.admin}
        reply = env.gateway.rpc(env.admin, rpc(method, **params))[2]
        assert reply["error"]["code"] == -32004, method
        assert "socket only" in reply["error"]["data"]["detail"]


def test_an_unknown_method_is_method_not_found_for_every_scope(env):
    for token in (env.read, env.write, env.admin):
        reply = call_rpc(env.gateway, token, "bogus.method.0")
        assert reply["error"]["code"] == -32601, reply
        assert reply["error"]["data"]["detail"] == "no method named 'bogus.method.0'"
    batch = [rpc("bogus.method.1"), {**rpc("status"), "id": 8}]
    replies = {r["id"]: r for r in env.gateway.rpc(env.read, batch)[2]}
    assert replies[7]["error"]["code"] == -32601 and "result" in replies[8]


def test_a_read_token_cannot_write_through_a_batch(env):
    before = env.daemon.call("inbox.list")["notes"]
    batch = [rpc("inbox.submit", body="sneaky note", author="writer-bot"),
             {"jsonrpc": "2.0", "method": "inbox.submit", "params": {"body": "n2",
                                                                      "author": "z"}},
             rpc("memory.add", body="b", type="semantic", scope="global", trust="human",
                 source="x"),
             {"jsonrpc": "2.0", "id": 9, "method": "status"}]
    status, _, replies = env.gateway.rpc(env.read, batch)
    assert status == 200
    assert [r.get("error", {}).get("code") for r in replies] == [-32004, -32004, None]
    assert replies[2]["id"] == 9 and "version" in replies[2]["result"]
    assert env.daemon.call("inbox.list")["notes"] == before


def test_batches_and_notifications(env):
    status, _, replies = env.gateway.rpc(env.read, [rpc("pinned.get"), rpc("nope.nothing"),
                                                    "not a request"])
    assert status == 200
    assert "code_units" in replies[0]["result"]
    assert replies[1]["error"]["code"] == -32601  # no such method, whatever the scopes
    assert replies[2]["error"]["code"] == -32600
    status, _, body = env.gateway.rpc(env.read, {"jsonrpc": "2.0", "method": "status"})
    assert (status, body) == (204, None)
    status, _, body = env.gateway.rpc(env.read, b"{not json")
    assert status == 200 and body["error"]["code"] == -32700
    status, _, body = env.gateway.rpc(env.read, b"[" * 200_000 + b"]" * 200_000)
    assert status == 200 and body["error"]["code"] == -32600


# --- identity ------------------------------------------------------------------------------

def test_identity_comes_from_the_token_never_the_request(env):
    reply = call_rpc(env.gateway, env.write, "inbox.submit", body="The export job moved.",
                     author="root", title="Export job")
    assert reply["data"] == {"author": "writer-bot"}
    note = env.daemon.home / reply["result"]["path"]
    assert "author: writer-bot" in note.read_text()
    reply = call_rpc(env.gateway, env.admin, "memory.add", body="Deploys freeze on Fridays.",
                     type="semantic", scope="global", trust="human", source="spoof",
                     author="alice", agent="alice")
    record = env.daemon.call("memory.get", id=reply["result"]["id"])
    assert (record["trust"], record["author"], record["agent"]) == (
        "agent", "admin-bot", "admin-bot")
    # a knowledge entry made over the socket is human-trust; made with a token, it is not
    reply = call_rpc(env.gateway, env.admin, "knowledge.create", category="conventions",
                     title="Retry policy", body="Retry three times.", author="root")
    record = env.daemon.call("memory.get", id=reply["result"]["record_id"])
    assert (record["trust"], record["author"]) == ("agent", "admin-bot")


def test_a_project_bound_token_writes_and_recalls_in_its_project_only(env):
    reply = call_rpc(env.gateway, env.bound, "inbox.submit", body="Ledger rounding note.",
                     project="billing")
    assert "project: payments" in (env.daemon.home / reply["result"]["path"]).read_text()
    reply = call_rpc(env.gateway, env.bound, "memory.retrieve", project="billing",
                     agent="someone-else", task={"id": "T-1", "title": "ledger rounding"})
    assert "result" in reply
    rows = env.daemon.call("telemetry.retrievals", limit=1)["rows"]
    assert (rows[0]["project"], rows[0]["agent"]) == ("payments", "pay-bot")

    def add(scope: str) -> str:
        return env.daemon.call("memory.add", body=f"A fact in {scope}.", type="semantic",
                               scope=scope, trust="agent", source="test")["id"]

    other, shared, own = add("project:billing"), add("global"), add("project:payments")
    reply = call_rpc(env.gateway, env.bound, "memory.get", id=other)
    assert reply["error"]["code"] == -32001  # another project's record reads as missing
    assert call_rpc(env.gateway, env.bound, "memory.get", id=shared)["result"]["id"] == shared
    for target in (other, shared):
        _, _, replies = env.gateway.rpc(env.bound, [
            rpc("memory.retract", id=target, reason="not ours"),
            rpc("memory.supersede", id=own, by=other)])
        assert replies[0]["error"]["code"] in (-32001, -32004)
        assert replies[1]["error"]["code"] == -32001
    assert env.daemon.call("memory.get", id=shared)["status"] == "active"
    reply = call_rpc(env.gateway, env.bound, "memory.retract", id=own, reason="outdated")
    assert reply["result"]["status"] == "retracted"


def test_a_project_bound_token_reads_no_other_projects_knowledge_or_inbox(env):
    made = {project: env.daemon.call("knowledge.create", category="project-notes",
                                     title=f"Rounding in {project or 'every project'}",
                                     body=f"How {project} rounds.", author="alice",
                                     project=project)["path"]
            for project in ("billing", "payments", None)}
    listed = call_rpc(env.gateway, env.bound, "knowledge.list", project="billing")
    paths = {entry["path"] for entry in listed["result"]["entries"]}
    assert {made["payments"], made[None]} <= paths and made["billing"] not in paths
    assert {e["project"] for e in listed["result"]["entries"]} <= {None, "payments"}
    reply = call_rpc(env.gateway, env.bound, "knowledge.get", path=made["billing"])
    assert reply["error"]["code"] == -32001
    assert "rounds" in call_rpc(env.gateway, env.bound, "knowledge.get",
                                path=made["payments"])["result"]["body"]
    # The inbox too: another project's pending notes are not listed, quarantine is refused.
    for project in ("billing", "payments"):
        env.daemon.call("inbox.submit", body=f"{project} note", author="alice",
                        title=f"pending in {project}", project=project, hold=True)
    names = [n["name"] for n in call_rpc(env.gateway, env.bound, "inbox.list")["result"]["notes"]]
    assert any("payments" in n for n in names) and not any("billing" in n for n in names)
    reply = call_rpc(env.gateway, env.bound, "inbox.list", quarantined=True)
    assert reply["error"]["code"] == -32004
    assert len(env.daemon.call("inbox.list")["notes"]) >= 2
    # The same entries on the socket and through an unbound token: all three.
    assert {e["path"] for e in env.daemon.call("knowledge.list")["entries"]} >= set(
        made.values())


# --- browser and network safety ------------------------------------------------------------

def test_a_foreign_host_is_421_and_a_foreign_origin_403(env):
    status, _, body = env.gateway.rpc(env.read, rpc("status"), {"Host": "evil.example:80"})
    assert (status, body["error"]["reason"]) == (421, "host")
    status, _, body = env.gateway.rpc(env.read, rpc("status"),
                                      {"Origin": "https://evil.example"})
    assert (status, body["error"]["reason"]) == (403, "origin")
    status, _, _ = env.gateway.rpc(env.read, rpc("status"),
                                   {"Origin": f"http://127.0.0.1:{env.gateway.port}"})
    assert status == 200
    # /healthz is open without a token, but not to a rebinding page
    assert _get(env.gateway, "/healthz", None, {"Host": "evil.example"})[0] == 421


def _send_big(port: int, token: str, framing: bytes, body: list[bytes]) -> bytes:
    """Send a request whose body is over the limit and read the answer; the gateway may
    answer and close before all of the body is sent (a client then sees a broken pipe)."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(b"POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
                     + token.encode() + b"\r\n" + framing + b"\r\n")
        try:
            for piece in body:
                sock.sendall(piece)
        except OSError:
            pass
        answer = b""
        while b"}}" not in answer:  # the headers and the JSON body may come in two reads
            piece = sock.recv(4096)
            if not piece:
                break
            answer += piece
        return answer


def test_a_body_over_the_limit_is_413(env):
    chunk = b"a" * 65536
    # refused by its Content-Length; a body that is not far over is read first, so even a
    # client that sends it all (minionsctl --url) reads the answer
    answer = _send_big(env.gateway.port, env.read, b"Content-Length: 1310720\r\n",
                       [chunk] * 20)
    assert answer.startswith(b"HTTP/1.1 413") and b'"reason": "size"' in answer
    status, _, body = env.gateway.rpc(env.read, b"[" + b" " * 1_300_000 + b"]")
    assert (status, body["error"]["reason"]) == (413, "size")
    # without a Content-Length (chunked), counted as it arrives: 17 chunks of 64 KiB are just
    # over the 1 MiB limit (nothing more is sent, so the answer is read, not reset)
    answer = _send_big(env.gateway.port, env.read, b"Transfer-Encoding: chunked\r\n",
                       [f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"] * 17)
    assert answer.startswith(b"HTTP/1.1 413") and b'"reason": "size"' in answer


def test_a_token_in_the_query_string_is_400(env):
    for query in (f"?access_token={env.read}", "?token=x", f"?x={env.read}"):
        status, _, body = _post(env.gateway, "/rpc" + query, env.read)
        assert (status, body["error"]["reason"]) == (400, "query_token"), query
        assert env.read not in str(body)


def test_no_oauth_discovery(env):
    for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-authorization-server",
                 "/.well-known/openid-configuration"):
        assert _get(env.gateway, path, None)[0] == 404


def test_over_the_rate_is_429_with_retry_after(env):
    slow = gateway_with(env.daemon, **{"gateway.rate_per_s": 1, "gateway.rate_burst": 2})
    try:
        statuses = [slow.rpc(env.read, rpc("status")) for _ in range(4)]
        assert [s for s, _, _ in statuses][:2] == [200, 200]
        refused = [(h, b) for s, h, b in statuses if s == 429]
        assert refused, [s for s, _, _ in statuses]
        assert int(refused[0][0]["retry-after"]) >= 1
        assert refused[0][1]["error"]["reason"] == "rate"
        # another token has its own bucket
        assert slow.rpc(env.write, rpc("status"))[0] == 200
        # guessing tokens from one address: 401s, then 429 before the daemon is asked
        guesses = [slow.rpc(f"mnt_{n:043d}", rpc("status"))[0] for n in range(25)]
        assert guesses[0] == 401 and guesses[-1] == 429, guesses
        # ...while a token this gateway already found valid still gets in from that address
        wait_for(lambda: slow.rpc(env.write, rpc("status"))[0] == 200, timeout=5)
        # not behind a proxy, X-Forwarded-For is not believed: no way around the throttle
        spoofed = slow.rpc("mnt_" + "E" * 43, rpc("status"), {"X-Forwarded-For": "10.9.8.7"})
        assert spoofed[0] == 429
    finally:
        slow.stop()


def test_a_slow_client_is_cut_off(env):
    slow = gateway_with(env.daemon, **{"gateway.read_timeout_s": 1})
    try:
        with socket.create_connection(("127.0.0.1", slow.port), timeout=20) as sock:
            sock.sendall(b"POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # headers never end
            assert sock.recv(100) == b""  # closed by the gateway, well before our timeout
        with socket.create_connection(("127.0.0.1", slow.port), timeout=20) as sock:
            sock.sendall(b"POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n"
                         b"Authorization: Bearer " + env.read.encode() + b"\r\n\r\n{")
            answer = sock.recv(200)
            assert answer.startswith(b"HTTP/1.1 408"), answer
    finally:
        slow.stop()


# --- healthz, metrics, logs ----------------------------------------------------------------

def test_healthz_and_metrics(env):
    status, _, body = _get(env.gateway, "/healthz", None)
    assert (status, body) == (200, {"ok": True})
    call_rpc(env.gateway, env.read, "status")
    env.gateway.rpc(env.read, rpc("status"), {"Host": "evil.example"})  # a refusal to count
    status, headers, text = _get(env.gateway, "/metrics", env.read, raw=True)
    assert status == 200 and headers["content-type"].startswith("text/plain")
    assert 'minions_gateway_requests_total{endpoint="rpc",method="status",status="200"}' in text
    assert "minions_gateway_request_seconds_bucket" in text
    assert 'minions_gateway_refused_total{reason="host"}' in text
    assert 'minions_daemon_status{counter="records_active"}' in text


def test_tokens_never_reach_a_log_and_the_gateway_opens_no_database(env):
    call_rpc(env.gateway, env.write, "inbox.submit", body="log check")
    env.gateway.rpc("mnt_" + "B" * 43, rpc("status"))
    def last_used() -> str | None:  # the daemon notes a use without waiting for the write
        rows = env.daemon.call("token.list")["tokens"]
        return next(t["last_used"] for t in rows if t["name"] == "writer")

    wait_for(last_used, what="token list to show the writer token's last use")
    logs = env.gateway.log() + env.daemon.log()
    for token in (env.read, env.write, env.admin, env.bound, "mnt_" + "B" * 43):
        assert token not in logs
    assert env.gateway.proc is not None
    fds = Path(f"/proc/{env.gateway.proc.pid}/fd")
    if fds.exists():
        targets = [str(p.readlink()) for p in fds.iterdir() if p.is_symlink()]
        assert not any("state.db" in t for t in targets), targets


def test_serve_refuses_to_start_without_tls_off_loopback_or_without_tokens(env, short_home):
    def serve(home: Path, listen: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "minionsd.cli", "--home", str(home),
                               "serve", "--listen", listen], capture_output=True, text=True,
                              timeout=60, cwd=REPO)

    proc = serve(env.daemon.home, "0.0.0.0:1")
    assert proc.returncode == 2 and "without TLS" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    proc = serve(env.daemon.home, "127.0.0.1:99999")
    assert proc.returncode == 2 and "port 99999 is out of range" in proc.stderr, proc.stderr
    proc = serve(env.daemon.home, f"127.0.0.1:{env.gateway.port}")  # the port is taken
    assert proc.returncode == 1 and "could not listen" in proc.stderr
    assert "listening on" not in proc.stderr
    fresh = DaemonProcess(short_home).start()
    try:
        proc = serve(short_home, "127.0.0.1:1")
        assert proc.returncode == 2 and "no usable token" in proc.stderr
        assert "minionsctl token create" in proc.stderr and "minionsctl web" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    finally:
        fresh.kill()


def _request(gateway: GatewayProcess, method: str, path: str, token: str | None,
             headers: dict[str, str] | None = None, data: bytes | None = None,
             raw: bool = False) -> tuple[int, dict[str, str], object]:
    import json
    import urllib.error
    import urllib.request

    request = urllib.request.Request(gateway.url + path, method=method, data=data,
                                     headers=headers or {})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, body, got = response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as exc:
        status, body, got = exc.code, exc.read(), dict(exc.headers)
        exc.close()
    text = body.decode()
    return status, {k.lower(): v for k, v in got.items()}, (text if raw else json.loads(text))


def _get(gateway, path, token, headers=None, raw=False):
    return _request(gateway, "GET", path, token, headers, raw=raw)


def _post(gateway, path, token):
    return _request(gateway, "POST", path, token, {"Content-Type": "application/json"},
                    b'{"jsonrpc":"2.0","id":1,"method":"status"}')
