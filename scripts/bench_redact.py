"""CPU time of redaction alone, per bench record (title + body, as memory.add redacts them) and
per bench task (each searchable field, as memory.retrieve redacts them). Prints figures.

    .venv/bin/python scripts/bench_redact.py
    .venv/bin/python scripts/bench_redact.py --old /path/to/other/checkout   # both, alternated

The corpus is scripts/bench_data.py's records and tasks (seed 7). CPU time of this process
(time.process_time), best of --rounds, so a busy neighbour moves it less than wall time; with
--old the two versions run in turn in child processes, round by round. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
_CHILD = "MINIONS_BENCH_REDACT_CHILD"
WARM_UP = "warm: password=abc123def src/minionsd/storage/records.py ghp_R8fKq2ZtLw91XbNc4VyH7eJm3U"


def _corpus(records: int, tasks: int) -> tuple[list[str], list[str]]:
    sys.path.insert(0, str(HERE))
    import bench_data

    vocab = bench_data.Vocabulary(7)
    now = datetime(2026, 11, 30, tzinfo=UTC)
    texts = []
    for params in bench_data.record_stream(vocab, 7, 0, records, now):
        texts += [params["title"], params["body"]]
    fields = []
    for task, _, _ in bench_data.tasks(vocab, 7, tasks):
        pr = task["pr"]
        fields += [task["title"], task["description"], *task["files"], pr["title"],
                   pr["branch"], *pr["files"]]
    return texts, fields


def child(records: int, tasks: int) -> dict[str, float]:
    from minionsd.text.redact import redact

    texts, fields = _corpus(records, tasks)
    redact(WARM_UP)
    began = time.process_time()
    for text in texts:
        redact(text)
    per_record = (time.process_time() - began) / records * 1e3
    began = time.process_time()
    for text in fields:
        redact(text)
    per_task = (time.process_time() - began) / tasks * 1e3
    return {"record_ms": per_record, "task_ms": per_task}


def run(root: Path, records: int, tasks: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(root), **{_CHILD: "1"})
    done = subprocess.run(
        [sys.executable, str(HERE / "bench_redact.py"), "--records", str(records),
         "--tasks", str(tasks)], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--old", type=Path, help="another checkout, run beside this one")
    args = parser.parse_args()
    if os.environ.get(_CHILD):
        print(json.dumps(child(args.records, args.tasks)))
        return
    roots = {"this": HERE.parent}
    if args.old:
        roots["old"] = args.old.resolve()
    best: dict[str, dict[str, float]] = {}
    for _ in range(args.rounds):
        for name, root in roots.items():
            figures = run(root, args.records, args.tasks)
            kept = best.setdefault(name, figures)
            for key, value in figures.items():
                kept[key] = min(kept[key], value)
    print(f"redaction CPU, best of {args.rounds} ({args.records} records, {args.tasks} tasks; "
          f"load {os.getloadavg()[0]:.2f})")
    for name, figures in best.items():
        print(f"  {name:5s} {roots[name]}: {figures['record_ms']:.4f} ms per record "
              f"(title+body), {figures['task_ms']:.4f} ms per task (all fields)")


if __name__ == "__main__":
    main()
