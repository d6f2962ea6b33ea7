"""The web view's sign-in on the daemon's socket: sessions from a token, one-time links that
work once, and sessions that end with their token (web.* methods)."""

from __future__ import annotations

import sqlite3

import pytest

from minionsd.client import RpcError


def test_a_session_lives_only_while_its_token_does(daemon):
    token = daemon.call("token.create", name="ops", agent="ops", scopes=["read"])["token"]
    made = daemon.call("web.session_create", token=token, hours=1)
    assert made["valid"] and made["name"] == "ops" and made["scopes"] == ["read"]
    assert token not in str(made)
    check = daemon.call("web.session_verify", session=made["session"])
    assert check["valid"] and check["agent"] == "ops" and check["session_expires_at"]
    daemon.call("token.revoke", name="ops")
    assert daemon.call("web.session_verify", session=made["session"]) == {
        "valid": False, "reason": "revoked"}
    assert daemon.call("web.session_create", token=token, hours=1)["reason"] == "revoked"
    assert daemon.call("web.session_create", token="mnt_nope", hours=1)["reason"] == "malformed"
    with pytest.raises(RpcError) as err:
        daemon.call("web.session_create", token=token, hours=0)
    assert err.value.code == -32602 and "hours" in str(err.value)


def test_a_project_bound_token_signs_in_to_no_web_view(daemon):
    token = daemon.call("token.create", name="pay", agent="pay-bot", scopes=["read"],
                        project="payments")["token"]
    assert daemon.call("web.session_create", token=token, hours=1) == {
        "valid": False, "reason": "project_bound"}


def test_a_link_works_once_and_signs_in_as_the_local_admin(daemon):
    link = daemon.call("web.link_create")
    assert link["token_name"] == "web-local"
    first = daemon.call("web.link_redeem", code=link["code"], hours=2)
    assert first["valid"] and first["scopes"] == ["read", "write", "admin"]
    assert first["agent"] == "web"
    assert daemon.call("web.link_redeem", code=link["code"], hours=2) == {
        "valid": False, "reason": "used_or_expired"}
    assert daemon.call("web.link_create")["token_name"] == "web-local"  # made once
    tokens = daemon.call("token.list")["tokens"]
    assert [t["name"] for t in tokens] == ["web-local"]
    assert daemon.call("web.session_end", session=first["session"]) == {"ended": True}
    assert not daemon.call("web.session_verify", session=first["session"])["valid"]


def test_only_digests_are_stored(daemon):
    token = daemon.call("token.create", name="ops", agent="ops", scopes=["admin"])["token"]
    session = daemon.call("web.session_create", token=token, hours=1)["session"]
    code = daemon.call("web.link_create")["code"]
    with sqlite3.connect(daemon.home / "engine" / "state.db") as conn:
        dump = "\n".join(conn.iterdump())
    assert session not in dump and code not in dump and token not in dump
