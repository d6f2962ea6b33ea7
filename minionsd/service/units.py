"""Service definitions for systemd and launchd: rendering the templates, and where they go.

The canonical templates are package data in `minionsd/service_templates/`, so an installed
minionsd can write its own unit (`minionsctl service install`) without the source tree. Each
holds two placeholders, `@MINIONSD@` (the executable) and `@HOME@` (the minions home).
Template lines starting with `##` (or `<!--##` in the plist) document the template itself and
are left out of the rendered file.

The repository's `systemd/` directory holds the same three files rendered with the example
paths in `EXAMPLES`; a unit test keeps them equal, and `python -m minionsd.service DIR`
rewrites them. So a unit is written once, and the copies people read are real, working units.

Values go in as the target system reads them: in systemd units, specifiers such as `%h` are
expanded by systemd (a literal `%` must be written `%%`) and a path with spaces is quoted; in
the plist, values are XML-escaped and must be absolute, because launchd expands nothing.
Characters that no quoting makes safe (quotes, backslashes, `$`, control characters) are
refused with `InvalidParams`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Literal
from xml.sax.saxutils import escape

from minionsd.errors import InvalidParams

Kind = Literal["system", "user", "launchd", "gateway-system", "gateway-user",
               "gateway-launchd"]

LAUNCHD_LABEL = "com.minions.minionsd"
GATEWAY_LAUNCHD_LABEL = "com.minions.minionsd-gateway"
# The gateway kinds run `minionsctl serve` (@MINIONSD@ is then the minionsctl executable).
TEMPLATES: dict[str, str] = {
    "system": "minionsd.service",
    "user": "minionsd-user.service",
    "launchd": f"{LAUNCHD_LABEL}.plist",
    "gateway-system": "minionsd-gateway.service",
    "gateway-user": "minionsd-gateway-user.service",
    "gateway-launchd": f"{GATEWAY_LAUNCHD_LABEL}.plist",
}
# The paths the checked-in copies in systemd/ are rendered with.
EXAMPLES: dict[str, tuple[str, str]] = {
    "system": ("/usr/local/bin/minionsd", "/var/lib/minionsd"),
    "user": ("%h/.local/bin/minionsd", "%h/.minions"),
    "launchd": ("/usr/local/bin/minionsd", "/Users/you/.minions"),
    "gateway-system": ("/usr/local/bin/minionsctl", "/var/lib/minionsd"),
    "gateway-user": ("%h/.local/bin/minionsctl", "%h/.minions"),
    "gateway-launchd": ("/usr/local/bin/minionsctl", "/Users/you/.minions"),
}


def gateway_kind(kind: str) -> str:
    """The gateway's kind beside a daemon kind: user -> gateway-user, ..."""
    return kind if kind.startswith("gateway-") else f"gateway-{kind}"
_UNSAFE = set("\"'\\$`") | {chr(c) for c in range(32)} | {"\x7f"}


def _check_kind(kind: str) -> None:
    if kind not in TEMPLATES:
        raise InvalidParams(
            f"service kind must be one of {', '.join(TEMPLATES)}, got {kind!r}", param="kind"
        )


def template_text(kind: Kind) -> str:
    """The raw template for `kind`, placeholders and notes included."""
    _check_kind(kind)
    ref = resources.files("minionsd.service").joinpath("service_templates", TEMPLATES[kind])
    return ref.read_text(encoding="utf-8")


