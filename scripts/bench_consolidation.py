"""scripts/bench.py section 4: consolidation throughput on the regex path (forced batches)
and watch latency (the note that reaches the threshold lands -> archived and searchable)."""

from __future__ import annotations

import os
import re
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path

import bench_data
from bench_common import Bench, BenchDaemon, end_progress, pct, progress, say

from minionsd.rpc.client import Client


def stage_and_land(bench: Bench, home: Path, name: str, text: str) -> float:
    """Write the note outside the inbox, then rename it in atomically; returns the time
    (perf_counter) right after the rename."""
    staging = bench.root / "staging"
    staging.mkdir(exist_ok=True)
    temp = staging / name
    temp.write_text(text, encoding="utf-8")
    os.rename(temp, home / "notes" / "inbox" / name)
    return time.perf_counter()


def run_consolidation_throughput(bench: Bench) -> None:
    args = bench.args
    count = args.notes
    agents = {a: {"name": a.title()} for a in bench_data.AGENTS[:5]}
    daemon = bench.new_daemon("c", {
        "engine": {"auto_consolidate_memory": False, "consolidation_max_batch": 50,
                   "inbox_settle_ms": 0},
        "agents": agents,
    })
    day = datetime.now(UTC)
    sizes = []
    for index in range(count):
        name, text = bench_data.inbox_note(bench.vocab, args.seed, index, day)
        sizes.append(len(text.encode()))
        stage_and_land(bench, daemon.home, name, text)
    say(f"\n== 4a. consolidation throughput, regex path (no API key): {count:,} inbox notes "
        f"({statistics.fmean(sizes) / 1024:.1f} KB mean, {min(sizes)}-{max(sizes)} B), "
        "consolidation.run {force: true} until mode is 'nothing'")
    say("   config: auto_consolidate_memory=false, consolidation_max_batch=50, "
        f"inbox_settle_ms=0, {len(agents)} configured agents")
    batch_ms: list[float] = []
    modes: dict[str, int] = {}
    archived = upserted = 0
    with daemon.client(timeout=600) as client:
        status = client.call("status")
        say(f"   inbox before: {status['inbox']}")
        began = time.perf_counter()
        cpu_before = daemon.cpu_seconds()
        while True:
            t0 = time.perf_counter()
            result = client.call("consolidation.run", {"force": True})
            elapsed = time.perf_counter() - t0
            modes[result["mode"]] = modes.get(result["mode"], 0) + 1
            if result["mode"] == "nothing":
                break
            batch_ms.append(elapsed * 1000)
            archived += result["notes"]
            upserted += result["records_upserted"]
            progress(f"  consolidated {archived}/{count}")
        total_s = time.perf_counter() - began
        cpu = daemon.cpu_seconds() - cpu_before
        end_progress()
        status = client.call("status")
    home = daemon.home
    in_archive = sum(1 for p in (home / "notes" / "archive").glob("*.md")
                     if p.name != "notes-history.md")
    quarantined = sum(1 for p in (home / "notes" / "quarantine").glob("*")
                      if not p.name.endswith(".reason.txt")) \
        if (home / "notes" / "quarantine").is_dir() else 0
    kb = sum(1 for _ in (home / "knowledge").rglob("*.md"))
    say(f"   {archived:,} notes in {len(batch_ms)} batches, {total_s:.1f} s = "
        f"{archived / total_s:,.1f} notes/s; batch p50 {pct(batch_ms, 50):.0f} ms, "
        f"max {max(batch_ms, default=0):.0f} ms; modes {modes}")
    say(f"   daemon CPU {cpu:.1f} s = {cpu / max(1, archived) * 1000:.0f} ms/note "
        f"({cpu / total_s:.0%} of one core); load average {os.getloadavg()[0]:.2f}")
    say(f"   after: archive files {in_archive}, quarantined {quarantined}, knowledge files {kb}, "
        f"records upserted {upserted}, status.records {status['records']}, "
        f"inbox {status['inbox']}")
    first, last = batch_ms[:5], batch_ms[-5:]
    if first and last:
        say(f"   first 5 batches mean {statistics.fmean(first):.0f} ms, last 5 "
            f"{statistics.fmean(last):.0f} ms (inbox shrinking, notes.md/archive growing)")
    memory = daemon.memory()
    say(f"   daemon peak RSS (VmHWM) {memory['VmHWM']}")
    daemon.stop()


