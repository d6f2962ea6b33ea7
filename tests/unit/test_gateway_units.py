"""The gateway's service files (SPEC §5.2: systemd user and system units, a launchd plist,
`minionsctl service install --gateway`)."""

from __future__ import annotations

import json
import plistlib
import subprocess
import sys
from pathlib import Path

import pytest

from minionsd.service.units import (
    GATEWAY_LAUNCHD_LABEL,
    default_install_path,
    enable_commands,
    render_unit,
)
from tests.unit.test_service_units import _ANALYZE, _verify, settings

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("kind", ["gateway-system", "gateway-user"])
def test_gateway_units_run_minionsctl_serve_after_the_daemon(kind):
    s = settings(render_unit(kind, "/opt/m/bin/minionsctl", "/var/lib/minionsd"))
    assert s["ExecStart"] == "/opt/m/bin/minionsctl --home /var/lib/minionsd serve"
    assert "minionsd.service" in s["After"] and s["Wants"] == "minionsd.service"
    assert s["RestartPreventExitStatus"] == "2"  # a refusal is not fixed by restarting
    assert s["NoNewPrivileges"] == "yes"
    if kind == "gateway-system":
        assert s["User"] == "minions"  # the daemon's socket accepts its own user only
        assert s["ReadOnlyPaths"] == "/var/lib/minionsd"
        assert "ReadWritePaths" not in s


def test_gateway_plist():
    data = plistlib.loads(render_unit("gateway-launchd", "/usr/local/bin/minionsctl",
                                      "/Users/a/.minions").encode())
    assert data["Label"] == GATEWAY_LAUNCHD_LABEL
    assert data["ProgramArguments"] == ["/usr/local/bin/minionsctl", "--home",
                                        "/Users/a/.minions", "serve"]
    assert data["StandardErrorPath"] == "/Users/a/.minions/engine/gateway.log"


def test_gateway_install_paths_and_commands():
    env = {"HOME": "/home/a"}
    assert default_install_path("gateway-user", environ=env) == Path(
        "/home/a/.config/systemd/user/minionsd-gateway.service")
    assert default_install_path("gateway-system") == Path(
        "/etc/systemd/system/minionsd-gateway.service")
    assert enable_commands("gateway-user", Path("x"))[1] == (
        "systemctl --user enable --now minionsd-gateway")


@pytest.mark.skipif(_ANALYZE is None, reason="systemd-analyze not installed")
@pytest.mark.parametrize("kind", ["gateway-system", "gateway-user"])
def test_gateway_units_pass_systemd_analyze_verify(kind, tmp_path):
    home = tmp_path / "minions home"
    home.mkdir()
    unit = tmp_path / "minionsd-gateway.service"
    unit.write_text(render_unit(kind, sys.executable, str(home)), encoding="utf-8")
    runtime = tmp_path / "run"
    runtime.mkdir()
    _verify(unit, user=kind == "gateway-user", runtime_dir=runtime)


def test_service_install_gateway_prints_the_minionsctl_unit(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "minionsd.cli", "--home", str(tmp_path / "h"), "--json",
         "service", "install", "--gateway", "--user", "--print"],
        capture_output=True, text=True, timeout=60, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["kind"] == "gateway-user"
    assert result["path"].endswith("systemd/user/minionsd-gateway.service")
    exec_start = settings(result["unit"])["ExecStart"]
    assert exec_start.endswith(f"minionsctl --home {tmp_path / 'h'} serve")
