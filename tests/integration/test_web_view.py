"""The web view in a real headless Chromium (Debian's, driven by Playwright) against a real
gateway (`minionsctl serve`) and a real daemon: sign-in and its refusals, each page against
what the socket reports, search -> record -> KB entry, a retract through its confirm step, a
requeue, XSS attempts that never run, the CSP header with no violation, POSTs refused without
CSRF or from another origin, and the pages with JavaScript off.

One daemon, one gateway and one browser for the module; each test has its own browser
context (its own cookies). The overview and a record page are saved as PNG files: into
docs/img/ with MINIONS_UPDATE_SCREENSHOTS=1, else into the test's temporary directory.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness import REPO
from tests.web_harness import CHROMIUM, GatewayProcess, start_browser
from tests.web_site import BAD_NAME, WRONG, XSS_TITLE, Session, Site

playwright_api = pytest.importorskip("playwright.sync_api")
if not Path(CHROMIUM).exists():  # scripts/test-tools/chromium.sh installs it
    pytest.skip(f"{CHROMIUM} is missing: run scripts/test-tools/chromium.sh",
                allow_module_level=True)


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    root = Path(tempfile.mkdtemp(prefix="mh-web-", dir="/tmp"))
    made = Site(root)
    try:
        made.seed()
        made.gateway = GatewayProcess(made.home).start()
        yield made
    finally:
        made.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as pw:
        chromium = start_browser(pw)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def admin(browser: Any, site: Site) -> Iterator[Session]:
    session = Session(browser, site)
    session.sign_in(site.tokens["admin"])
    yield session
    session.close()


def _text(session: Session) -> str:
    return session.page.inner_text("main")


# --- sign-in ----------------------------------------------------------------------------------

def test_sign_in_and_its_refusals(browser: Any, site: Site) -> None:
    s = Session(browser, site)
    try:
        response = s.goto("/records?status=all")
        assert s.page.url.startswith(f"{s.base}/login?next=")
        assert response.status == 200
        for token, words in (("mnt_" + "x" * 43, "not known"), ("nonsense", "not a minionsd"),
                             (site.tokens["revoked"], "revoked")):
            s.page.fill("#token", token)
            s.page.click("button[type=submit]")
            assert words in s.page.inner_text("[role=alert]")
            assert s.context.cookies() and not [c for c in s.context.cookies()
                                                if c["name"] == "minions_session"]
        s.page.fill("#token", site.tokens["reader"])
        s.page.click("button[type=submit]")
        assert s.page.url == f"{s.base}/records?status=all"  # back where it was going
        cookie = next(c for c in s.context.cookies() if c["name"] == "minions_session")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        assert site.tokens["reader"] not in json.dumps(s.context.cookies())
        # a read token offers no actions, and the server refuses them anyway
        record = site.record_titled("VPN for deploys")
        s.goto(f"/records/{record['id']}")
        assert s.page.locator("text=Retract…").count() == 0
        assert s.goto(f"/records/{record['id']}/retract").status == 403
        s.goto("/")
        assert s.page.locator("button:has-text('Consolidate now')").count() == 0
        s.page.click("button:has-text('Sign out')")
        assert "signed out" in s.page.inner_text("main")
        s.goto("/inbox")
        assert "/login" in s.page.url
        assert not s.violations()
    finally:
        s.close()
    # .json without a session is a 401 with a reason, not a login page
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(f"{site.gateway.url}/records.json", timeout=10)
    assert err.value.code == 401
    err.value.close()


def test_one_time_link_works_once(browser: Any, site: Site) -> None:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "minionsd.cli", "--home", str(site.home),
                          "web", "--no-open"], capture_output=True, text=True, check=True,
                         cwd=REPO, timeout=60)
    url = out.stdout.splitlines()[0]
    assert "/login?code=" in url and "mnt_" not in out.stdout
    running = subprocess.run([sys.executable, "-m", "minionsd.cli", "--home", str(site.home),
                              "web", "--no-open", "--listen", f"127.0.0.1:{site.gateway.port}"],
                             capture_output=True, text=True, check=True, cwd=REPO, timeout=60)
    assert f"The gateway is answering at {site.gateway.url}." in running.stdout, running.stdout
    path = url[url.index("/login"):]
    first, second = Session(browser, site), Session(browser, site)
    try:
        first.goto(path)
        assert first.page.url == f"{first.base}/"
        assert "Overview" in first.page.inner_text("h1")
        assert "web-local" in first.page.inner_text("header")
        second.goto(path)
        assert "already used" in second.page.inner_text("[role=alert]")
    finally:
        first.close()
        second.close()


# --- pages against the socket -----------------------------------------------------------------

def _screenshots(tmp_path: Path) -> Path:
    """Where the page screenshots go: docs/img/ (README and docs/web.md show them) when
    MINIONS_UPDATE_SCREENSHOTS=1, else the test's own directory, so a test run leaves the
    working tree as it found it."""
    if os.environ.get("MINIONS_UPDATE_SCREENSHOTS") == "1":
        return REPO / "docs" / "img"
    return tmp_path


def test_each_page_shows_what_the_socket_reports(admin: Session, site: Site,
                                                  tmp_path: Path) -> None:
    s = admin
    shots = _screenshots(tmp_path)
    status = site.call("status")
    s.goto("/")
    assert s.page.inner_text("[data-key='inbox.pending']") == str(status["inbox"]["pending"])
    overview = s.context.request.get("/index.json").json()
    assert overview["status"]["records"] == status["records"]
    assert [w["file"] for w in status["warnings"]] == ["pinned.md"]
    assert "pinned.md" in s.page.inner_text("section:has(#h-warn)")
    shots.mkdir(exist_ok=True)
    s.page.set_viewport_size({"width": 1100, "height": 800})
    # bytes, not path=: Playwright would write the file from a thread of its own
    (shots / "web-overview.png").write_bytes(s.page.screenshot(full_page=True))

    inbox = site.call("inbox.list")["notes"]
    quarantined = site.call("inbox.list", quarantined=True)["quarantined"]
    s.goto("/inbox")
    text = _text(s)
    for note in inbox:
        assert note["name"] in text
    assert "held" in text and quarantined[0]["reason"][:30] in text

    browse = site.call("memory.browse", status="all", limit=50)
    s.goto("/records?status=all")
    assert f"{browse['total']} records" in s.page.inner_text("#result-count")
    links = s.page.locator("table.records a.rec").evaluate_all(
        "els => els.map(e => e.getAttribute('href'))")
    assert links == [f"/records/{r['id']}" for r in browse["records"]]
    assert s.context.request.get("/records.json?status=all").json()["records"] == browse[
        "records"]

    wrong = site.record_titled("Build cache location")
    s.goto(f"/records/{wrong['id']}")
    assert WRONG.split(";")[0] in _text(s)
    assert "dallas" in s.page.inner_text("section:has(#h-recalled)")
    assert "T-42" in s.page.inner_text("section:has(#h-recalled)")
    (shots / "web-record.png").write_bytes(s.page.screenshot(full_page=True))

    entries = site.call("knowledge.list")["entries"]
    s.goto("/knowledge")
    for entry in entries:
        assert entry["path"] in _text(s)

    digest = site.call("digest.get")
    s.goto("/digest")
    assert s.page.locator("article.digest-section").count() == len(digest["sections"])

    s.goto("/agents")
    assert "Dallas" in _text(s)
    s.goto("/agents/dallas")
    selected = site.call("agents.get", id="dallas")["retrievals"][0]["selected_ids"]
    hrefs = s.page.locator("section:has(#h-retr) a[href^='/records/']").evaluate_all(
        "els => els.map(e => e.getAttribute('href'))")
    assert hrefs == [f"/records/{i}" for i in selected]

    site.call("pinned.set", text="Always run the tests before a push.")
    s.goto("/pinned")
    assert s.page.input_value("#text") == "Always run the tests before a push."
    assert not s.violations()


def test_try_a_task_is_not_an_agents_recall(admin: Session, site: Site) -> None:
    s = admin
    before = site.call("agents.get", id="dallas")["retrievals"]
    s.goto("/try")
    s.page.fill("#task", "where is the build cache on the runners")
    s.page.fill("#agent", "dallas")
    s.page.fill("#project", "atlas")
    s.page.click("button:has-text('Show the prompt')")
    wrong = site.record_titled("Build cache location")
    assert s.page.locator(f"section:has(#h-sel) a[href='/records/{wrong['id']}']").count() == 1
    assert "web-try:" in _text(s)
    rows = site.call("telemetry.retrievals", limit=1)["rows"]
    assert rows[0]["task_id"].startswith("web-try:") and rows[0]["agent"] == "dallas"
    assert site.call("agents.get", id="dallas")["retrievals"] == before
    assert not s.violations()


# --- the flows a person needs -----------------------------------------------------------------

def test_search_then_record_then_its_kb_entry(admin: Session, site: Site) -> None:
    s = admin
    s.goto("/records")
    s.page.fill("#q", "VPN deploys")
    s.page.press("#q", "Enter")
    s.page.wait_for_url(re.compile(r"/records\?q=VPN"))
    s.page.click("a.rec:has-text('VPN for deploys')")
    record = site.record_titled("VPN for deploys")
    assert s.page.url.endswith(f"/records/{record['id']}")
    kb = site.call("memory.provenance", id=record["id"])["kb_entries"][0]
    s.page.click(f"a:has-text('{kb}')")
    assert s.page.url.endswith("/" + kb)
    assert "scripts/deploy.sh" in _text(s)
    entry = s.context.request.get(s.page.url + ".json").json()["entry"]
    assert entry == site.call("knowledge.get", path=kb)
    s.page.go_back()
    archived = site.call("memory.provenance", id=record["id"])["archived"][0]
    s.page.click(f"a:has-text('{archived}')")
    assert "Deploys need the VPN on" in s.page.inner_text("pre.note")


def test_find_why_an_agent_was_told_something_and_retract_it(admin: Session,
                                                            site: Site) -> None:
    s = admin
    wrong = site.record_titled("Build cache location")
    s.goto("/agents/dallas")
    s.page.click(f"section:has(#h-retr) a[href='/records/{wrong['id']}']")
    s.page.click("text=Retract…")
    assert "Retract this record" in s.page.inner_text("h1")
    s.page.fill("#reason", "moved to object storage; see the newer record")
    s.page.click("form.confirm button[type=submit]")  # not ticked: the browser refuses
    assert site.call("memory.get", id=wrong["id"])["status"] == "active"
    s.page.check("input[name=confirm]")
    s.page.click("form.confirm button[type=submit]")
    assert "The record is retracted" in s.page.inner_text("[role=status]")
    got = site.call("memory.get", id=wrong["id"])
    assert got["status"] == "retracted"
    assert got["retracted_reason"] == "moved to object storage; see the newer record"
    assert "Retracted:" in _text(s)
    assert not s.violations()


def test_requeue_and_hold_from_the_inbox(admin: Session, site: Site) -> None:
    s = admin
    s.goto("/inbox")
    fixed = "# Fixed by hand\n\nThe bytes are UTF-8 now.\n"
    (site.home / "notes" / "quarantine" / BAD_NAME).write_text(fixed)  # as a person would
    row = s.page.locator("section:has(#quarantine) tr", has_text="bad<img")
    row.locator("button:has-text('Requeue')").click()
    assert "back in the inbox" in s.page.inner_text("[role=status]")
    assert not [q for q in site.call("inbox.list", quarantined=True)["quarantined"]
                if q["name"] == BAD_NAME]
    assert (site.home / "notes" / "inbox" / BAD_NAME).read_text() == fixed
    drafted = s.page.locator("tr", has_text=site.drafted)
    assert "held by its front matter" in drafted.inner_text()
    assert drafted.locator("button").count() == 0  # inbox.hold cannot release it
    held = next(n for n in site.call("inbox.list")["notes"]
                if n["held"] and not n["held_by_file"])
    s.page.locator("tr", has_text=held["name"]).locator("button:has-text('Release')").click()
    assert "released" in s.page.inner_text("[role=status]")
    assert not next(n for n in site.call("inbox.list")["notes"]
                    if n["name"] == held["name"])["held"]
    s.page.locator("tr", has_text=held["name"]).locator("button:has-text('Hold')").click()
    assert "is held" in s.page.inner_text("[role=status]")
    assert next(n for n in site.call("inbox.list")["notes"] if n["name"] == held["name"])["held"]
    assert not s.violations()


def test_supersede_and_purge_through_their_confirm_steps(admin: Session, site: Site) -> None:
    s = admin
    old = site.call("memory.add", body="Staging lives on host stg-1.", type="semantic",
                    scope="global", trust="agent", source="test", title="Staging host")["id"]
    new = site.call("memory.add", body="Staging moved to host stg-2.", type="semantic",
                    scope="global", trust="agent", source="test", title="Staging host, now")["id"]
    s.goto(f"/records/{old}")
    s.page.click("text=Supersede…")
    s.page.fill("#by", new)
    s.page.check("input[name=confirm]")
    s.page.click("form.confirm button[type=submit]")
    assert "superseded" in s.page.inner_text("[role=status]")
    assert site.call("memory.get", id=old)["superseded_by"] == new
    assert new in s.page.inner_text("section:has(#h-chain)")
    s.goto(f"/records/{new}")
    assert old in s.page.inner_text("section:has(#h-chain)")  # the chain, both ways
    s.goto(f"/records/{old}")
    s.page.click("text=Pin…")
    s.page.check("input[name=confirm]")
    s.page.click("form.confirm button[type=submit]")
    assert "pinned" in s.page.inner_text("[role=status]")
    pinned = site.call("memory.get", id=old)
    assert pinned["pinned"] and pinned["status"] == "active"
    s.goto(f"/records/{new}")
    s.page.click("text=Purge…")
    s.page.fill("#reason", "a leaked host name")
    s.page.check("input[name=confirm]")
    s.page.click("form.confirm button[type=submit]")
    assert "purged" in s.page.inner_text("h1")
    assert s.goto(f"/records/{new}").status == 404
    assert "a leaked host name" in _text(s)
    assert not s.violations()


# --- untrusted text stays text ----------------------------------------------------------------

def test_xss_attempts_never_run(admin: Session, site: Site) -> None:
    s = admin
    record = site.record_titled(XSS_TITLE)
    kb = site.call("memory.provenance", id=record["id"])["kb_entries"][0]
    archived = site.call("memory.provenance", id=record["id"])["archived"][0]
    pages = [f"/records/{record['id']}", "/records?q=jittered+backoff", "/records?status=all",
             "/" + kb, "/knowledge", "/digest", "/inbox",
             "/archive/" + urllib.request.quote(archived.rsplit("/", 1)[1]),
             "/try?task=" + urllib.request.quote("<script>window.__pwned='try'</script>"),
             f"/records?q={urllib.request.quote(XSS_TITLE)}"]
    for path in pages:
        s.goto(path)
        s.page.mouse.move(10, 10)
        assert s.page.evaluate("window.__pwned") is None, path
        assert s.page.locator("main script, main iframe, main svg, main img").count() == 0, path
        assert s.page.locator("a[href^='javascript:' i]").count() == 0, path
        assert s.page.locator("[onerror], [onload], [onmouseover]").count() == 0, path
    s.goto(f"/records/{record['id']}")
    assert XSS_TITLE in s.page.inner_text("h1")  # shown as the text it is
    assert "<script>window.__pwned = 'script'</script>" in _text(s)
    assert s.page.title().startswith("</title><script>")
    # the CSP would have stopped the remote image, but the page never asks for it
    assert not s.violations()


def test_every_response_carries_the_csp_and_headers(admin: Session, site: Site) -> None:
    s = admin
    record = site.record_titled("VPN for deploys")
    for path in ("/", "/inbox", "/records", f"/records/{record['id']}",
                 f"/records/{record['id']}/retract", "/knowledge", "/digest", "/agents",
                 "/agents/dallas", "/try", "/pinned", "/login", "/static/style.css",
                 "/records.json", "/records/M-missing"):
        response = s.goto(path)
        headers = response.headers
        assert headers["content-security-policy"] == (
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"), path
        assert headers["x-content-type-options"] == "nosniff", path
        assert headers["referrer-policy"] == "same-origin", path
    assert response.status == 404
    assert not s.violations()


def test_pages_name_an_inline_icon_so_no_browser_asks_for_favicon_ico(admin: Session,
                                                                        site: Site) -> None:
    for path in ("/", "/records", "/login"):
        admin.goto(path)
        icons = admin.page.evaluate(
            "[...document.querySelectorAll('link[rel~=icon]')].map(l => l.getAttribute('href'))")
        assert icons == ["data:,"], (path, icons)
    assert not admin.violations()


# --- POSTs ----------------------------------------------------------------------------------

def test_every_post_is_refused_without_csrf_or_from_another_origin(admin: Session,
                                                                   site: Site) -> None:
    s = admin
    record = site.record_titled("VPN for deploys")
    s.goto("/")
    csrf = s.page.locator("input[name=csrf]").first.input_value()
    request = s.context.request
    own = {"Origin": s.base}
    posts = [("/consolidate", {}), ("/inbox/hold", {"name": "x.md", "held": "true"}),
             ("/inbox/requeue", {"name": "x.md"}), ("/pinned", {"text": "pwned"}),
             (f"/records/{record['id']}/retract", {"reason": "csrf", "confirm": "yes"}),
             (f"/records/{record['id']}/purge", {"reason": "csrf", "confirm": "yes"}),
             ("/logout", {})]
    for path, form in posts:
        for headers, data in (
            (own, form),                                            # no CSRF token
            (own, form | {"csrf": "0" * 64}),                       # a wrong one
            ({"Origin": "http://evil.example"}, form | {"csrf": csrf}),
            ({"Origin": "null"}, form | {"csrf": csrf}),
            ({"Sec-Fetch-Site": "cross-site"}, form | {"csrf": csrf}),  # no Origin
        ):
            answer = request.post(path, form=data, headers=headers, max_redirects=0)
            assert answer.status == 403, (path, headers, data.get("csrf"))
    assert site.call("memory.get", id=record["id"])["status"] == "active"
    assert "pwned" not in site.call("pinned.get")["text"]
    # the login form is guarded too: its own double-submit token and the Origin
    assert request.post("/login", form={"token": site.tokens["admin"]},
                        headers=own, max_redirects=0).status == 403
    assert request.post("/login", form={"token": site.tokens["admin"]},
                        headers={"Origin": "http://evil.example"},
                        max_redirects=0).status == 403
    # and the same request from our own page with its token goes through
    ok = request.post("/inbox/hold", form={"name": "nope.md", "held": "true", "csrf": csrf},
                      headers={"Sec-Fetch-Site": "same-origin"}, max_redirects=0)
    assert ok.status == 404  # past the guard: the daemon says there is no such note


# --- without JavaScript, narrow, dark, by keyboard ------------------------------------------

def test_pages_work_without_javascript(browser: Any, site: Site) -> None:
    s = Session(browser, site, java_script_enabled=False)
    try:
        s.sign_in(site.tokens["admin"])
        assert "Overview" in s.page.inner_text("h1")
        batches = site.call("status")["consolidation"]["batches"]
        s.page.click("button:has-text('Consolidate now')")
        assert "Consolidation ran" in s.page.inner_text("[role=status]")
        assert site.call("status")["consolidation"]["batches"] == batches + 1
        s.goto("/pinned")
        s.page.fill("#text", "Pinned from the browser, without scripts.")
        s.page.click("button:has-text('Save')")
        assert "saved" in s.page.inner_text("[role=status]")
        assert site.call("pinned.get")["text"] == "Pinned from the browser, without scripts."
        target = site.call("memory.add", body="a record to expire without scripts",
                           type="semantic", scope="global", trust="agent", source="test",
                           title="No-JS expiry")["id"]
        s.goto("/records?q=scripts+expire")
        s.page.click("a.rec:has-text('No-JS expiry')")
        s.page.click("text=Expire…")
        s.page.check("input[name=confirm]")
        s.page.click("form.confirm button[type=submit]")
        assert "expired" in s.page.inner_text("[role=status]")
        assert site.call("memory.get", id=target)["status"] == "expired"
        for path in ("/inbox", "/knowledge", "/digest", "/agents", "/pinned",
                     "/try?task=build+cache"):
            assert s.goto(path).status == 200, path
        assert not s.violations()
    finally:
        s.close()


def test_narrow_dark_and_keyboard(browser: Any, site: Site) -> None:
    s = Session(browser, site, viewport={"width": 360, "height": 740}, color_scheme="dark")
    try:
        s.sign_in(site.tokens["admin"])
        s.goto("/records?status=all")
        overflow = s.page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 1
        background = s.page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert sum(int(x) for x in re.findall(r"\d+", background)[:3]) < 150  # dark
        s.page.keyboard.press("Tab")
        assert s.page.evaluate("document.activeElement.textContent") == "Skip to content"
        s.page.keyboard.press("Tab")
        s.page.keyboard.press("Tab")
        outline = s.page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
        assert outline not in ("none", "")
        status_cell = s.page.locator("table.records .badge").first.inner_text()
        assert status_cell in ("active", "superseded", "retracted", "expired")  # a word
        assert not s.violations()
    finally:
        s.close()


def test_a_records_agent_link_works_for_an_agent_nobody_configured(admin: Session,
                                                                   site: Site) -> None:
    """A record written by an agent that is not configured and never recalled anything: its
    agent link opens that agent's records, not a 404."""
    added = site.call("memory.add", body="Ghost agents write notes too.", type="semantic",
                      scope="global", trust="agent", source="test", agent="ghost-writer")
    s = admin
    s.goto(f"/records/{added['id']}")
    s.page.click("a:has-text('ghost-writer')")
    s.page.wait_for_load_state()
    assert s.page.url.endswith("/records?agent=ghost-writer")
    assert s.page.locator(f"a[href='/records/{added['id']}']").count() == 1


def test_a_stopped_daemon_is_a_page_that_says_so(admin: Session, site: Site) -> None:
    """Last in the module: it stops the daemon (the gateway stays up)."""
    s = admin
    site.daemon.stop()
    response = s.goto("/records")
    assert response.status == 503
    assert "not running" in s.page.inner_text("h1")
    assert "Start it with `minionsd`" in s.page.inner_text("[role=alert]")
    answer = s.context.request.get("/records.json")
    assert answer.status == 503 and "not running" in answer.json()["error"]["title"]

