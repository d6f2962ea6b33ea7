"""Assemble the memory part of an agent's prompt for one task, the way an agent process would.

    .venv/bin/python examples/agent_prompt.py "Fix the token refresh retry" \
        --project web --agent dallas

The client is standard library only and talks to the daemon of $MINIONS_HOME (or ~/.minions).
"""

from __future__ import annotations

import argparse
import os
import sys

from minionsd.client import Client, DaemonUnavailable, RpcError


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("title", help="what the agent is asked to do")
    parser.add_argument("--id", default="W-1", help="work item id")
    parser.add_argument("--project")
    parser.add_argument("--agent")
    args = parser.parse_args()

    task = {"id": args.id, "title": args.title}
    params = {"task": task} | {k: v for k in ("project", "agent") if (v := getattr(args, k))}
    home = os.environ.get("MINIONS_HOME", "~/.minions")
    try:
        with Client.for_home(home) as client:
            assembled = client.call("prompt.assemble", params)
    except DaemonUnavailable as exc:
        print(f"{exc}; start it with: minionsd --home {home}", file=sys.stderr)
        return 3
    except RpcError as exc:
        print(f"minionsd refused the request: {exc}", file=sys.stderr)
        return 1

    # `text` is ready to place in the agent's prompt; every memory section in it is fenced as
    # untrusted evidence. `sections` says what went in and whether anything was cut.
    print(assembled["text"])
    for section in assembled["sections"]:
        cut = " (truncated)" if section["truncated"] else ""
        print(f"# {section['name']}: {section['bytes']} bytes from {section['source']}{cut}",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
