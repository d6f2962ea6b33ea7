"""minionsctl's gateway commands: `token create|list|revoke` (socket only: a gateway never
forwards them) and `serve`, which runs the HTTP gateway in the foreground. The gateway's code
(Starlette, uvicorn, the mcp SDK) is imported only when `serve` runs."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from minionsd.cli import fmt
from minionsd.cli.common import EXIT_USAGE, AddParser, Call, Formatter, UsageError, socket_of


def _token_create(args: argparse.Namespace, call: Call) -> tuple[Any, Formatter]:
    params: dict[str, Any] = {"name": args.name, "agent": args.agent, "scopes": args.scope}
    if args.project:
        params["project"] = args.project
    if args.expires is not None:
        if not 0 < args.expires <= 3650:  # inf and nan too
            raise UsageError(f"--expires must be a number of days more than 0 and at most "
                             f"3650, got {args.expires:g}")
        params["expires_days"] = args.expires
    return call("token.create", params), fmt_created


def fmt_created(r: dict[str, Any]) -> str:
    bound = f", project {r['project']}" if r.get("project") else ""
    expires = f", expires {fmt.moment(r['expires_at'])}" if r.get("expires_at") else ""
    return "\n".join([
        r["token"],
        f"token {r['name']!r} for agent {r['agent']} ({', '.join(r['scopes'])}{bound}{expires}).",
        "This is the only time it is shown: store it now (e.g. in a secret store or an "
        "environment variable); minionsd keeps only its SHA-256 digest."])


def fmt_list(r: dict[str, Any]) -> str:
    tokens = r["tokens"]
    if not tokens:
        return "No tokens yet: `minionsctl token create NAME --agent ID --scope read`."
    rows = []
    for t in tokens:
        state = ("revoked " + fmt.day(t["revoked_at"])) if t["revoked_at"] else "active"
        rows.append([t["name"], t["agent"], ",".join(t["scopes"]), t["project"] or "-",
                     fmt.day(t["created_at"]), fmt.day(t["expires_at"]) if t["expires_at"]
                     else "never", fmt.moment(t["last_used"]) if t["last_used"] else "never",
                     state])
    return fmt.table(["NAME", "AGENT", "SCOPES", "PROJECT", "CREATED", "EXPIRES", "LAST USED",
                      "STATE"], rows)


def _token_list(_args: argparse.Namespace, call: Call) -> tuple[Any, Formatter]:
    return call("token.list", {}), fmt_list


def _token_revoke(args: argparse.Namespace, call: Call) -> tuple[Any, Formatter]:
    def text(r: dict[str, Any]) -> str:
        return (f"Token {r['name']!r} (agent {r['agent']}) is revoked since "
                f"{fmt.moment(r['revoked_at'])}; gateways refuse it within 5 seconds.")
    return call("token.revoke", {"name": args.name}), text


def run_serve(args: argparse.Namespace) -> int:
    from minionsd import config as config_mod
    from minionsd.cli.common import home_of
    from minionsd.errors import ConfigError

    home = home_of(args)
    try:
        cfg = config_mod.load(home / "config.toml", os.environ)
    except ConfigError as exc:
        print(f"minionsctl serve: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from minionsd.gateway import serve
    from minionsd.gateway.settings import GatewaySettings, SettingsError

    try:
        settings = GatewaySettings.from_config(cfg, socket_of(args), home=home,
                                               listen=args.listen, follow_home=not args.socket)
    except SettingsError as exc:
        print(f"minionsctl serve: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return serve.run(settings)


def _scopes(raw: str) -> str:
    words = [w.strip() for w in raw.split(",") if w.strip()]
    bad = [w for w in words if w not in ("read", "write", "admin")]
    if not words or bad:
        raise argparse.ArgumentTypeError("--scope is read, write or admin, or a comma list")
    return ",".join(words)


def add_parsers(add: AddParser) -> None:
    tok = add("token", "bearer tokens for the HTTP gateway (socket only)").add_subparsers(
        dest="sub", required=True, metavar="SUB")
    p = add("create", "make a token; it is printed once", tok)
    p.add_argument("name", metavar="NAME", help="a label for the token, unique")
    p.add_argument("--agent", required=True, metavar="ID",
                   help="the agent the token writes as and recalls for")
    p.add_argument("--scope", required=True, type=_scopes, metavar="SCOPES",
                   help="read, write (with read) or admin (with both); e.g. read,write")
    p.add_argument("--project", metavar="P", help="bind the token to one project")
    p.add_argument("--expires", type=float, metavar="DAYS", help="expire after DAYS days")
    add("list", "list tokens (never the tokens themselves)", tok)
    add("revoke", "end a token at once", tok).add_argument(
        "name", metavar="NAME", help="the name given at create")
    p = add("serve", "run the HTTP gateway in the foreground (MCP, JSON-RPC, web view)")
    p.add_argument("--listen", metavar="HOST:PORT",
                   help="address to listen on (default gateway.listen, 127.0.0.1:8765)")


# Never through a gateway (run.py's LOCAL_ONLY refuses --url for them; so does the gateway).
COMMANDS = {"token create": _token_create, "token list": _token_list,
            "token revoke": _token_revoke}
RUNNERS = {"serve": run_serve}
