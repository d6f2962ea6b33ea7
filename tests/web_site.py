"""The seeded home and the watched browser context of the web view's browser tests
(tests/integration/test_web_view.py): one daemon with notes, records, knowledge, telemetry, a
quarantined file and tokens, and a Playwright context that records console errors, page
errors, CSP violations and any request to another host."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.harness import DaemonProcess, wait_for
from tests.web_harness import GatewayProcess

XSS_TITLE = "</title><script>window.__pwned='title'</script><b>bold?"
XSS_BODY = """Retry storms need a jittered backoff.

<script>window.__pwned = 'script'</script>
<img src=x onerror="window.__pwned='img'">
<svg onload="window.__pwned='svg'"></svg>
[harmless looking](javascript:window.__pwned='mdlink')
<a href="javascript:window.__pwned='anchor'">raw anchor</a>
<iframe src="https://example.invalid/"></iframe>
![remote image](https://example.invalid/pixel.png)
"""
BAD_NAME = "bad<img src=x onerror=window.__pwned='name'>.md"
WRONG = "The build cache lives in /var/cache/build on the runners; wipe it on every deploy."
WATCH = """
(() => {
  window.__csp = [];
  document.addEventListener('securitypolicyviolation',
    (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));
})();
"""


class Site:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.home.mkdir(parents=True)
        (self.home / "config.toml").write_text(
            '[agents.dallas]\nname = "Dallas"\n\n[engine]\ninbox_max_wait_s = 0\n'
            "auto_consolidate_memory = false\n")
        self.daemon = DaemonProcess(self.home).start()
        self.gateway: GatewayProcess | None = None
        self.tokens: dict[str, str] = {}
        self.drafted = ""

    def call(self, method: str, **params: Any) -> Any:
        return self.daemon.call(method, **params)

    def seed(self) -> None:
        call = self.call
        call("inbox.submit", body=WRONG, author="dallas", title="Build cache location",
             project="atlas")
        call("inbox.submit", body=XSS_BODY, author="ripley", title=XSS_TITLE)
        call("inbox.submit", body="Deploys need the VPN on. See scripts/deploy.sh.",
             author="dallas", title="VPN for deploys", project="atlas")
        done = call("consolidation.run", force=True)
        assert done["records_upserted"] == 3, done
        call("memory.add", body="The build cache moved to object storage; never wipe it.",
             type="semantic", scope="global", trust="human", source="test",
             title="Build cache, current")
        call("knowledge.create", category="conventions", title="Commit style",
             body="Small commits, **imperative** subjects.", author="ops")
        call("memory.retrieve", task={"id": "T-42", "title": "where is the build cache on "
                                      "the runners"}, project="atlas", agent="dallas")
        held = call("inbox.submit", body="waiting for review", author="dallas",
                    title="Held note")
        call("inbox.hold", name=held["name"], held=True)
        self.drafted = call("inbox.submit", body="a draft", author="dallas",
                            title="Draft held by its file", hold=True)["name"]
        (self.home / "notes" / "inbox" / BAD_NAME).write_bytes(b"broken \xff\xfe bytes\n")
        wait_for(lambda: call("maintenance.run", job="rescan") and call(
            "inbox.list", quarantined=True)["quarantined"], timeout=20, interval=0.2,
                 what="the undecodable note to be quarantined")
        (self.home / "pinned.md").write_bytes(b"Run the tests \xff first.\n")  # hand-edited
        call("pinned.get")
        for name, scopes in (("admin", ["admin"]), ("reader", ["read"]),
                             ("revoked", ["read"])):
            self.tokens[name] = call("token.create", name=f"t-{name}", agent=f"a-{name}",
                                     scopes=scopes)["token"]
        call("token.revoke", name="t-revoked")

    def record_titled(self, title: str) -> dict[str, Any]:
        found = self.call("memory.browse", status="all", limit=200)["records"]
        return next(r for r in found if r["title"] == title)

    def stop(self) -> None:
        if self.gateway is not None:
            self.gateway.stop()
        self.daemon.stop()


class Session:
    """A browser context of its own, watching for console errors, page errors, CSP
    violations and any request to another host."""

    def __init__(self, browser: Any, site: Site, **options: Any) -> None:
        self.site = site
        self.base = site.gateway.url
        self.context = browser.new_context(base_url=self.base, **options)
        self.scripts = options.get("java_script_enabled", True)
        self.problems: list[str] = []
        self.context.add_init_script(WATCH)
        self.context.route(re.compile(r"^(?!http://127\.0\.0\.1:\d+/).*"), self._foreign)
        self.page = self.context.new_page()
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda exc: self.problems.append(f"pageerror: {exc}"))

    def _foreign(self, route: Any) -> None:
        self.problems.append(f"request to another host: {route.request.url}")
        route.abort()

    def _console(self, message: Any) -> None:
        # A refusal the test asked for (401, 403, 404) is logged as a failed load: expected.
        if message.type in ("error", "warning") and not message.text.startswith(
                "Failed to load resource: the server responded with a status of 4"):
            self.problems.append(f"console {message.type}: {message.text}")

    def goto(self, path: str) -> Any:
        response = self.page.goto(path)
        assert response is not None
        return response

    def sign_in(self, token: str) -> None:
        self.goto("/login")
        self.page.fill("#token", token)
        self.page.click("button[type=submit]")
        self.page.wait_for_load_state()

    def violations(self) -> list[str]:
        found = list(self.problems)
        if self.scripts:
            found += self.page.evaluate("window.__csp || []")
        return found

    def close(self) -> None:
        self.context.close()