def wait_batch(daemon: BenchDaemon, client: Client, name: str, token: str, t_land: float,
               timeout: float) -> tuple[float | None, float | None]:
    """Poll until `name` is archived and `token` is searchable; seconds after t_land each."""
    archive = daemon.home / "notes" / "archive"
    # The archive names a note `<date>-<name without its date>.md` (-2, -3... on collisions).
    stem = re.sub(r"-\d{4}-\d{2}-\d{2}$", "", name.removesuffix(".md"))
    archived_at = searchable_at = None
    deadline = t_land + timeout
    while time.perf_counter() < deadline and (archived_at is None or searchable_at is None):
        now = time.perf_counter()
        if archived_at is None and archive.is_dir() and any(
                stem in entry.name for entry in os.scandir(archive)):
            archived_at = now - t_land
        if searchable_at is None and \
                client.call("memory.search", {"query": token, "limit": 1})["total"] > 0:
            searchable_at = now - t_land
        time.sleep(0.005)
    return archived_at, searchable_at


def run_watch_latency(bench: Bench) -> None:
    args = bench.args
    agents = {a: {"name": a.title()} for a in bench_data.AGENTS[:5]}
    daemon = bench.new_daemon("w", {"engine": {"inbox_consolidate_threshold": 5},
                                    "agents": agents})
    with daemon.client() as client:
        cfg = {key: client.call("config.get", {"key": key})["value"] for key in (
            "engine.auto_consolidate_memory", "engine.inbox_consolidate_threshold",
            "engine.inbox_settle_ms", "engine.rescan_interval_s")}
    settle_s = cfg["engine.inbox_settle_ms"] / 1000
    say("\n== 4b. watch latency: the 5th note lands (atomic rename) -> archived (file in "
        "notes/archive/) and searchable (memory.search for a unique token)")
    say("   config: " + ", ".join(f"{k.split('.', 1)[1]}={v}" for k, v in cfg.items()))
    day = datetime.now(UTC)
    index = 50_000
    scenarios = (
        ("settled", args.watch_rounds, settle_s + 0.6,
         "4 notes, wait settle+0.6 s, then the 5th"),
        ("burst", args.burst_rounds, 0.1, "5 notes 100 ms apart (5th lands while the first "
         "poke's settle sleep is running)"),
    )
    for label, rounds, gap, description in scenarios:
        if rounds <= 0:
            continue
        say(f"   [{label}] {description}; {rounds} rounds")
        archived_s: list[float] = []
        searchable_s: list[float] = []
        missed = 0
        done_early = False
        with daemon.client() as client:
            for round_no in range(rounds):
                if done_early:
                    break
                token = f"watchprobe{label}{round_no}q{args.seed}"
                names = []
                t_land = 0.0
                for k in range(5):
                    extra = f"Watch probe marker {token}." if k == 4 else ""  # not secret-shaped
                    name, text = bench_data.inbox_note(bench.vocab, args.seed, index, day,
                                                       extra_line=extra)
                    index += 1
                    names.append(name)
                    if k == 4:
                        time.sleep(gap if label == "settled" else 0)
                    t_land = stage_and_land(bench, daemon.home, name, text)
                    if label == "burst" and k < 4:
                        time.sleep(gap)
                timeout = cfg["engine.rescan_interval_s"] + 15
                archived, searchable = wait_batch(daemon, client, names[-1], token, t_land,
                                                  timeout)
                if archived is None or searchable is None:
                    missed += 1
                    say(f"     round {round_no + 1}: not archived+searchable within "
                        f"{timeout:.0f} s (archived={archived}, searchable={searchable})")
                else:
                    archived_s.append(archived)
                    searchable_s.append(max(archived, searchable))
                    if label == "burst":
                        say(f"     round {round_no + 1}: archived {archived:.2f} s, "
                            f"searchable {searchable:.2f} s")
                        if archived > 5:
                            say("     (stopping the burst scenario: one slow round is the "
                                "evidence; each costs up to rescan_interval_s)")
                            done_early = True
                # Let the inbox drain before the next round.
                drain_deadline = time.monotonic() + timeout
                while client.call("status")["inbox"]["pending"] and \
                        time.monotonic() < drain_deadline:
                    time.sleep(0.05)
                time.sleep(0.3)
        for what, values in (("archived", archived_s), ("archived & searchable", searchable_s)):
            if values:
                say(f"     {what:21} p50 {pct(values, 50) * 1000:7.0f} ms   max "
                    f"{max(values) * 1000:7.0f} ms   min {min(values) * 1000:7.0f} ms "
                    f"(n={len(values)}, missed {missed})")
        if values and label == "settled":
            floor = settle_s + 0.05
            say(f"     of which the settle wait (inbox_settle_ms + 50 ms sleep before the "
                f"check) is {floor * 1000:.0f} ms; the rest is scan + batch")
    daemon.stop()
