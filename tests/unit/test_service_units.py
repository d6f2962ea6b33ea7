"""Service files (SPEC §6, DEPENDENCY-NOTES §8): rendering, checked-in copies, systemd verify."""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from minionsd.errors import InvalidParams
from minionsd.service.units import (
    EXAMPLES,
    LAUNCHD_LABEL,
    TEMPLATES,
    default_install_path,
    enable_commands,
    example_files,
    main,
    render_unit,
    template_text,
)

REPO = Path(__file__).resolve().parents[2]


def directives(text: str) -> list[tuple[str, str, str]]:
    """(section, key, value) for every assignment in a unit file, in order, repeats kept."""
    out, section = [], ""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        out.append((section, key.strip(), value.strip()))
    return out


def settings(text: str) -> dict[str, str]:
    return {key: value for _, key, value in directives(text)}


# --- templates --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(TEMPLATES))
def test_templates_document_their_placeholders(kind):
    text = template_text(kind)
    notes = [line for line in text.splitlines() if line.lstrip().startswith(("##", "<!--##"))]
    assert any("@MINIONSD@" in line for line in notes)
    assert any("@HOME@" in line for line in notes)


@pytest.mark.parametrize("kind", list(TEMPLATES))
def test_rendering_leaves_no_placeholder_or_note(kind):
    text = render_unit(kind, "/opt/minionsd/bin/minionsd", "/srv/minions")
    assert "@MINIONSD@" not in text
    assert "@HOME@" not in text
    assert "##" not in text
    assert "/opt/minionsd/bin/minionsd" in text
    assert "/srv/minions" in text


def test_system_unit():
    text = render_unit("system", "/usr/local/bin/minionsd", "/var/lib/minionsd")
    s = settings(text)
    assert s["ExecStart"] == "/usr/local/bin/minionsd --home /var/lib/minionsd --log-format json"
    expected = {
        "Type": "notify",
        "User": "minions",
        "WatchdogSec": "30",
        "Restart": "on-failure",
        "RestartPreventExitStatus": "2",
        "TimeoutStopSec": "20",
        "ReadWritePaths": "/var/lib/minionsd",
        "ProtectSystem": "strict",
        "NoNewPrivileges": "yes",
        "PrivateTmp": "yes",
        "UMask": "0077",
        "RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6",
        "WantedBy": "multi-user.target",
    }
    assert {k: s.get(k) for k in expected} == expected
    assert "MemoryDenyWriteExecute" not in s  # libffi may need W+X pages; see the comment


# Options that need a mount namespace or privileges a user manager does not have.
_SYSTEM_ONLY = {
    "User",
    "Group",
    "ProtectSystem",
    "ProtectHome",
    "PrivateTmp",
    "PrivateDevices",
    "ReadWritePaths",
    "ProtectKernelTunables",
    "ProtectKernelModules",
    "ProtectKernelLogs",
    "ProtectControlGroups",
    "ProtectClock",
    "ProtectHostname",
    "ProtectProc",
    "PrivateMounts",
    "CapabilityBoundingSet",
    "RemoveIPC",
}


def test_user_unit():
    text = render_unit("user", "%h/.local/bin/minionsd", "%h/.minions")
    s = settings(text)
    assert s["ExecStart"] == "%h/.local/bin/minionsd --home %h/.minions"
    assert s["Type"] == "notify"
    assert s["WatchdogSec"] == "30"
    assert s["WantedBy"] == "default.target"
    assert s["NoNewPrivileges"] == "yes"
    assert s["UMask"] == "0077"
    assert not _SYSTEM_ONLY & set(s)


def test_launchd_plist():
    data = plistlib.loads(
        render_unit("launchd", "/usr/local/bin/minionsd", "/Users/a/.minions").encode()
    )
    assert data["Label"] == LAUNCHD_LABEL
    assert data["ProgramArguments"] == ["/usr/local/bin/minionsd", "--home", "/Users/a/.minions"]
    assert data["RunAtLoad"] is True
    assert data["KeepAlive"] == {"SuccessfulExit": False}
    assert data["ThrottleInterval"] == 10
    assert data["ProcessType"] == "Background"
    assert data["StandardOutPath"] == "/Users/a/.minions/engine/minionsd.log"
    assert data["StandardErrorPath"] == "/Users/a/.minions/engine/minionsd.log"
    assert data["Umask"] == 0o077


