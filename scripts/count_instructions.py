"""Count the CPU instructions one retrieval costs, in-process, under callgrind. Prints figures.

Wall-clock figures on a shared 2-core machine move by 10-25% from one run to the next, which
hides a 10% change. Instruction counts barely move, so they are the figure to compare two
versions of the retrieval code by (wall time stays the figure the targets are about, see
scripts/bench.py section 5).

    .venv/bin/python scripts/count_instructions.py --db /tmp/ic10k.sqlite     # built once
    .venv/bin/python scripts/count_instructions.py --db /tmp/ic100k.sqlite --records 100000 \\
        --mode fresh --calls 100
    git worktree add /tmp/old <commit>            # then the same command with PYTHONPATH=/tmp/old

What one call is: the read side of `memory.retrieve` as the daemon runs it (task terms, then
`recall._pack`: candidates, rerank, pack, then the fence), on a read-only connection, without
the socket. `cycled` asks 20 bench tasks in turn (two rounds first, so their caches are warm)
and counts `--calls` more rounds; `fresh` counts `--calls` tasks never asked before (after
the same warm-up). The child runs twice under `valgrind --tool=callgrind`, without and with
the counted calls, with PYTHONHASHSEED=0; the difference divided by the calls is the figure.
With `--part` (cycled only) the counted calls run one step of the 20 tasks' retrievals on
inputs the warm-up prepared: `terms` (task_terms), `naming` (naming_terms), `cues`, `files`
(task_files), `fetch` (fetch_candidates), `rankpack` (rank_lazily and pack), `fence`; the
parts add up to the whole. A tree without a step (naming, cues before 2026-12) counts 0.
Needs valgrind on PATH (Debian: apt install valgrind); asserts nothing.

    .venv/bin/python scripts/count_instructions.py --db /tmp/ic10k.sqlite --part terms
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_data

from minionsd.config import defaults
from minionsd.storage import record_fields, records
from minionsd.storage.database import connect, migrate

SEED = 7
NOW = datetime(2026, 11, 30, tzinfo=UTC)
_CHILD = "MINIONS_COUNT_CHILD"


def build(path: Path, count: int) -> None:
    """The bench's synthetic records, written in-process (about 3 ms each)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = connect(path)
    migrate(conn)
    conn.execute("PRAGMA synchronous=OFF")
    vocab = bench_data.Vocabulary(SEED)
    began = time.monotonic()
    conn.execute("BEGIN")
    for index, params in enumerate(bench_data.record_stream(vocab, SEED, 0, count, NOW)):
        records.insert(conn, record_fields.validate_new(params), NOW)
        if index % 5000 == 4999:
            conn.execute("COMMIT")
            conn.execute("BEGIN")
            print(f"   built {index + 1:,} records in {time.monotonic() - began:.0f} s",
                  flush=True)
    conn.execute("COMMIT")
    conn.close()


def workload(db: Path, mode: str, calls: int) -> None:
    """Run in the child: warm up, then `calls` counted rounds or tasks."""
    from minionsd.memory.recall import _pack
    from minionsd.memory.retrieval.index import RecallIndex
    from minionsd.memory.retrieval.query import task_terms
    from minionsd.text.fence import fence

    # The default configuration, keyed the way the daemon's Config is ("engine.top_k").
    settings = {f"{section}.{name}": value for section, keys in defaults().items()
                if section != "agents" for name, value in keys.items()}
    app = SimpleNamespace(config=settings, recall_index=RecallIndex())
    conn = connect(db, readonly=True)
    vocab = bench_data.Vocabulary(SEED)
    cycled = bench_data.tasks(vocab, SEED, 20)

    def one(task: dict, project: str | None, agent: str | None) -> None:
        found = _pack(app, conn, task, task_terms(task), project, agent, NOW)
        fence(found["pack"], f"memory-retrieval:item={task['id']}",
              settings["engine.untrusted_fence_max_bytes"])

    for _round in range(2):
        for spec in cycled:
            one(*spec)
    if mode == "cycled":
        for _round in range(calls):
            for spec in cycled:
                one(*spec)
    else:
        for spec in bench_data.tasks(vocab, 1234, calls):
            one(*spec)


PARTS = ("terms", "naming", "cues", "files", "fetch", "rankpack", "fence")


