"""memory.retrieve end to end: what the score cutoff keeps, and restatements packed once."""

from __future__ import annotations

from pathlib import Path

from minionsd.text.fence import FENCE_NAME
from tests.integration.test_recall import add, configure

FILLER = [
    "Checkout page renders the basket summary from the cached cart.",
    "The payment provider sandbox resets every night at midnight.",
    "Checkout analytics events are batched every ten seconds.",
    "Retries in the mobile app use exponential backoff.",
    "The admin console lists failed payments for the last week.",
    "Payment provider webhooks are verified with the shared signing secret.",
]


def _selected(d, task: dict) -> list[str]:
    return [s["id"] for s in d.call("memory.retrieve", task=task, project="shop")["selected"]]


def test_a_note_naming_the_tasks_error_code_is_not_cut_for_a_strong_first_match(
        make_daemon, short_home: Path) -> None:
    """The task names an error code; the one note about it shares nothing else with the task,
    while another note matches the rest of it word for word. The note about the code is packed
    at the default cutoff, and so is the strong one; filler sharing common words is not."""
    configure(short_home, "")
    d = make_daemon()
    strong = add(d, "Checkout retries after a payment provider timeout must reuse the payment "
                 "intent, or the customer is charged twice: checkout retries are idempotent "
                 "only with the same intent id. Stripe idempotency keys expire after a day.",
                 title="Checkout retries after a payment provider timeout: idempotent intents",
                 scope="project:shop")
    code = add(d, "QX-4471 is the ledger's daily quota refusal; an operator raises the quota "
               "by hand.", scope="project:shop")
    for body in FILLER:
        add(d, body, scope="project:shop")
    for i in range(30):
        add(d, f"Report job {i} writes its nightly summary to the warehouse bucket.",
            scope="project:shop")
    task = {"id": "W-1", "title": "Checkout retries after a payment provider timeout fail "
            "with QX-4471", "description": "Checkout retries time out at the payment provider "
            "and the customer is charged twice; the intent id changes between retries, "
            "idempotency keys look expired."}
    d.call("config.set", key="engine.memory_retrieval_min_score_ratio", value=0)
    scores = {s["id"]: s["score"] for s in d.call("memory.retrieve", task=task,
                                                   project="shop")["selected"]}
    assert max(scores, key=scores.__getitem__) == strong
    assert scores[code] < 0.45 * scores[strong]  # far below the default cutoff's floor
    d.call("config.set", key="engine.memory_retrieval_min_score_ratio", value=0.45)
    # The note about the code is packed; filler sharing common words is still left out.
    assert _selected(d, task) == [strong, code]
    d.call("config.set", key="engine.memory_retrieval_min_score_ratio", value=0.9)
    assert _selected(d, task) == [strong, code]


JOURNAL = ("Journal entries must balance: post_entry() in ledger/post.py rejects a "
           "JournalEntry whose debit and credit lines differ, and the batch is rolled back "
           "with error LEDGER_417.")
JOURNAL_TASK = {"id": "W-2", "title": "post_entry() rejects a JournalEntry with LEDGER_417",
                "description": "Debit and credit lines of an imported journal entry differ."}


def test_a_restated_fact_is_packed_once(make_daemon, short_home: Path) -> None:
    """Two notes state one fact in other words (another title, sentences reordered, the same
    identifiers, error code and path): the pack holds the better-scored one only."""
    configure(short_home, "[engine]\nmemory_retrieval_min_score_ratio = 0")
    d = make_daemon()
    first = add(d, JOURNAL, title="Double-entry invariant", scope="project:shop")
    restated = add(d, "ledger/post.py rolls the batch back with error LEDGER_417 when a "
                   "JournalEntry has debit and credit lines that differ: post_entry() "
                   "rejects unbalanced entries.", title="Journal transactions must balance",
                   scope="project:shop", trust="agent")
    add(d, "Invoices are numbered per tenant.", scope="project:shop")
    ids = _selected(d, JOURNAL_TASK)
    assert len({first, restated} & set(ids)) == 1, ids
    d.call("config.set", key="engine.memory_retrieval_min_score_ratio", value=0.45)
    assert len({first, restated} & set(_selected(d, JOURNAL_TASK))) == 1