# --- quoting and refusal -----------------------------------------------------------------


def test_paths_with_spaces_are_quoted_in_units():
    s = settings(render_unit("system", "/opt/my tools/minionsd", "/srv/my home"))
    assert s["ExecStart"] == '"/opt/my tools/minionsd" --home "/srv/my home" --log-format json'
    assert s["ReadWritePaths"] == '"/srv/my home"'


def test_plist_values_are_xml_escaped():
    text = render_unit("launchd", "/Apps/R&D <x>/minionsd", "/Users/a b/.minions")
    data = plistlib.loads(text.encode())
    assert data["ProgramArguments"] == ["/Apps/R&D <x>/minionsd", "--home", "/Users/a b/.minions"]


@pytest.mark.parametrize(
    ("kind", "minionsd_path", "home", "param"),
    [
        ("windows", "/x", "/y", "kind"),
        ("system", "", "/y", "minionsd_path"),
        ("system", "bin/minionsd", "/y", "minionsd_path"),
        ("system", "/x", 'a"b', "home"),
        ("system", "/x", "/y\nExecStartPre=/bin/rm", "home"),
        ("user", "/x", "/home/$USER/.minions", "home"),
        ("user", "/x\\y", "/y", "minionsd_path"),
        ("launchd", "/x", "%h/.minions", "home"),
        ("launchd", "~/bin/minionsd", "/y", "minionsd_path"),
    ],
)
def test_unsafe_values_are_refused(kind, minionsd_path, home, param):
    with pytest.raises(InvalidParams) as err:
        render_unit(kind, minionsd_path, home)
    assert err.value.data["param"] == param


# --- the checked-in copies ---------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(TEMPLATES.values()))
def test_systemd_dir_matches_the_templates(name):
    expected = example_files()[name]
    actual = (REPO / "systemd" / name).read_text(encoding="utf-8")
    assert actual == expected, f"systemd/{name} is stale: run `python -m minionsd.service systemd`"


def test_main_writes_the_examples(tmp_path, capsys):
    assert main([str(tmp_path)]) == 0
    for name, text in example_files().items():
        assert (tmp_path / name).read_text(encoding="utf-8") == text
    assert main([]) == 2


def test_examples_cover_every_kind():
    assert set(EXAMPLES) == set(TEMPLATES)


# --- install locations --------------------------------------------------------------------


def test_default_install_paths():
    env = {"HOME": "/home/ada"}
    assert default_install_path("system", environ=env) == Path(
        "/etc/systemd/system/minionsd.service"
    )
    assert default_install_path("user", environ=env) == Path(
        "/home/ada/.config/systemd/user/minionsd.service"
    )
    assert default_install_path("user", environ={**env, "XDG_CONFIG_HOME": "/cfg"}) == Path(
        "/cfg/systemd/user/minionsd.service"
    )
    assert default_install_path("launchd", environ={"HOME": "/Users/ada"}) == Path(
        "/Users/ada/Library/LaunchAgents/com.minions.minionsd.plist"
    )
    with pytest.raises(InvalidParams):
        default_install_path("rc.d")  # type: ignore[arg-type]


def test_enable_commands():
    assert enable_commands("system", Path("/etc/systemd/system/minionsd.service"))[-1] == (
        "systemctl enable --now minionsd"
    )
    assert "systemctl --user enable --now minionsd" in enable_commands("user", Path("/x"))
    path = Path("/Users/a/Library/LaunchAgents/com.minions.minionsd.plist")
    assert enable_commands("launchd", path, uid=501) == [f"launchctl bootstrap gui/501 {path}"]


# --- systemd's own parser ----------------------------------------------------------------

_ANALYZE = shutil.which("systemd-analyze")


