"""scripts/bench.py --only cli: what one `minionsctl` call costs, the way an operator or
Claude Code's hooks run it: a fresh process per call, against a running daemon.

Commands timed: `status`, `search`, `show` (memory.get), `retrieve` (the task's memory pack),
`hook claude-code user-prompt` and `hook claude-code session-start` (hook JSON on stdin, the
session's cwd a git repository with an origin, as in a real project). For each: the median
wall time of --cli-runs calls and the fastest one (the call that met the least load), the
mean CPU time of the client process (user+system, from getrusage of the waited child) and
the daemon's own answer (median over the socket, in process). With --old DIR the other
checkout's minionsctl runs against the same daemon, call for call alternating with this
one's, so both see the same load; the daemon is this tree's.

How each tree's minionsctl runs: its own .venv/bin/minionsctl (the console script, as
scripts/run installs it). Because that venv's install mode is part of what a user pays for,
say which mode each tree's venv used when reporting figures. Like scripts/run, the bench
byte-compiles this tree's sources first; another tree is measured as it is, and the output
says whether it holds bytecode caches (without them, and with PYTHONDONTWRITEBYTECODE set,
every call compiles minionsd's modules again).

--cli-home DIR times a copy of a home loaded earlier (e.g. 100,000 records: loading takes
minutes); otherwise --records records are loaded into a fresh home first.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import bench_data
from bench_common import Bench, BenchDaemon, pct, say, write_config
from bench_records import load_records, wait_for_index

DEFAULT_RUNS = 15


def has_bytecode(code: Path) -> bool:
    return any((code / "minionsd" / "__pycache__").glob("__init__.*.pyc"))


def compile_tree(code: Path) -> None:
    """What scripts/run does before it starts anything: cached bytecode for the sources."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(code / "minionsd")],
                   check=True)


def ctl_of(code: Path) -> list[str]:
    return [str(code / ".venv" / "bin" / "minionsctl")]


def make_project(root: Path) -> Path:
    """A git repository with an origin, like the directory Claude Code runs in."""
    project = root / "project"
    project.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run(["git", "-C", str(project), "remote", "add", "origin",
                    "git@example.com:team/payments.git"], check=True)
    return project


def commands(home: Path, record_id: str, query: str, task: dict[str, Any],
             project: Path) -> list[tuple[str, list[str], bytes, str | None]]:
    """(label, arguments after minionsctl, stdin, the daemon method it calls)."""
    at = ["--home", str(home)]
    prompt = {"session_id": "bench", "cwd": str(project), "hook_event_name": "UserPromptSubmit",
              "prompt": bench_data.task_text(task)}
    start = {"session_id": "bench", "cwd": str(project), "hook_event_name": "SessionStart",
             "source": "startup"}
    return [
        ("status", [*at, "status"], b"", "status"),
        ("search", [*at, "search", query], b"", "memory.search"),
        ("show (memory.get)", [*at, "show", record_id], b"", "memory.get"),
        ("retrieve --task -", [*at, "retrieve", "--task", "-"], json.dumps(task).encode(),
         "memory.retrieve"),
        ("hook user-prompt", [*at, "hook", "claude-code", "user-prompt", "--agent",
                              "claude-code"], json.dumps(prompt).encode(), None),
        ("hook session-start", [*at, "hook", "claude-code", "session-start", "--agent",
                                "claude-code"], json.dumps(start).encode(), None),
    ]


