"""Pure parts of the gateway: the scope table and identity rewriting (policy.admit), the token
cache's 5-second bound, the rate limiter, start-up refusals, Host/Origin/query checks."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minionsd.gateway.auth import Authenticator, HttpRefusal, RateLimiter
from minionsd.gateway.guard import query_holds_token
from minionsd.gateway.identity import (
    ADMIN_METHODS,
    READ_METHODS,
    SOCKET_ONLY,
    VIEW_METHODS,
    WRITE_METHODS,
    Identity,
    scope_needed,
)
from minionsd.gateway.policy import FORBIDDEN, Forbidden, admit, check_project
from minionsd.gateway.settings import GatewaySettings, host_only
from minionsd.gateway.tokens import CACHE_S, TokenVerifier

READ = Identity("r", "reader-bot", frozenset({"read"}), None)
WRITE = Identity("w", "writer-bot", frozenset({"read", "write"}), None)
ADMIN = Identity("a", "admin-bot", frozenset({"read", "write", "admin"}), "payments")
METHODS = sorted(READ_METHODS | WRITE_METHODS | ADMIN_METHODS | SOCKET_ONLY)
# SPEC §5.1/§5.2: the params that name who writes or who recalls, per method.
IDENTITY_PARAMS = {"inbox.submit": ("author",), "knowledge.create": ("author",),
                   "memory.add": ("author", "agent"), "episode.capture": ("agent",),
                   "memory.retrieve": ("agent",), "prompt.assemble": ("agent",)}
values = st.one_of(st.none(), st.text(max_size=20), st.integers(), st.booleans())


def test_spec_scope_table():
    assert {"status", "memory.get", "memory.search", "memory.retrieve",
                            "prompt.assemble", "knowledge.list", "knowledge.get", "pinned.get",
                            "inbox.list"} == READ_METHODS
    assert {"inbox.submit", "episode.capture", "memory.retract",
                             "memory.supersede"} == WRITE_METHODS
    assert scope_needed("memory.purge") == "admin" and scope_needed("backup.create") == "admin"
    assert scope_needed("token.verify") is None


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(method=st.sampled_from(METHODS),
       params=st.dictionaries(st.sampled_from(["author", "agent", "trust", "project", "scope",
                                               "body", "id"]), values),
       who=st.sampled_from([READ, WRITE, ADMIN]))
def test_admit_never_lets_a_request_choose_its_identity(method, params, who):
    try:
        admitted = admit(method, params, who)
    except Forbidden as exc:
        assert exc.code == FORBIDDEN
        assert method in SOCKET_ONLY or scope_needed(method) not in who.scopes
        return
    assert scope_needed(method) in who.scopes
    out = admitted.params
    for key in IDENTITY_PARAMS.get(method, ()):
        assert out[key] == who.agent  # set even when the request left it out
    if method in ("memory.add", "knowledge.create", "episode.capture", "inbox.submit"):
        assert out["trust"] == "agent"
    if method == "memory.add":
        assert out["author"] == out["agent"] == who.agent
        assert out["scope"] == "project:payments"
    if who.project and method in ("inbox.submit", "memory.retrieve", "prompt.assemble",
                                  "memory.search", "episode.capture"):
        assert out["project"] == who.project
    assert params == dict(params)  # the caller's dict is not modified in place


@pytest.mark.parametrize("method", sorted(VIEW_METHODS))
def test_a_project_bound_token_reads_nothing_that_shows_the_whole_home(method):
    bound = Identity("p", "pay-bot", frozenset({"read"}), "payments")
    with pytest.raises(Forbidden) as refused:
        admit(method, {}, bound)
    assert refused.value.code == FORBIDDEN and "payments" in refused.value.detail
    assert admit(method, {}, READ).params == {}


def test_positional_params_are_refused_through_the_gateway():
    with pytest.raises(Forbidden) as caught:
        admit("memory.get", ["M-1"], READ)
    assert caught.value.code == -32602


class FakeLink:
    def __init__(self) -> None:
        self.answer: dict[str, Any] = {"valid": True, "name": "t", "agent": "bot",
                                       "scopes": ["read"], "project": None, "expires_at": None}
        self.calls = 0

    async def call(self, method: str, params: dict[str, Any],
                   timeout: float | None = None) -> dict[str, Any]:
        assert method == "token.verify"
        self.calls += 1
        return dict(self.answer)


def test_a_revocation_is_seen_within_the_cache_bound():
    now = [1000.0]
    link = FakeLink()
    verifier = TokenVerifier(link, cache_s=60, monotonic=lambda: now[0])  # asks for 60: gets 5
    token = "mnt_" + "x" * 43

    async def main() -> None:
        assert (await verifier.verify(token)).agent == "bot"
        link.answer = {"valid": False, "reason": "revoked"}
        now[0] += CACHE_S - 0.01
        assert await verifier.verify(token) is not None  # still cached
        now[0] += 0.02
        assert await verifier.verify(token) is None
        assert link.calls == 2

    asyncio.run(main())


def test_a_guessing_address_does_not_lock_out_a_token_known_good():
    link = FakeLink()
    verifier = TokenVerifier(link)
    auth = Authenticator(verifier, RateLimiter(1000, 1000))
    good, fresh = "mnt_" + "g" * 43, "mnt_" + "f" * 43

    async def main() -> list[int]:
        await auth.identify({"authorization": f"Bearer {good}"}, client="10.0.0.9")
        link.answer = {"valid": False, "reason": "unknown"}
        statuses = []
        for n in range(25):
            try:
                await auth.identify({"authorization": f"Bearer mnt_{n:043d}"},
                                    client="10.0.0.9")
            except HttpRefusal as exc:
                statuses.append(exc.status)
        link.answer = {"valid": True, "name": "t", "agent": "bot", "scopes": ["read"],
                       "project": None, "expires_at": None}
        assert (await auth.identify({"authorization": f"Bearer {good}"},
                                    client="10.0.0.9")).agent == "bot"
        with pytest.raises(HttpRefusal) as refused:  # never seen valid: still throttled
            await auth.identify({"authorization": f"Bearer {fresh}"}, client="10.0.0.9")
        assert refused.value.status == 429
        return statuses

    statuses = asyncio.run(main())
    assert statuses[0] == 401 and statuses[-1] == 429


def test_the_rate_limiter_allows_the_burst_then_the_rate():
    now = [0.0]
    limiter = RateLimiter(per_s=2, burst=3, monotonic=lambda: now[0])
    assert [limiter.take("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    wait = limiter.take("a")
    assert wait == pytest.approx(0.5)
    assert limiter.take("b") == 0.0  # buckets are per token
    now[0] += 0.5
    assert limiter.take("a") == 0.0


def test_a_costly_take_spends_all_or_nothing():
    now = [0.0]
    limiter = RateLimiter(per_s=2, burst=5, monotonic=lambda: now[0])
    assert limiter.take("a", 4) == 0.0
    assert limiter.take("a", 3) == pytest.approx(1.0)  # 1 left, 2 short at 2/s
    assert limiter.take("a") == 0.0  # the refused take spent nothing
    now[0] += 1.5
    assert limiter.take("a", 3) == 0.0


def _settings(**changes: Any) -> GatewaySettings:
    return GatewaySettings(**{"host": "127.0.0.1", "port": 8765, "socket": Path("/x.sock")}
                           | changes)


def test_start_up_refusals(tmp_path):
    assert _settings().refusal() is None
    assert "without TLS" in _settings(host="0.0.0.0").refusal()
    assert "without TLS" in _settings(host="10.1.2.3").refusal()
    named = {"public_url": "https://mem.example.com"}
    assert _settings(host="0.0.0.0", behind_proxy=True, **named).refusal() is None
    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    cert.write_text("x")
    key.write_text("x")
    tls = {"tls_cert": str(cert), "tls_key": str(key)}
    assert _settings(host="0.0.0.0", **tls, **named).refusal() is None
    assert _settings(host="::", **tls, allowed_hosts=("mem.internal",)).refusal() is None
    assert _settings(host="10.1.2.3", **tls).refusal() is None  # its own address is its name
    # Every address and no name: every request would be refused (421).
    for host in ("0.0.0.0", "::"):
        for extra in ({"behind_proxy": True}, tls):
            problem = _settings(host=host, **extra).refusal()
            assert "gateway.public_url" in problem and "gateway.allowed_hosts" in problem
    assert "together" in _settings(tls_cert=str(cert)).refusal()


def test_every_address_takes_loopback_names_too():
    s = _settings(host="0.0.0.0", port=8799, public_url="https://mem.example.com:8799")
    assert {"127.0.0.1", "localhost", "::1", "mem.example.com"} <= s.accepted_hosts()
    assert {"https://mem.example.com:8799", "http://127.0.0.1:8799"} <= s.accepted_origins()
    assert "evil.example" not in s.accepted_hosts()


def test_hosts_and_origins():
    s = _settings(public_url="https://mem.example.com", allowed_hosts=("gw.internal",))
    assert {"127.0.0.1", "localhost", "mem.example.com", "gw.internal"} <= s.accepted_hosts()
    assert "https://mem.example.com" in s.accepted_origins()
    assert host_only("[::1]:8765") == "::1"
    assert host_only("Mem.Example.com:443") == "mem.example.com"


@pytest.mark.parametrize("host", ["localhost:80@evil.example", "localhost:evil",
                                  "[::1]evil", "[::1]:x", "localhost.", "127.0.0.1:"])
def test_a_host_with_anything_but_a_port_after_it_is_not_accepted(host):
    accepted = _settings().accepted_hosts()
    assert host_only(host) not in accepted


@pytest.mark.parametrize(("query", "refused"), [
    ("access_token=abc", True), ("token=abc", True), ("x=mnt_abc", True),
    ("project=payments", False), ("", False), ("q=%6Dnt_abc", True), ("x=mnt%5Fabc", True),
    ("%6Dnt_abc=1", True)])
def test_query_string_tokens(query, refused):
    assert query_holds_token(query) is refused


def test_a_project_bound_token_reaches_its_projects_records_only():
    records = {"M-own": "project:payments", "M-other": "project:billing", "M-g": "global",
               "M-agent-billing": "agent:dallas@billing", "M-agent-own": "agent:dallas@payments"}

    async def fetch(record_id: str) -> dict[str, Any] | None:
        if record_id not in records:
            return None
        scope, _, project = records[record_id].partition("@")
        return {"scope": scope, "project": project or None}

    async def outcome(identity: Identity, method: str, **params: Any) -> int | None:
        try:
            await check_project(method, params, identity, fetch)
        except Forbidden as exc:
            return exc.code
        return None

    async def main() -> None:
        assert await outcome(ADMIN, "memory.get", id="M-own") is None
        assert await outcome(ADMIN, "memory.get", id="M-g") is None
        assert await outcome(ADMIN, "memory.get", id="M-other") == -32001
        assert await outcome(ADMIN, "memory.get", id="M-missing") is None  # the daemon says
        assert await outcome(ADMIN, "memory.retract", id="M-g", reason="x") == -32004
        assert await outcome(ADMIN, "memory.supersede", id="M-own", by="M-other") == -32001
        assert await outcome(ADMIN, "memory.supersede", id="M-own", by="M-g") is None
        assert await outcome(WRITE, "memory.retract", id="M-other", reason="x") is None
        # A record of another project under an agent scope is that project's too.
        assert await outcome(ADMIN, "memory.get", id="M-agent-billing") == -32001
        assert await outcome(ADMIN, "memory.get", id="M-agent-own") is None
        assert await outcome(ADMIN, "memory.pin", id="M-other") == -32001

    asyncio.run(main())


def test_every_method_the_daemon_serves_is_known_to_the_gateway(tmp_path):
    # The gateway answers a method it does not know with "no method named": never one the
    # daemon serves.
    from minionsd.gateway.identity import known
    from tests.unit.test_docs import served_methods

    assert sorted(m for m in served_methods(tmp_path) if not known(m)) == []