def part_workload(db: Path, part: str, rounds: int) -> None:
    """Run in the child: warm up, prepare each step's inputs, then `rounds` rounds of one
    step over the 20 cycled tasks."""
    from minionsd.clock import iso
    from minionsd.memory.recall import _pack
    from minionsd.memory.retrieval import candidates, pack, rank
    from minionsd.memory.retrieval import query as q
    from minionsd.memory.retrieval.index import RecallIndex
    from minionsd.text.fence import fence

    try:
        from minionsd.memory.retrieval import related
    except ImportError:
        related = None
    settings = {f"{section}.{name}": value for section, keys in defaults().items()
                if section != "agents" for name, value in keys.items()}
    app = SimpleNamespace(config=settings, recall_index=RecallIndex())
    conn = connect(db, readonly=True)
    specs = bench_data.tasks(bench_data.Vocabulary(SEED), SEED, 20)
    fence_max = settings["engine.untrusted_fence_max_bytes"]
    for _round in range(2):
        for task, project, agent in specs:
            fence(_pack(app, conn, task, q.task_terms(task), project, agent, NOW)["pack"], "x",
                  fence_max)
    new = hasattr(q, "naming_terms")  # trees before the rare-term and cue work lack both
    terms = [q.task_terms(task) for task, _p, _a in specs]
    naming = [{"naming": q.naming_terms(task)} if new else {} for task, _p, _a in specs]
    cues = [{"cues": q.cues(task)} if new else {} for task, _p, _a in specs]
    files = [q.task_files(task) for task, _p, _a in specs]
    memos = app.recall_index.memos

    def fetch(i: int) -> list[dict[str, Any]]:
        return candidates.fetch_candidates(
            app.recall_index, conn, terms[i], project=specs[i][1], agent=specs[i][2],
            now_iso=iso(NOW), limit=settings["engine.memory_retrieval_candidate_limit"],
            **naming[i])

    found = [fetch(i) for i in range(len(specs))]

    def rankpack(i: int) -> str:
        ranked = rank.rank_lazily(found[i], task_files=files[i], project=specs[i][1],
                                  agent=specs[i][2], now=NOW, memos=memos, **cues[i])
        rare = {"rare_left": sum(bool(c["rare_terms"]) for c in found[i])} if new else {}
        if related is not None:  # trees before the cutoff's shared rare words lack it
            rare["related"] = related.SharedRareWords(app.recall_index, conn, terms[i],
                                                      found[i])
        return pack.pack(ranked, distinct=True, top_k=settings["engine.memory_retrieval_top_k"],
                         max_bytes=settings["engine.memory_retrieval_max_bytes"],
                         min_score_ratio=settings["engine.memory_retrieval_min_score_ratio"],
                         smallest=min(map(pack.min_size, found[i]), default=0), memos=memos,
                         **rare)[0]

    texts = [rankpack(i) for i in range(len(specs))]
    steps: dict[str, Any] = {
        "terms": lambda: [q.task_terms(task) for task, _p, _a in specs],
        "naming": lambda: [q.naming_terms(task) for task, _p, _a in specs] if new else None,
        "cues": lambda: [q.cues(task) for task, _p, _a in specs] if new else None,
        "files": lambda: [q.task_files(task) for task, _p, _a in specs],
        "fetch": lambda: [fetch(i) for i in range(len(specs))],
        "rankpack": lambda: [rankpack(i) for i in range(len(specs))],
        "fence": lambda: [fence(text, "x", fence_max) for text in texts],
    }
    step = steps[part]
    for _round in range(rounds):
        step()


def instructions(db: Path, mode: str, calls: int) -> int:
    env = dict(os.environ, PYTHONHASHSEED="0", **{_CHILD: f"{mode}:{calls}"})
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
         __file__, "--db", str(db)], env=env, capture_output=True, text=True, check=True)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise SystemExit(f"no instruction count in valgrind's output:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", type=Path, required=True,
                        help="a state.db to read; built with --records if missing")
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--mode", choices=("cycled", "fresh"), default="cycled")
    parser.add_argument("--calls", type=int, default=1,
                        help="counted rounds of 20 tasks (cycled) or new tasks (fresh)")
    parser.add_argument("--part", choices=PARTS,
                        help="count one step of the cycled retrievals (see above)")
    args = parser.parse_args()
    if os.environ.get(_CHILD):
        mode, calls = os.environ[_CHILD].split(":")
        if mode.startswith("part="):
            part_workload(args.db, mode.removeprefix("part="), int(calls))
        else:
            workload(args.db, mode, int(calls))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not on PATH (Debian: apt install valgrind)")
    if not args.db.exists():
        build(args.db, args.records)
    mode = f"part={args.part}" if args.part else args.mode
    counted = args.calls * (20 if args.part or args.mode == "cycled" else 1)
    base = instructions(args.db, mode, 0)
    total = instructions(args.db, mode, args.calls)
    import minionsd

    what = f"cycled, {args.part} only" if args.part else args.mode
    print(f"{what}: {(total - base) / counted / 1e6:.3f}M instructions per retrieval "
          f"({counted} calls; code from {Path(minionsd.__file__).parent})")


if __name__ == "__main__":
    main()
