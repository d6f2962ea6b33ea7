"""`minionsctl web`: a one-time sign-in link for the web view (SPEC §5.3), valid 5 minutes and
for one use, for the local admin token the daemon keeps for it; opened in a browser when this
machine has a graphical one. The link carries a code, never a token."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from minionsd.cli import fmt
from minionsd.cli.common import AddParser, Call, CommandError, Formatter


def gateway_url(config: dict[str, Any], listen: str | None = None) -> str:
    """Where browsers reach the gateway: the address `serve --listen` was given (`listen`),
    else gateway.public_url, else gateway.listen."""
    gateway = config.get("gateway") or {}
    public = (gateway.get("public_url") or "").rstrip("/")
    if public and not listen:
        return public
    listen = listen or gateway.get("listen") or "127.0.0.1:8765"
    host, _, port = listen.rpartition(":")
    if host in ("0.0.0.0", "::", "[::]", ""):
        host = "127.0.0.1"
    scheme = "https" if gateway.get("tls_cert") and gateway.get("tls_key") else "http"
    return f"{scheme}://{host}:{port}"


def gateway_answers(base_url: str, timeout: float = 2.0) -> bool | None:
    """Whether a gateway answers /healthz at `base_url`: True for any HTTP answer, False when
    the connection is refused, None when that cannot be told (a timeout, a TLS problem)."""
    import http.client  # only here: the other commands never make an HTTP request
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"{base_url}/healthz", timeout=timeout):
            return True
    except urllib.error.HTTPError:
        return True  # it answered, if only to say the daemon behind it is down
    except urllib.error.URLError as exc:
        return False if isinstance(exc.reason, ConnectionRefusedError) else None
    except ConnectionRefusedError:
        return False
    except (OSError, ValueError, http.client.HTTPException):
        return None


def can_open_browser() -> bool:
    return sys.platform == "darwin" or bool(os.environ.get("DISPLAY")
                                            or os.environ.get("WAYLAND_DISPLAY"))


def _web(args: argparse.Namespace, call: Call) -> tuple[Any, Formatter]:
    if args.listen is not None:
        from minionsd.config import split_host_port  # config's imports are not free

        try:
            split_host_port(args.listen)
        except ValueError as exc:
            raise CommandError(f"--listen must be HOST:PORT as given to `minionsctl serve "
                               f"--listen`, not {args.listen!r}: {exc}") from None
    config = call("config.get", {})["value"]
    link = call("web.link_create", {})
    base = gateway_url(config, args.listen)
    url = f"{base}/login?code={link['code']}"
    result = link | {"url": url, "gateway_running": gateway_answers(base)}
    opened = False
    if not args.no_open and can_open_browser():
        import webbrowser  # only here: most runs of minionsctl never open a browser

        opened = webbrowser.open(url)

    def text(r: dict[str, Any]) -> str:
        running = r["gateway_running"]
        lines = [r["url"], f"This sign-in link works once, until {fmt.moment(r['expires_at'])} "
                 f"(5 minutes), as token {r['token_name']!r} (admin).",
                 f"The gateway is answering at {base}." if running else
                 f"Nothing answers at {base}: start the gateway with `minionsctl serve`."
                 if running is False else "The gateway must be running: `minionsctl serve`."]
        if opened:
            lines.append("Opened in your browser.")
        return "\n".join(lines)
    return result, text


def add_parsers(add: AddParser) -> None:
    p = add("web", "print a one-time sign-in link for the web view (and open it)")
    p.add_argument("--no-open", action="store_true", help="print the link only")
    p.add_argument("--listen", metavar="HOST:PORT",
                   help="the address the gateway was started on with `serve --listen` "
                   "(default: gateway.public_url, else gateway.listen)")


COMMANDS = {"web": _web}
