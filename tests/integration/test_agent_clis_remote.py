"""The real agent CLIs on "another machine": given only the gateway's URL and a token in an
environment variable, `minionsctl --url URL --token-env VAR connect` writes their remote
configuration (no home, no socket), then Claude Code (`claude -p`) and Codex (`codex exec`)
run headless sessions against the fake model API (tests/fake_model_api.py), which calls the
minions tools: they reach the daemon's memory through `POST /mcp`, the hooks through
`minionsctl --url`, and recalled text stays fenced. The token never lands in a file.

The CLIs, the daemon's memory and the checks of what the model saw are test_agent_clis.py's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import DaemonProcess
from tests.fake_model_api import FakeModelApi
from tests.gateway_harness import GatewayProcess, make_token
from tests.integration.test_agent_clis import (  # noqa: F401 - fixtures used by name
    PROMPT,
    SESSION_TIMEOUT_S,
    base_env,
    check_what_the_model_saw,
    clis,
    memory,
    wanted,
)


@pytest.fixture(scope="module")
def remote(memory: tuple[DaemonProcess, dict[str, str]]  # noqa: F811
           ) -> Iterator[tuple[GatewayProcess, str]]:
    daemon, _ids = memory
    token = make_token(daemon, "laptop", "laptop-agent", "read,write")
    gateway = GatewayProcess(daemon).start()
    try:
        yield gateway, token
    finally:
        gateway.stop()


def connect_remote(gateway: GatewayProcess, target: str, env: dict[str, str]) -> None:
    done = subprocess.run([sys.executable, "-m", "minionsd.cli", "--url", gateway.url,
                           "--token-env", "MEM_TOKEN", "connect", target], capture_output=True,
                          text=True, timeout=60, env=env, cwd=env["HOME"])
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stdout, done.stdout


def no_token_in(root: Path, token: str) -> None:
    for path in root.rglob("*"):
        if path.is_file() and path.stat().st_size < 5_000_000:
            assert token not in path.read_text(errors="replace"), path


def test_claude_code_through_the_gateway(clis, memory, remote, tmp_path):  # noqa: F811
    _daemon, ids = memory
    gateway, token = remote
    user_home, project = tmp_path / "user", tmp_path / "ledger"
    user_home.mkdir()
    project.mkdir()
    env = base_env(user_home) | {"MEM_TOKEN": token}
    connect_remote(gateway, "claude-code", env)
    entry = json.loads((user_home / ".claude.json").read_text())["mcpServers"]["minions"]
    assert entry["type"] == "http" and entry["url"] == gateway.url + "/mcp"
    with FakeModelApi(wanted(ids)) as fake:
        env |= {"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "sk-ant-fake",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
                "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
                "MCP_CONNECTION_NONBLOCKING": "0"}
        done = subprocess.run([str(clis / "claude"), "-p", PROMPT,
                               "--output-format", "json"],
                              capture_output=True, text=True, timeout=SESSION_TIMEOUT_S,
                              env=env, cwd=project, stdin=subprocess.DEVNULL)
        requests = fake.requests
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    assert json.loads(done.stdout)["result"] == "Done: I read the team's memory."
    check_what_the_model_saw(requests, ids["record"])
    given = "\n".join(r.text() for r in requests)
    assert "Ledger changes need a second reviewer." in given  # session-start hook over --url
    assert "## Relevant Memory" in given  # the prompt hook over --url
    no_token_in(user_home, token)


def test_codex_through_the_gateway(clis, memory, remote, tmp_path):  # noqa: F811
    _daemon, ids = memory
    gateway, token = remote
    user_home, codex_home, project = tmp_path / "user", tmp_path / "codex", tmp_path / "ledger"
    for directory in (user_home, codex_home, project):
        directory.mkdir()
    env = base_env(user_home) | {"CODEX_HOME": str(codex_home), "FAKE_MODEL_KEY": "sk-fake",
                                 "MEM_TOKEN": token}
    with FakeModelApi(wanted(ids)) as fake:
        (codex_home / "config.toml").write_text(
            'model = "fake-model"\nmodel_provider = "fake"\n'
            "check_for_update_on_startup = false\n\n[analytics]\nenabled = false\n\n"
            f'[model_providers.fake]\nname = "fake"\nbase_url = "{fake.url}/v1"\n'
            'env_key = "FAKE_MODEL_KEY"\nwire_api = "responses"\n')
        connect_remote(gateway, "codex", env)
        done = subprocess.run([str(clis / "codex"), "exec", "--skip-git-repo-check", PROMPT],
                              capture_output=True, text=True, timeout=SESSION_TIMEOUT_S,
                              env=env, cwd=project, stdin=subprocess.DEVNULL)
        requests = fake.requests
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    assert "Done: I read the team's memory." in done.stdout
    check_what_the_model_saw(requests, ids["record"])
    no_token_in(codex_home, token)
