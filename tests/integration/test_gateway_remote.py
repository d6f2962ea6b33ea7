"""Remote clients of the gateway (SPEC §5.2): `minionsctl --url` with the socket's output and
exit codes, hooks over --url that never fail a session, the `mcp --url` stdio bridge, and
`connect --url` against realistic existing config files, whose written entries then work."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import ssl
import subprocess
import sys
import tomllib
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import REPO, DaemonProcess
from tests.gateway_harness import (
    GatewayProcess,
    daemon_and_gateway,
    free_port,
    gateway_with,
    make_token,
)
from tests.integration.test_connect import CLAUDE_JSON, CLAUDE_SETTINGS, CODEX_TOML, CURSOR_JSON


class Env:
    def __init__(self, daemon: DaemonProcess, gateway: GatewayProcess) -> None:
        self.daemon = daemon
        self.gateway = gateway
        self.read = make_token(daemon, "cli-reader", "reader-bot", "read")
        self.write = make_token(daemon, "cli-writer", "laptop-bot", "write")
        daemon.call("pinned.set", text="Ship small pull requests.")
        self.record = daemon.call(
            "memory.add", body="Card numbers are masked by mask_pan() in billing/pan.py.",
            type="semantic", scope="global", trust="agent", source="test",
            title="Masking card numbers")["id"]


@pytest.fixture(scope="module")
def env() -> Iterator[Env]:
    with daemon_and_gateway("mr-") as (daemon, gateway):
        yield Env(daemon, gateway)


def ctl(*args: str, cwd: Path = REPO, stdin: str | None = None,
        **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MINIONS_", "ANTHROPIC_"))}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return subprocess.run([sys.executable, "-m", "minionsd.cli", *args], capture_output=True,
                          text=True, timeout=60, env=env, cwd=cwd, input=stdin)


def test_commands_over_url_print_what_the_socket_prints(env):
    remote = ("--url", env.gateway.url, "--token-env", "GW_TOKEN")
    for words in (("search", "card numbers"), ("show", env.record), ("pinned", "show"),
                  ("kb", "list")):
        local = ctl("--home", str(env.daemon.home), *words)
        over = ctl(*remote, *words, GW_TOKEN=env.read)
        assert (over.returncode, over.stdout) == (local.returncode, local.stdout), words
        assert local.returncode == 0
    task = json.dumps({"id": "T-9", "title": "mask card numbers"})
    over = ctl(*remote, "--json", "retrieve", "--task", "-", stdin=task, GW_TOKEN=env.read)
    assert env.record in [s["id"] for s in json.loads(over.stdout)["selected"]]
    # $MINIONS_URL and $MINIONS_TOKEN stand in for the flags
    by_env = ctl("show", env.record, MINIONS_URL=env.gateway.url, MINIONS_TOKEN=env.read)
    assert by_env.returncode == 0 and env.record in by_env.stdout


def test_remote_exit_codes(env):
    remote = ("--url", env.gateway.url, "--token-env", "GW_TOKEN")
    forbidden = ctl(*remote, "note", "hello", GW_TOKEN=env.read)
    assert forbidden.returncode == 1 and "forbidden" in forbidden.stderr
    assert "'write' scope" in forbidden.stderr
    bad = ctl(*remote, "status", GW_TOKEN="mnt_" + "D" * 43)
    assert bad.returncode == 1 and "401" in bad.stderr and "not known" in bad.stderr
    assert ("D" * 43) not in bad.stderr
    down = ctl("--url", f"http://127.0.0.1:{free_port()}", "status", MINIONS_TOKEN=env.read)
    assert down.returncode == 3 and "not reachable" in down.stderr
    unset = ctl(*remote, "status")
    assert unset.returncode == 2 and "GW_TOKEN" in unset.stderr
    local_only = ctl(*remote, "token", "list", GW_TOKEN=env.read)
    assert local_only.returncode == 2 and "daemon's machine only" in local_only.stderr
    # The web view's sign-in link is made with the daemon's own admin token, on its machine.
    local_only = ctl(*remote, "web", "--no-open", GW_TOKEN=env.read)
    assert local_only.returncode == 2 and "`web` works on the daemon's machine only" in \
        local_only.stderr
    # No token at all: the refusal says where one goes.
    no_token = ctl("--url", env.gateway.url, "status")
    assert no_token.returncode == 1 and "401" in no_token.stderr
    assert "MINIONS_TOKEN" in no_token.stderr and "--token-env" in no_token.stderr
    wrote = ctl(*remote, "--json", "note", "Remote note.", "--author", "root",
                GW_TOKEN=env.write)
    assert wrote.returncode == 0
    path = env.daemon.home / json.loads(wrote.stdout)["path"]
    assert "author: laptop-bot" in path.read_text()


def test_hooks_over_url_add_memory_and_never_fail_a_session(env):
    remote = ("--url", env.gateway.url, "--token-env", "GW_TOKEN")
    prompt = json.dumps({"session_id": "s1", "hook_event_name": "UserPromptSubmit",
                         "prompt": "where are card numbers masked?", "cwd": str(REPO)})
    done = ctl(*remote, "hook", "claude-code", "user-prompt", stdin=prompt, GW_TOKEN=env.read)
    assert done.returncode == 0 and "mask_pan()" in done.stdout, done.stderr
    start = json.dumps({"session_id": "s1", "hook_event_name": "SessionStart"})
    done = ctl(*remote, "hook", "claude-code", "session-start", stdin=start, GW_TOKEN=env.read)
    assert "Ship small pull requests." in done.stdout
    dead = ("--url", f"http://127.0.0.1:{free_port()}", "--token-env", "GW_TOKEN")
    for token in (env.read, None):
        extra = {"GW_TOKEN": token} if token else {}
        done = ctl(*dead, "hook", "claude-code", "user-prompt", stdin=prompt, **extra)
        assert (done.returncode, done.stdout) == (0, "")
        assert len(done.stderr.strip().splitlines()) == 1
    # A token the gateway does not know: one plain line saying so, and the session goes on.
    done = ctl(*remote, "hook", "claude-code", "user-prompt", stdin=prompt,
               GW_TOKEN="mnt_" + "D" * 43)
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr.startswith("minionsctl hook user-prompt: The gateway at "), done.stderr
    assert "HTTP 401 (unknown)" in done.stderr and len(done.stderr.splitlines()) == 1


def test_mcp_url_bridges_stdio_to_the_gateway(env):
    server_env = {k: v for k, v in os.environ.items() if not k.startswith("MINIONS_")}
    server_env.update(PYTHONPATH=str(REPO), GW_TOKEN=env.write)
    params = StdioServerParameters(
        command=sys.executable, env=server_env, cwd=str(REPO),
        args=["-m", "minionsd.cli", "--url", env.gateway.url, "--token-env", "GW_TOKEN", "mcp",
              "--agent", "spoofed-name"])

    async def main() -> str:
        async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
            found = await client.call_tool("memory_search", {"query": "card numbers"})
            assert env.record in found.content[0].text
            note = await client.call_tool("memory_note", {"body": "Bridged note."})
            assert not note.is_error, note.content[0].text
            return note.structured_content["path"]

    assert "author: laptop-bot" in (env.daemon.home / anyio.run(main)).read_text()


def _seed_configs(home: Path) -> None:
    (home / ".claude").mkdir(parents=True)
    (home / ".claude.json").write_text(json.dumps(CLAUDE_JSON, indent=2))
    (home / ".claude" / "settings.json").write_text(json.dumps(CLAUDE_SETTINGS, indent=2))
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text(CODEX_TOML)
    (home / ".cursor").mkdir()
    (home / ".cursor" / "mcp.json").write_text(json.dumps(CURSOR_JSON, indent=2))


def test_connect_url_writes_each_agents_remote_form_and_it_works(env, tmp_path):
    home = tmp_path / "laptop"
    _seed_configs(home)
    remote = ("--url", env.gateway.url, "--token-env", "MEM_TOKEN")
    for target in ("claude-code", "codex", "cursor"):
        # SPEC's order (the options after `connect TARGET`) and the global one both work.
        args = ("connect", target, *remote) if target != "claude-code" else (
            *remote, "connect", target)
        done = ctl(*args, cwd=home, HOME=str(home), MEM_TOKEN=env.read)
        assert done.returncode == 0, done.stderr
    claude = json.loads((home / ".claude.json").read_text())
    codex = tomllib.loads((home / ".codex" / "config.toml").read_text())
    cursor = json.loads((home / ".cursor" / "mcp.json").read_text())
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    mcp_url = env.gateway.url + "/mcp"
    assert claude["mcpServers"]["minions"] == {
        "type": "http", "url": mcp_url, "headers": {"Authorization": "Bearer ${MEM_TOKEN}"}}
    assert codex["mcp_servers"]["minions"] == {"url": mcp_url,
                                               "bearer_token_env_var": "MEM_TOKEN"}
    assert cursor["mcpServers"]["minions"] == {
        "url": mcp_url, "headers": {"Authorization": "Bearer ${env:MEM_TOKEN}"}}
    # what the user had is kept, and no file holds the token
    assert claude["mcpServers"]["github"] == CLAUDE_JSON["mcpServers"]["github"]
    assert codex["mcp_servers"]["context7"]["startup_timeout_sec"] == 20
    assert "# Codex configuration, kept by hand" in (home / ".codex" / "config.toml").read_text()
    assert cursor["mcpServers"]["postgres"] == CURSOR_JSON["mcpServers"]["postgres"]
    assert settings["hooks"]["PreToolUse"] == CLAUDE_SETTINGS["hooks"]["PreToolUse"]
    for path in home.rglob("*"):
        if path.is_file():
            assert env.read not in path.read_text(), path

    # The written hook command runs on "the laptop" with only the variable set.
    hook_env = {k: v for k, v in os.environ.items() if not k.startswith("MINIONS_")}
    hook_env.update(PYTHONPATH=str(REPO), MEM_TOKEN=env.read)
    command = settings["hooks"]["UserPromptSubmit"][-1]["hooks"][0]["command"]
    assert "--url" in shlex.split(command) and env.read not in command
    done = subprocess.run(["sh", "-c", command], input=json.dumps(
        {"session_id": "s2", "prompt": "where are card numbers masked?"}), text=True,
        capture_output=True, timeout=60, env=hook_env, cwd=home)
    assert done.returncode == 0 and "mask_pan()" in done.stdout, done.stderr

    # The MCP entries, expanded the way each agent expands them, reach the gateway.
    def expand(value: str) -> str:
        return re.sub(r"\$\{(?:env:)?(\w+)\}", lambda m: hook_env[m.group(1)], value)

    codex_var = codex["mcp_servers"]["minions"]["bearer_token_env_var"]
    headers = [{k: expand(v) for k, v in claude["mcpServers"]["minions"]["headers"].items()},
               {"Authorization": "Bearer " + hook_env[codex_var]},
               {k: expand(v) for k, v in cursor["mcpServers"]["minions"]["headers"].items()}]

    async def tools(url: str, header: dict[str, str]) -> list[str]:
        async with httpx2.AsyncClient(headers=header, timeout=60) as http, Client(
                streamable_http_client(url, http_client=http), mode="legacy") as client:
            return [t.name for t in (await client.list_tools()).tools]

    for header in headers:
        assert "memory_context" in anyio.run(tools, mcp_url, header)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl not installed")
def test_the_gateway_speaks_https_with_its_own_certificate(env, tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    made = subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)], capture_output=True, timeout=60)
    assert made.returncode == 0, made.stderr
    tls = gateway_with(env.daemon, **{"gateway.tls_cert": str(cert),
                                      "gateway.tls_key": str(key)}, scheme="https",
                       ca=str(cert))
    try:
        url = f"https://127.0.0.1:{tls.port}"
        done = ctl("--url", url, "show", env.record, MINIONS_TOKEN=env.read,
                   SSL_CERT_FILE=str(cert))
        assert done.returncode == 0 and env.record in done.stdout, done.stderr
        # a client that does not trust the certificate does not talk to it
        done = ctl("--url", url, "show", env.record, MINIONS_TOKEN=env.read)
        assert done.returncode == 3 and "CERTIFICATE_VERIFY_FAILED" in done.stderr
    finally:
        tls.stop()



@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl not installed")
def test_the_https_gateway_on_every_address_answers_its_public_name_and_loopback(env, tmp_path):
    """Listening on 0.0.0.0 with its own certificate: without a name to accept, serve refuses
    to start (every request would be 421); with gateway.public_url, a client using that name
    and one on the machine itself (127.0.0.1) are both answered, any other name is not."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    made = subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=memory.example.com",
         "-addext", "subjectAltName=DNS:memory.example.com,IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)], capture_output=True, timeout=60)
    assert made.returncode == 0, made.stderr
    tls = {"gateway.tls_cert": str(cert), "gateway.tls_key": str(key)}
    for name, value in tls.items():
        env.daemon.call("config.set", key=name, value=value)
    try:
        refused = subprocess.run(
            [sys.executable, "-m", "minionsd.cli", "--home", str(env.daemon.home), "serve",
             "--listen", f"0.0.0.0:{free_port()}"], capture_output=True, text=True, timeout=30,
            cwd=REPO)
    finally:
        for name in tls:
            env.daemon.call("config.set", key=name, value="")
    assert refused.returncode == 2, refused.stderr
    assert "gateway.public_url" in refused.stderr and "421" in refused.stderr
    port = free_port()
    gateway = gateway_with(env.daemon, scheme="https", ca=str(cert), host="0.0.0.0", port=port,
                           **tls, **{"gateway.public_url": f"https://memory.example.com:{port}"})
    context = ssl.create_default_context(cafile=str(cert))

    def health(host: str) -> int:
        request = urllib.request.Request(f"https://127.0.0.1:{port}/healthz",
                                         headers={"Host": host})
        try:
            with urllib.request.urlopen(request, timeout=10, context=context) as answer:
                return answer.status
        except urllib.error.HTTPError as exc:
            exc.close()
            return exc.code

    try:
        assert health(f"memory.example.com:{port}") == 200
        assert health(f"127.0.0.1:{port}") == 200
        assert health(f"evil.example:{port}") == 421
    finally:
        gateway.stop()
