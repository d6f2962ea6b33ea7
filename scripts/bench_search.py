"""memory.search in-process on a kept database file, this checkout beside others, alternating.

    .venv/bin/python scripts/bench_search.py DB [--code DIR ...] [--queries 600] [--rounds 3]
                                             [--classes 5000] [--instructions 100]
    .venv/bin/python scripts/bench_search.py DB --check 300   # pages against the plain query

DB is a state.db a bench run kept (`scripts/bench.py --only search --keep`, then
<root>/r/engine/state.db); it is opened read-only. Each code directory (this checkout first,
then every --code, e.g. /tmp/old with its own .venv) runs `records.search` in a child process
of its own Python for one chunk of the bench's queries (scripts/bench_data.py, limit 20), then
the next directory takes the same chunk, so every version sees the same minutes of a shared
machine. Figures per version: CPU time per query (the child's thread CPU, steadier than wall
on a busy machine) and wall time, p50/p90/p99/max, with the load average. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

CHILD = r"""
import json, sys, time
from datetime import UTC, datetime
sys.path.insert(0, sys.argv[1])
from minionsd.storage import records
from minionsd.storage.database import connect
conn = connect(sys.argv[2], readonly=True)
queries = json.loads(sys.stdin.read())
out = []
for query in queries:
    params = {"query": query, "type": None, "scope": None, "status": None, "project": None,
              "agent": None, "limit": 20}
    cpu, wall = time.thread_time_ns(), time.perf_counter_ns()
    total = records.search(conn, params, datetime.now(UTC))["total"]
    out.append((time.thread_time_ns() - cpu, time.perf_counter_ns() - wall, total))
print(json.dumps(out))
"""


def python_of(code: Path) -> str:
    venv = code / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def run_chunk(code: Path, db: Path, queries: list[str]) -> list[tuple[int, int, int]]:
    result = subprocess.run([python_of(code), "-c", CHILD, str(code), str(db)],
                            input=json.dumps(queries), capture_output=True, text=True,
                            cwd=code, check=True)
    return [tuple(row) for row in json.loads(result.stdout)]


def instructions(code: Path, db: Path, queries: list[str]) -> float:
    """CPU instructions per `records.search` for `code` under callgrind: the child runs once
    with the first 20 queries (warm-up) and once with all of them; the difference over the
    rest is the figure (PYTHONHASHSEED=0; barely moves with the machine's load)."""
    def refs(chosen: list[str]) -> int:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
             python_of(code), "-c", CHILD, str(code), str(db)],
            input=json.dumps(chosen), capture_output=True, text=True, cwd=code, check=True,
            env=dict(os.environ, PYTHONHASHSEED="0"))
        found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
        if found is None:
            raise SystemExit(f"no instruction count from valgrind:\n{done.stderr[-2000:]}")
        return int(found.group(1).replace(",", ""))

    return (refs(queries) - refs(queries[:20])) / max(1, len(queries) - 20)