def test_a_restatement_left_out_is_named_after_the_kept_record_inside_the_fence(
        make_daemon, short_home: Path) -> None:
    """The restatement not packed is named on an `also:` line at the end of the kept record,
    inside the fence, and the reported bytes count the line."""
    configure(short_home, "")
    d = make_daemon()
    first = add(d, JOURNAL, title="Double-entry invariant", scope="project:shop")
    restated = add(d, "ledger/post.py rolls the batch back with error LEDGER_417 when a "
                   "JournalEntry has debit and credit lines that differ: post_entry() "
                   "rejects unbalanced entries.", title="Journal transactions must balance",
                   scope="project:shop", trust="agent")
    add(d, "Invoices are numbered per tenant.", scope="project:shop")
    res = d.call("memory.retrieve", task=JOURNAL_TASK, project="shop")
    kept, = [s["id"] for s in res["selected"] if s["id"] in (first, restated)]
    other = restated if kept == first else first
    text = res["text"]
    item = text[text.index(f"[id={kept} "):]
    item = item[:item.index("\n\n")] if "\n\n" in item else item
    assert f"\nalso: {other}" in item
    opening, closing = f"<{FENCE_NAME} ", f"</{FENCE_NAME}>"
    assert text.index(opening) < text.index(f"also: {other}") < text.rindex(closing)
    sizes = [s["bytes"] for s in res["selected"]]
    assert res["bytes"] == sum(sizes) + 2 * (len(sizes) - 1)  # the line counts in its item


def test_near_copies_that_differ_in_a_number_or_identifier_are_both_packed(
        make_daemon, short_home: Path) -> None:
    """One word changed in a long note is the same note, unless the word is a number, an
    identifier or a path: then the two notes state two facts and both are packed."""
    configure(short_home, "[engine]\nmemory_retrieval_min_score_ratio = 0")
    d = make_daemon()
    first = add(d, JOURNAL, title="Double-entry invariant", scope="project:shop")
    variants = [add(d, JOURNAL.replace(old, new), scope="project:shop", trust="agent")
                for old, new in (("LEDGER_417", "LEDGER_418"), ("post_entry", "post_entries"),
                                 ("ledger/post.py", "ledger/import.py"))]
    copy = add(d, JOURNAL.replace("rolled back", "undone"), scope="project:shop",
               trust="agent")
    ids = _selected(d, JOURNAL_TASK)
    assert first in ids and set(variants) <= set(ids), ids
    assert copy not in ids


def _add_background(d, word: str) -> None:
    """The shared filler notes and 30 report notes naming `word`: common words are in many
    notes, as in any real memory, so they are not rare."""
    for body in FILLER:
        add(d, body, scope="project:shop")
    for i in range(30):
        add(d, f"Report job {i} writes a nightly summary to the warehouse bucket, and the "
            f"{word} of the report is shown in the group page for a day or two from then on.",
            scope="project:shop")


def _scores_without_cutoff(d, task: dict) -> dict[str, float]:
    """Each selected record's score for `task` with the cutoff off (ratio 0)."""
    d.call("config.set", key="engine.memory_retrieval_min_score_ratio", value=0)
    return {s["id"]: s["score"] for s in d.call("memory.retrieve", task=task,
                                                project="shop")["selected"]}


def _packed_at_the_default_cutoff(d, task: dict, best_id: str, others: tuple[str, ...],
                                  band: tuple[float, float]) -> list[str]:
    """With the cutoff off, `best_id` scores best and each of `others` scores within `band`
    (shares of the default floor, 0.45 of the best score); then the pack at the default
    cutoff."""
    scores = _scores_without_cutoff(d, task)
    best = scores[best_id]
    assert max(scores.values()) == best
    low, high = band
    for other in others:
        assert low * 0.45 * best <= scores[other] < high * 0.45 * best, (scores, other)
    d.call("config.set", key="engine.memory_retrieval_min_score_ratio", value=0.45)
    return _selected(d, task)


INCIDENT_TASK = {"id": "W-5", "title": "Ingest consumers keep rebalancing and lag grows",
                 "description": "The ingest consumers leave and rejoin the group every few "
                 "minutes and the lag keeps growing."}


def _add_incident(d) -> str:
    """The incident INCIDENT_TASK is about: its consumer group, topic, setting and sink are
    the rare things a related note may name."""
    return add(d, "Ingest consumers in group tw-ingest-v2 kept rebalancing: they left and "
               "rejoined the group every few minutes and the lag on readings-v2 grew to 38 "
               "million. A Clickhouse flush outlasted max_poll_interval, the broker evicted "
               "the member, and each rejoin started another flush.",
               title="Ingest consumers keep rebalancing, lag grows", scope="project:shop")