def _verify(unit: Path, *, user: bool, runtime_dir: Path) -> None:
    args = [_ANALYZE, *(["--user"] if user else []), "verify", str(unit)]
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime_dir)}
    proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0 and "Failed to initialize manager" in output:
        pytest.skip(f"systemd-analyze cannot run here: {output.strip()}")
    # verify exits 0 on unknown keys or bad values and only warns, so any line about our file
    # is a failure.
    about_unit = [line for line in output.splitlines() if unit.name in line]
    assert proc.returncode == 0 and not about_unit, output


@pytest.mark.skipif(_ANALYZE is None, reason="systemd-analyze not installed")
@pytest.mark.parametrize("kind", ["system", "user"])
def test_systemd_analyze_verify(kind, tmp_path):
    # ExecStart must name an existing executable for verify to be quiet; the interpreter does.
    home = tmp_path / "minions home"
    home.mkdir()
    unit = tmp_path / "minionsd.service"
    unit.write_text(render_unit(kind, sys.executable, str(home)), encoding="utf-8")
    runtime = tmp_path / "run"
    runtime.mkdir()
    _verify(unit, user=kind == "user", runtime_dir=runtime)


# --- where the API key goes; /tmp and PrivateTmp= -----------------------------------------


@pytest.mark.parametrize(("kind", "path"), [("system", "-/etc/minionsd/env"),
                                            ("user", "-%h/.config/minionsd.env")])
def test_rendered_unit_says_where_the_api_key_goes(kind, path):
    text = render_unit(kind, *EXAMPLES[kind])
    assert ("Service", "EnvironmentFile", path) in directives(text)
    comment = text[: text.index("EnvironmentFile=")].rsplit("\n\n", 1)[-1]
    assert "ANTHROPIC_API_KEY=" in comment and "0600" in comment


def test_system_unit_refuses_paths_private_tmp_hides(tmp_path):
    from minionsd.service.units import check_system_paths

    assert settings(render_unit("system", *EXAMPLES["system"]))["PrivateTmp"] == "yes"
    check_system_paths("/usr/local/bin/minionsd", "/var/lib/minionsd")  # fine
    for exe, home, named in [("/usr/local/bin/minionsd", "/tmp/minions", "/tmp/minions"),
                             ("/var/tmp/venv/bin/minionsd", "/var/lib/m", "/var/tmp/venv"),
                             ("/usr/bin/minionsd", "/tmp", "/tmp")]:
        with pytest.raises(InvalidParams) as err:
            check_system_paths(exe, home)
        assert named in err.value.detail and "PrivateTmp=yes" in err.value.detail



def test_system_unit_refuses_a_venv_interpreter_private_tmp_hides(tmp_path, monkeypatch):
    from minionsd.service import units as service

    # Pretend only tmp_path/private is private, so the script itself is visible.
    private = str(tmp_path / "private")
    monkeypatch.setattr(service, "PRIVATE_TMP_DIRS", (private,))
    shim = tmp_path / "minionsd"
    shim.write_text(f"#!{private}/venv/bin/python\nimport sys\n")
    with pytest.raises(InvalidParams) as err:
        service.check_system_paths(str(shim), "/var/lib/minionsd")
    assert "Python interpreter" in err.value.detail and f"{private}/venv" in err.value.detail
    shim.write_text("#!/usr/bin/python3\n")
    service.check_system_paths(str(shim), "/var/lib/minionsd")


def test_service_install_system_refuses_a_home_under_tmp(tmp_path):
    home = Path("/tmp") / tmp_path.name / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINIONS_")}
    def install(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "minionsd.cli", "--home", str(home),
                               "service", "install", "--system", *extra], env=env, cwd=REPO,
                              capture_output=True, text=True, timeout=60)

    refused = install()  # refused before anything is written (no root needed to see it)
    assert refused.returncode == 1 and refused.stdout == ""
    assert "PrivateTmp=yes" in refused.stderr and str(home) in refused.stderr
    printed = install("--print")  # printing is harmless: the unit, and the warning on stderr
    assert printed.returncode == 0 and "ExecStart=" in printed.stdout
    assert "warning" in printed.stderr and "PrivateTmp=yes" in printed.stderr