def pct(values: list[int], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, -(-len(ordered) * p // 100) - 1))] / 1e6


CLASSES = r"""
import json, sys, time
from datetime import UTC, datetime
sys.path.insert(0, sys.argv[1])
from minionsd.storage import search
from minionsd.storage.database import connect
conn = connect(sys.argv[2], readonly=True)
cap = int(sys.argv[3])
bounded = {}
plain_bounded = search._bounded
def spy(*args):
    found = plain_bounded(*args)
    bounded["used"] = found is not None and found[0] is not None
    return found
search._bounded = spy
spent = {}
def timed(name):
    plain = getattr(search, name)
    def run(*args):
        began = time.thread_time_ns()
        try:
            return plain(*args)
        finally:
            spent[name] = spent.get(name, 0) + time.thread_time_ns() - began
    setattr(search, name, run)
timed("_rank_active")
timed("_count_active")
out = []
for query in json.loads(sys.stdin.read()):
    bounded.clear()
    spent.clear()
    cpu = time.thread_time_ns()
    search.search(conn, {"query": query, "limit": 20}, datetime.now(UTC))
    cpu = time.thread_time_ns() - cpu
    phrases = search.ftsquery.search_phrases(query)
    few = not phrases or max(search.phrase_counts(conn, phrases, search.CHEAP)) < search.CHEAP
    kind = "few" if few else "bounded" if bounded.get("used") else "plain"
    capped = bound = 0
    if kind == "plain":  # the same page ranked among the newest `cap` matches only
        expression = " OR ".join(phrases)
        capped = time.thread_time_ns()
        conn.execute(f"SELECT rowid, s FROM (SELECT rowid, bm25(memory_fts, {search.WEIGHTS}) "
                     "AS s FROM memory_fts WHERE memory_fts MATCH ? ORDER BY rowid DESC "
                     "LIMIT ?) ORDER BY s LIMIT 50", (expression, cap)).fetchall()
        ranked = time.thread_time_ns() - capped
        conn.execute("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH ?",
                     (expression,)).fetchone()
        capped = time.thread_time_ns() - capped
        bound = time.thread_time_ns()  # and `total` exact up to 1,000 only
        conn.execute("SELECT count(*) FROM (SELECT 1 FROM memory_fts WHERE memory_fts MATCH ? "
                     "LIMIT 1000)", (expression,)).fetchone()
        bound = time.thread_time_ns() - bound + ranked
        # The rest of the query's work (phrase counts, page rows) stays.
        rest = cpu - sum(spent.values())
        capped, bound = capped + rest, bound + rest
    out.append((kind, cpu, capped, bound))
print(json.dumps(out))
"""
LABELS = {"few": "every term in fewer than CHEAP records", "bounded": "bounded page (rare "
          "terms decide)", "plain": "plain: every match ranked"}


def run_classes(db: Path, queries: list[str], cap: int) -> None:
    """Where this checkout's time goes, by the way a query's page is found, and what ranking
    only the newest `cap` matches (a contract change, measured only) would cost instead."""
    result = subprocess.run([python_of(REPO), "-c", CLASSES, str(REPO), str(db), str(cap)],
                            input=json.dumps(queries), capture_output=True, text=True,
                            cwd=REPO, check=True)
    rows = json.loads(result.stdout)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"   by kind of query (this checkout, CPU ms; load average {load}):")
    for kind, label in LABELS.items():
        cpu = [row[1] for row in rows if row[0] == kind]
        if cpu:
            print(f"   {label:42} {len(cpu):4} ({len(cpu) / len(rows):4.0%})  p50 "
                  f"{pct(cpu, 50):6.1f}  p90 {pct(cpu, 90):6.1f}  p99 {pct(cpu, 99):6.1f}")
    for column, label in ((2, " + count"), (3, " + count to 1,000")):
        capped = [row[column] for row in rows if row[0] == "plain"]
        if capped:
            label = "plain, ranked among the newest " + format(cap, ",") + label
            print(f"   {label:42} {len(capped):4}         p50 {pct(capped, 50):6.1f}  p90 "
                  f"{pct(capped, 90):6.1f}  p99 {pct(capped, 99):6.1f}")
    # The whole mix as the contract change would serve it: plain queries at their capped
    # cost (with the rest of their work: phrase counts, page rows), the others as now.
    for column, label in ((2, "every query, plain ones capped + count"),
                          (3, "every query, plain ones capped + count to 1,000")):
        mixed = [row[column] if row[0] == "plain" else row[1] for row in rows]
        print(f"   {label:42} {len(mixed):4}        p50 {pct(mixed, 50):6.1f}  p90 "
              f"{pct(mixed, 90):6.1f}  p99 {pct(mixed, 99):6.1f}")


CHECK = r"""
import json, random, sys
from datetime import UTC, datetime
sys.path.insert(0, sys.argv[1])
from minionsd.storage import records
from minionsd.storage.database import connect
from minionsd.storage.record_wire import plain_snippet
from minionsd.text import ftsquery
conn = connect(sys.argv[2], readonly=True)
now = datetime.now(UTC)
EFFECTIVE = records.EFFECTIVE_STATUS.replace(":now", "?")

def plain(query, limit):
    # The plain query: every match ranked, sorted by (rank, id), cut; every match counted.
    expression = ftsquery.search_expression(query)
    if expression is None:
        return [], 0
    rows = conn.execute(
        f"SELECT r.id, memory_fts.rank FROM memory_fts JOIN memory_records r "
        f"ON r.seq = memory_fts.rowid WHERE memory_fts MATCH ? AND memory_fts.rank MATCH "
        f"'bm25(4.0, 1.0, 2.0)' AND {EFFECTIVE} = 'active' ORDER BY memory_fts.rank, r.id "
        f"LIMIT ?", (expression, now.isoformat(), limit)).fetchall()
    total = conn.execute(
        f"SELECT count(*) FROM memory_fts JOIN memory_records r ON r.seq = memory_fts.rowid "
        f"WHERE memory_fts MATCH ? AND {EFFECTIVE} = 'active'",
        (expression, now.isoformat())).fetchone()[0]
    return [(row[0], row[1]) for row in rows], total

def snippet(query, record_id):
    # The snippet as a MATCH on memory_fts makes it, row by row.
    return plain_snippet(conn.execute(
        "SELECT snippet(memory_fts, 1, '[', ']', '…', 16) FROM memory_fts WHERE memory_fts "
        "MATCH ? AND rowid = (SELECT seq FROM memory_records WHERE id = ?)",
        (ftsquery.search_expression(query), record_id)).fetchone()[0])

out = []
for query, limit in json.loads(sys.stdin.read()):
    got = records.search(conn, {"query": query, "limit": limit}, now)
    page = [(r["id"], r["rank"]) for r in got["records"]]
    if (page, got["total"]) != plain(query, limit) or any(
            r["snippet"] != snippet(query, r["id"]) for r in got["records"]):
        out.append(query)
print(json.dumps(out))
"""


def check(db: Path, queries: list[str], seed: int) -> int:
    """This checkout's pages (ids, order, ranks to the bit, snippets byte for byte) and totals
    against the plain query (snippets: a MATCH on memory_fts for each row),
    for `queries` and as many made of random words, identifiers and paths of the vocabulary
    (rare and common mixed), at random limits."""
    sys.path.insert(0, str(HERE))
    import bench_data

    vocab = bench_data.Vocabulary(seed)
    rng = random.Random(f"check-{seed}")
    pool = [*vocab.words, *vocab.classes[:300], *vocab.errs, *vocab.cfgs, *vocab.paths[:300]]
    mixed = [" ".join(rng.sample(pool, rng.randint(1, 6))) for _ in queries]
    cases = [(q, 20) for q in queries] + [(q, rng.choice((1, 5, 20, 50, 200))) for q in mixed]
    result = subprocess.run([python_of(REPO), "-c", CHECK, str(REPO), str(db)],
                            input=json.dumps(cases), capture_output=True, text=True, cwd=REPO,
                            check=True)
    differ = json.loads(result.stdout)
    print(f"memory.search pages, snippets and totals against the plain query on {db}: "
          f"{len(cases)} "
          f"queries ({len(queries)} bench, {len(mixed)} random), {len(differ)} differ")
    for query in differ[:20]:
        print(f"   ! {query}")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("db", type=Path)
    parser.add_argument("--code", type=Path, action="append", default=[])
    parser.add_argument("--queries", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=3, help="chunks per version")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--instructions", type=int, metavar="N", default=0,
                        help="only count CPU instructions per search under callgrind, over "
                        "N queries after 20 warm-up ones, for every version (slow: ~50x)")
    parser.add_argument("--check", type=int, metavar="N", default=0,
                        help="only compare this checkout's pages and totals with the plain "
                        "query, for N bench queries and N random ones")
    parser.add_argument("--classes", type=int, metavar="CAP", default=0,
                        help="also split this checkout's figures by how the page is found, "
                        "and time ranking only the newest CAP matches of the plain ones")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    import bench_data

    vocab = bench_data.Vocabulary(args.seed)
    queries = bench_data.search_queries(vocab, args.seed, 200 + args.queries)[200:]
    codes = [REPO, *(c.resolve() for c in args.code)]
    if args.check:
        return check(args.db, queries[:args.check], args.seed)
    if args.instructions:
        chosen = queries[:20 + args.instructions]
        print(f"memory.search in-process on {args.db}: CPU instructions per search under "
              f"callgrind ({args.instructions} queries after 20 warm-up, limit 20)")
        for code in codes:
            print(f"   {str(code)[-32:]:32} {instructions(code, args.db, chosen) / 1e6:9.2f}M",
                  flush=True)
        return 0
    # A warm-up chunk per version (page cache, statements), not counted.
    for code in codes:
        run_chunk(code, args.db, queries[:50])
    results: dict[Path, list[tuple[int, int, int]]] = {code: [] for code in codes}
    size = -(-len(queries) // args.rounds)
    for start in range(0, len(queries), size):
        for code in codes:
            results[code] += run_chunk(code, args.db, queries[start:start + size])
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"memory.search in-process on {args.db} ({len(queries)} queries, limit 20, "
          f"{args.rounds} alternating chunks; load average at end {load})")
    print(f"   {'code':32} {'cpu p50':>8} {'p90':>7} {'p99':>7} {'max':>7} {'mean':>7} "
          f"{'wall p50':>9} {'p90':>7} {'p99':>7}  (ms)")
    totals = {code: [row[2] for row in rows] for code, rows in results.items()}
    for code, rows in results.items():
        cpu = [row[0] for row in rows]
        wall = [row[1] for row in rows]
        print(f"   {str(code)[-32:]:32} {pct(cpu, 50):8.2f} {pct(cpu, 90):7.2f} "
              f"{pct(cpu, 99):7.2f} {max(cpu) / 1e6:7.2f} {sum(cpu) / len(cpu) / 1e6:7.2f} "
              f"{pct(wall, 50):9.2f} "
              f"{pct(wall, 90):7.2f} {pct(wall, 99):7.2f}")
    if args.classes:
        run_classes(args.db, queries, args.classes)
    first = totals[REPO]
    for code, other in totals.items():
        if other != first:
            print(f"   ! totals differ from {code}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