def one_call(command: list[str], stdin: bytes, cwd: Path,
             quiet: bool = False) -> tuple[float, float, bytes]:
    """(wall ms, CPU ms of the child, its stdout) for one run of `command`; `quiet`: anything
    on stderr is a failure too (a hook exits 0 whatever happens)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(command, input=stdin, capture_output=True, cwd=cwd, check=False)
    wall = (time.perf_counter() - began) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0 or (quiet and done.stderr):
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): "
                           f"{done.stderr.decode(errors='replace')[-500:]}")
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000
    return wall, cpu, done.stdout


def daemon_answer_ms(daemon: BenchDaemon, method: str, params: dict[str, Any],
                     runs: int) -> tuple[float, float]:
    """(median ms of the daemon's answer over the socket, daemon CPU ms per call)."""
    times = []
    with daemon.client() as client:
        client.call(method, params)
        cpu_before = daemon.cpu_seconds()
        for _ in range(runs):
            began = time.perf_counter()
            client.call(method, params)
            times.append((time.perf_counter() - began) * 1000)
        cpu = (daemon.cpu_seconds() - cpu_before) / runs * 1000
    return pct(times, 50), cpu


def prepare_home(bench: Bench) -> tuple[BenchDaemon, int]:
    args = bench.args
    home = bench.root / "cli"
    if args.cli_home:
        say(f"   copying {args.cli_home} ...")
        shutil.copytree(args.cli_home, home, symlinks=True,
                        ignore=shutil.ignore_patterns("*.sock", "minionsd.pid", "*.log"))
        daemon = BenchDaemon(home, None)
        bench.daemons.append(daemon)
        daemon.start(120)
    else:
        write_config(home, {"engine": {"auto_consolidate_memory": False}})
        daemon = BenchDaemon(home, None)
        bench.daemons.append(daemon)
        daemon.start(60)
        load_records(daemon, bench.vocab, args.seed, 0, args.records, bench.base_time)
        wait_for_index(daemon)
    with daemon.client() as client:
        counts = client.call("status")["records"]
    return daemon, sum(counts.values())


def run_cli(bench: Bench, old: Path | None, new: Path) -> None:
    args = bench.args
    runs = args.cli_runs
    compile_tree(new)
    daemon, total = prepare_home(bench)
    project = make_project(bench.root)
    query = "retry timeout"
    with daemon.client() as client:
        hits = client.call("memory.search", {"query": query, "limit": 1})["records"]
    record_id = hits[0]["id"] if hits else "M-1"
    task = bench_data.tasks(bench.vocab, args.seed, 1)[0][0]
    trees = {"new": new} | ({"old": old} if old is not None else {})
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    say(f"\n== minionsctl calls at {total:,} records: median (min) wall ms / mean client CPU ms of "
        f"{runs} calls each (load average {load})")
    for tag, code in trees.items():
        caches = "with" if has_bytecode(code) else "WITHOUT"
        say(f"   {tag}: {' '.join(ctl_of(code))} ({caches} bytecode caches; "
            f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r})")
    header = "".join(f" {tag + ' wall':>10} {'(min)':>7} {tag + ' cpu':>9}" for tag in trees)
    say(f"   {'command':22}{header} {'daemon ms':>10} {'daemon cpu':>10}")
    for label, words, stdin, method in commands(daemon.home, record_id, query, task, project):
        figures: dict[str, tuple[list[float], list[float]]] = {t: ([], []) for t in trees}
        outputs: dict[str, bytes] = {}
        for run in range(runs + 1):  # the first round warms the page cache
            order = list(trees) if run % 2 == 0 else list(reversed(trees))
            for tag in order:
                wall, cpu, out = one_call(ctl_of(trees[tag]) + words, stdin, project,
                                          quiet=label.startswith("hook"))
                outputs[tag] = out
                if run:
                    figures[tag][0].append(wall)
                    figures[tag][1].append(cpu)
        if label.startswith("hook") and not outputs["new"].strip():
            raise RuntimeError(f"{label} printed nothing: the timing would be of a no-op")
        row = "".join(f" {pct(w, 50):10.1f} {min(w):7.1f} {sum(c) / len(c):9.1f}"
                      for w, c in figures.values())
        answer = ""
        if method is not None:
            params: dict[str, Any] = {
                "status": {}, "memory.search": {"query": query},
                "memory.get": {"id": record_id}, "memory.retrieve": {"task": task}}[method]
            d_ms, d_cpu = daemon_answer_ms(daemon, method, params, runs)
            answer = f" {d_ms:10.1f} {d_cpu:10.1f}"
        say(f"   {label:22}{row}{answer}")
    say(f"   (load average at end {' '.join(f'{x:.2f}' for x in os.getloadavg())})")