def test_a_note_about_the_same_thing_as_the_first_match_is_not_cut(
        make_daemon, short_home: Path) -> None:
    """The first match is the incident; a second note shares few words with the task but
    names the incident's rare things (its consumer group, topic, setting and sink), so it
    scores below the cutoff's floor. It is packed at the default cutoff; a note in the same
    score band that shares only the task's and common words is not."""
    configure(short_home, "")
    d = make_daemon()
    incident = _add_incident(d)
    related = add(d, "The Clickhouse sink caps a flush at 50,000 rows so it ends inside "
                  "max_poll_interval; otherwise the broker evicts the ingest consumer from "
                  "tw-ingest-v2 and readings-v2 falls behind.",
                  title="Sink flush size", scope="project:shop")
    unrelated = add(d, "The billing consumers read invoices from the queue in order; "
                    "a slow invoice holds up the next ones for a few minutes.",
                    title="Billing queue order", scope="project:shop")
    _add_background(d, "lag")
    # Both are below the floor (0.45 of the best) and above the last floor (0.7 of it).
    assert _packed_at_the_default_cutoff(d, INCIDENT_TASK, incident, (related, unrelated),
                                         (0.7, 1.0)) == [incident, related]


RETENTION_TASK = {"id": "W-6", "title": "Extend the readings retention to two years",
                  "description": "Product wants two years of readings history. Change the "
                  "retention of the readings table and estimate the extra disk it needs."}


def test_a_note_on_another_side_of_the_task_is_not_cut(make_daemon, short_home: Path) -> None:
    """The first match is about the task's retention change; a second note is about a side of
    the task it does not cover (the disk, a word few notes hold) and names one rare thing of
    the first match (its cluster), so it is about the same system: it is packed though it
    scores below the cutoff's floor. Two notes in the same score band are not: one holds
    another rare word of the task but nothing of the first match, one names the first
    match's cluster but adds no side of the task the pack lacks."""
    configure(short_home, "")
    d = make_daemon()
    first = add(d, "The readings table keeps 90 days: its retention is a TTL set in "
                "migration 0013, and a retention change goes through a new migration that "
                "alters the TTL. Rows past the TTL are dropped when parts merge on the "
                "borealis cluster.", title="Readings retention", scope="project:shop")
    disk = add(d, "The borealis cluster has four nodes with 2 TB of disk each, half used.",
               title="Cluster size", scope="project:shop")
    elsewhere = add(d, "The billing history export writes a monthly file for finance.",
                    title="Billing export", scope="project:shop")
    same_cluster = add(d, "The borealis cluster is upgraded on the first Monday of each "
                       "month; the readings ingest pauses for it.", title="Upgrades",
                       scope="project:shop")
    _add_background(d, "table")
    assert _packed_at_the_default_cutoff(d, RETENTION_TASK, first,
                                         (disk, elsewhere, same_cluster),
                                         (0.7, 1.0)) == [first, disk]


def test_a_note_naming_four_rare_things_of_the_first_match_is_packed_further_down(
        make_daemon, short_home: Path) -> None:
    """A note that names four rare things of the first match (its consumer group, topic,
    setting and sink) but only one word of the task scores under 0.7 of the cutoff's floor:
    it is packed down to half of the floor. A note in the same band that shares fewer rare
    things with the first match is not."""
    configure(short_home, "")
    d = make_daemon()
    incident = _add_incident(d)
    related = add(d, "Sizing note: max_poll_interval is 300000 ms on the broker for "
                  "tw-ingest-v2; the Clickhouse batch of readings-v2 is sized to end well "
                  "inside it, with headroom for slow disks and large partitions.",
                  title="Poll interval sizing", scope="project:shop")
    fewer = add(d, "Sizing note: the Clickhouse batch of the billing stream is sized to end "
                "well inside the broker timeout, with headroom for slow disks and large "
                "partitions; a flush takes two minutes.",
                title="Billing batch sizing", scope="project:shop")
    _add_background(d, "lag")
    # Both are below the last floor (0.7 of the floor) and above half of the floor.
    assert _packed_at_the_default_cutoff(d, INCIDENT_TASK, incident, (related, fewer),
                                         (0.5, 0.7)) == [incident, related]
