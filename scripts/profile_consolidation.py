"""Where consolidation's time goes: a real daemon consolidates N inbox notes (forced batches
of 50, regex path) while py-spy samples it; prints the functions by own and total samples.

    .venv/bin/pip install py-spy
    .venv/bin/python scripts/profile_consolidation.py --notes 1000 [--top 40] [--keep]
    .venv/bin/python scripts/profile_consolidation.py --notes 1000 --syscalls   # strace -c

With --perf, `perf record` samples the daemon's CPU time (all threads, with or without the
GIL: SQLite's C code and the kernel too) and the report splits it by library.
With --syscalls, strace counts the daemon's disk syncs (fsync, fdatasync, syncfs) and file
renames/links over the run instead (per batch = the count / batches).

Samples are taken only while consolidation runs (the notes are landed first), idle threads
excluded, so the shares are shares of the daemon's busy time. Also prints the daemon's CPU
time per note (/proc/<pid>/stat) and the load average beside it.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_data
from bench_common import Bench, say
from bench_consolidation import stage_and_land


def summarise(raw: Path, top: int) -> None:
    """py-spy's collapsed stacks -> own and inclusive sample counts per function."""
    own: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    samples = 0
    for line in raw.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack:
            continue
        count = int(count_text)
        frames = [f.split(" (")[0] + " " + f.rsplit("/", 1)[-1].rstrip(")").split(":")[0]
                  for f in stack.split(";")]
        samples += count
        own[frames[-1]] += count
        for frame in set(frames):
            total[frame] += count
    say(f"   {samples} samples while busy")
    say("   --- own time ---")
    for frame, count in own.most_common(top):
        say(f"   {count / samples:6.1%}  {frame}")
    say("   --- inclusive ---")
    for frame, count in total.most_common(top):
        say(f"   {count / samples:6.1%}  {frame}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--perf", action="store_true",
                        help="split CPU time by library with perf instead of py-spy")
    parser.add_argument("--syscalls", action="store_true",
                        help="count disk syncs with strace instead of sampling with py-spy")
    args = parser.parse_args()
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    bench = Bench(argparse.Namespace(seed=args.seed, pin=False, keep=args.keep))
    try:
        agents = {a: {"name": a.title()} for a in bench_data.AGENTS[:5]}
        daemon = bench.new_daemon("p", {
            "engine": {"auto_consolidate_memory": False, "consolidation_max_batch": 50,
                       "inbox_settle_ms": 0},
            "agents": agents})
        day = datetime.now(UTC)
        for index in range(args.notes):
            name, text = bench_data.inbox_note(bench.vocab, args.seed, index, day)
            stage_and_land(bench, daemon.home, name, text)
        raw = bench.root / "profile.txt"
        if args.syscalls:
            command = ["strace", "-f", "-c", "-e",
                       "trace=fsync,fdatasync,syncfs,rename,renameat,renameat2,link,linkat",
                       "-p", str(daemon.pid)]
        elif args.perf:
            command = ["perf", "record", "-F", "499", "-p", str(daemon.pid), "-o", str(raw)]
        else:
            command = [py_spy, "record", "--pid", str(daemon.pid), "--format", "raw",
                       "--rate", str(args.rate), "--gil", "--output", str(raw)]
        spy = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(1.0)  # py-spy attaches
        notes = batches = 0
        with daemon.client(timeout=600) as client:
            client.call("status")
            began = time.perf_counter()
            cpu_before = daemon.cpu_seconds()
            while True:
                result = client.call("consolidation.run", {"force": True})
                if result["mode"] == "nothing":
                    break
                notes += result["notes"]
                batches += 1
            wall = time.perf_counter() - began
            cpu = daemon.cpu_seconds() - cpu_before
        spy.send_signal(2)  # SIGINT: py-spy writes its output and exits
        _, err = spy.communicate(timeout=60)
        say(f"   {notes} notes in {wall:.1f} s = {notes / wall:.1f} notes/s; daemon CPU "
            f"{cpu / max(1, notes) * 1000:.1f} ms/note (py-spy sampling adds some); "
            f"load average {os.getloadavg()[0]:.2f}")
        if args.syscalls:
            say(f"   {batches} batches; strace -c of the daemon over the run:")
            say("\n".join(line for line in err.decode(errors="replace").splitlines()
                           if not line.startswith("strace: Process")))
        elif args.perf:
            report = subprocess.run(["perf", "report", "-i", str(raw), "--sort", "dso",
                                     "--stdio"], capture_output=True, text=True, check=False)
            say("\n".join(line for line in report.stdout.splitlines()
                           if line.strip() and not line.startswith("#"))[:3000])
        elif raw.exists():
            summarise(raw, args.top)
            if args.keep:
                say(f"   raw py-spy stacks: {raw}")
        else:
            say(f"   py-spy wrote nothing: {err.decode(errors='replace')[-500:]}")
    finally:
        bench.close()


if __name__ == "__main__":
    main()