def _value(kind: str, name: str, value: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidParams(f"{name} must be a non-empty path", param=name)
    bad = sorted({ch for ch in value if ch in _UNSAFE})
    if bad:
        raise InvalidParams(
            f"{name} contains characters a service file cannot hold: {bad!r}", param=name
        )
    if kind.endswith("launchd"):
        if not value.startswith("/"):
            raise InvalidParams(f"{name} must be an absolute path for launchd", param=name)
        return escape(value)
    if not value.startswith(("/", "%")):
        raise InvalidParams(
            f"{name} must be an absolute path (or start with a specifier such as %h)", param=name
        )
    return f'"{value}"' if any(ch.isspace() for ch in value) else value


def render_unit(kind: Kind, minionsd_path: str, home: str) -> str:
    """The service file for `kind` ("system", "user" or "launchd") with these paths."""
    text = template_text(kind)
    values = {
        "@MINIONSD@": _value(kind, "minionsd_path", minionsd_path),
        "@HOME@": _value(kind, "home", home),
    }
    lines = []
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith(("##", "<!--##")):
            continue
        for placeholder, value in values.items():
            line = line.replace(placeholder, value)
        lines.append(line)
    return "".join(lines)


PRIVATE_TMP_DIRS = ("/tmp", "/var/tmp")


def _under_private_tmp(path: str) -> str | None:
    for candidate in dict.fromkeys((os.path.abspath(path), os.path.realpath(path))):
        for tmp in PRIVATE_TMP_DIRS:
            if candidate == tmp or candidate.startswith(tmp + "/"):
                return candidate
    return None


def _interpreter(executable: str) -> str | None:
    """The `#!` interpreter of a console script (a venv's python), if it has one."""
    try:
        with open(executable, "rb") as handle:
            first = handle.readline(4096)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    parts = first[2:].decode("utf-8", "replace").split()
    return parts[0] if parts else None


def check_system_paths(minionsd_path: str, home: str) -> None:
    """Refuse a system unit that cannot start: its sandbox (PrivateTmp=yes) gives the service
    an empty /tmp and /var/tmp, so a home, an executable or its interpreter (a venv) there is
    invisible to it. Raises InvalidParams naming the path."""
    checks = [("home", home), ("minionsd executable", minionsd_path)]
    interpreter = _interpreter(minionsd_path)
    if interpreter:
        checks.append(("minionsd's Python interpreter", interpreter))
    for what, path in checks:
        hidden = _under_private_tmp(path)
        if hidden:
            raise InvalidParams(
                f"the {what} {hidden} is under /tmp or /var/tmp, which the system unit's "
                "PrivateTmp=yes hides from the service, so it could not start; put it elsewhere "
                "(e.g. a home in /var/lib/minionsd, a venv in /opt/minionsd) or use --user",
                param="home" if what == "home" else "minionsd_path")


def default_install_path(kind: Kind, *, environ: Mapping[str, str] | None = None) -> Path:
    """Where `kind` is installed: the systemd system or user unit directory, or LaunchAgents."""
    _check_kind(kind)
    env = os.environ if environ is None else environ
    if kind in ("system", "gateway-system"):
        return Path("/etc/systemd/system") / TEMPLATES[kind]
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    if kind in ("user", "gateway-user"):
        config = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
        # Installed under the plain unit name, so `systemctl --user ... minionsd` finds it.
        return config / "systemd" / "user" / f"{unit_name(kind)}.service"
    return home / "Library" / "LaunchAgents" / TEMPLATES[kind]


def unit_name(kind: str) -> str:
    return "minionsd-gateway" if kind.startswith("gateway-") else "minionsd"


def enable_commands(kind: Kind, path: Path, *, uid: int | None = None) -> list[str]:
    """Shell commands that load and start an installed service file, for the CLI to print."""
    _check_kind(kind)
    name = unit_name(kind)
    if kind in ("system", "gateway-system"):
        return ["systemctl daemon-reload", f"systemctl enable --now {name}"]
    if kind in ("user", "gateway-user"):
        return [
            "systemctl --user daemon-reload",
            f"systemctl --user enable --now {name}",
            "loginctl enable-linger",
        ]
    uid = os.getuid() if uid is None else uid
    return [f"launchctl bootstrap gui/{uid} {path}"]


def example_files() -> dict[str, str]:
    """File name in systemd/ -> its content, rendered with `EXAMPLES`."""
    return {TEMPLATES[kind]: render_unit(kind, *paths) for kind, paths in EXAMPLES.items()}


def main(argv: list[str] | None = None) -> int:
    """`python -m minionsd.service DIR`: rewrite the example files in DIR (the repo's systemd/)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m minionsd.service DIR", file=sys.stderr)
        return 2
    target = Path(args[0])
    for name, text in example_files().items():
        (target / name).write_text(text, encoding="utf-8")
        print(target / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
