"""LoCoMo retrieval figures for `scripts/eval.py --locomo PATH`.

LoCoMo (https://github.com/snap-research/locomo, ACL 2024) is ten long conversations between
two people, each with a few hundred questions that name the dialogue turns holding their
evidence. Its licence is not stated, so no copy of it is kept in this repository: PATH is a
local copy, any of

* the published `data/locomo10.json` (a list of samples with `conversation` and `qa`),
* the archive `data/locomo10.zip` (one JSON file per conversation), or a folder of its files.

Retrieval only: for each conversation a fresh daemon gets one record per turn (`memory.add`,
body `Speaker: text`, plus the caption of a shared photo, the speaker as `author`,
`created_at` the session's date and time, a second per turn later), then each question of
categories 1-4 is asked as a task title through `memory.retrieve`. Category 5 (adversarial:
questions about things never said) has no evidence to find and is left out. Per category it
reports, over the packed records:

* recall: share of a question's evidence turns packed;
* hit: share of questions with at least one evidence turn packed;
* MRR: mean of 1 / rank of the first evidence turn packed (0 if none);
* avg packed.

Beside it, in the same daemons, the same retrieval with the score cutoff off
(`engine.memory_retrieval_min_score_ratio` = 0, set with `config.set`) and plain FTS5
(`memory.search` of the question, first 8 by bm25).
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

WHERE = ("LoCoMo is not in this repository (its licence is not stated). Get "
         "data/locomo10.json (or data/locomo10.zip) from "
         "https://github.com/snap-research/locomo and pass --locomo PATH")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
TOP_K = 8
ADD_BATCH = 200
_TURN_ID_RE = re.compile(r"D\d+:\d+")
_DATE_RE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})",
                      re.IGNORECASE)
_MONTHS = {name: i for i, name in enumerate(
    ("january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december"), 1)}


# --- reading the data ------------------------------------------------------------------------

def read_samples(path: Path) -> list[dict[str, Any]]:
    """Every conversation at `path` as {"sample_id", "conversation", "qa"}, in file order;
    a file that is not JSON (an empty or cut download) stops with a message naming it."""
    if path.is_dir():
        return [s for f in sorted(path.rglob("*.json"), key=_numeric_name)
                for s in _samples(_json(f.read_text(encoding="utf-8"), f), f.stem)]
    if path.suffix == ".zip":
        try:
            with zipfile.ZipFile(path) as archive:
                names = sorted((n for n in archive.namelist() if n.endswith(".json")),
                               key=lambda n: _numeric_name(Path(n)))
                return [s for n in names for s in _samples(
                    _json(archive.read(n).decode("utf-8"), path / n), Path(n).stem)]
        except zipfile.BadZipFile as error:
            raise SystemExit(f"--locomo: {path} is not a zip archive ({error}). {WHERE}") \
                from None
    return _samples(_json(path.read_text(encoding="utf-8"), path), path.stem)


def _json(text: str, where: Path) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        what = "is empty" if not text.strip() else f"is not JSON ({error})"
        raise SystemExit(f"--locomo: {where} {what}. {WHERE}") from None


def _numeric_name(path: Path) -> tuple[int, str]:
    return (int(path.stem), "") if path.stem.isdigit() else (1 << 30, path.stem)


def _samples(data: Any, name: str) -> list[dict[str, Any]]:
    if isinstance(data, list):  # the published locomo10.json
        return [s for i, item in enumerate(data) for s in _samples(item, f"{name}-{i}")]
    if not isinstance(data, dict) or not isinstance(data.get("qa"), list):
        raise SystemExit(f"--locomo: {name} is not a LoCoMo conversation (no 'qa' list)")
    conversation = data.get("conversation", data)  # the archive's files are flat
    if not isinstance(conversation, dict) or "speaker_a" not in conversation:
        raise SystemExit(f"--locomo: {name} has no conversation with speakers")
    return [{"sample_id": str(data.get("sample_id") or name), "conversation": conversation,
             "qa": data["qa"]}]


def session_start(text: Any) -> datetime | None:
    """'1:56 pm on 8 May, 2023' -> 2023-05-08 13:56 UTC (None if it does not read so)."""
    match = _DATE_RE.search(text) if isinstance(text, str) else None
    if not match:
        return None
    hour, minute, half, day, month, year = match.groups()
    number = _MONTHS.get(month.lower())
    if number is None:
        return None
    hour24 = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    try:
        return datetime(int(year), number, int(day), hour24, int(minute), tzinfo=UTC)
    except ValueError:
        return None


def turns(sample: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(dia_id, memory.add params) for every turn, sessions in order."""
    conversation = sample["conversation"]
    numbers = sorted(int(k.split("_")[1]) for k in conversation
                     if re.fullmatch(r"session_\d+", k) and isinstance(conversation[k], list))
    for number in numbers:
        start = session_start(conversation.get(f"session_{number}_date_time"))
        for offset, turn in enumerate(conversation[f"session_{number}"]):
            dia_id, text = turn.get("dia_id"), turn.get("text")
            if not isinstance(dia_id, str) or not isinstance(text, str):
                continue
            speaker = turn.get("speaker") if isinstance(turn.get("speaker"), str) else "someone"
            body = f"{speaker}: {text.strip()}"
            caption = turn.get("blip_caption")
            if isinstance(caption, str) and caption.strip():
                body += f" [shares {caption.strip()}]"
            params = {"body": body, "type": "episodic", "scope": "global", "trust": "human",
                      "source": f"locomo:{sample['sample_id']}:{dia_id}", "author": speaker}
            if start is not None:
                params["created_at"] = (start + timedelta(seconds=offset)).isoformat()
            yield dia_id, params


def questions(sample: dict[str, Any], known: set[str]) -> Iterator[tuple[int, str, set[str]]]:
    """(category, question, evidence turn ids) of categories 1-4 whose evidence is a turn of
    the conversation (ids are read out of each evidence string: some hold two)."""
    for item in sample["qa"]:
        category, question = item.get("category"), item.get("question")
        if category not in CATEGORIES or not isinstance(question, str):
            continue
        evidence = {i for e in item.get("evidence") or [] if isinstance(e, str)
                    for i in _TURN_ID_RE.findall(e)} & known
        if evidence:
            yield category, question, evidence


# --- asking the daemon -----------------------------------------------------------------------

def add_all(client: Any, params: list[dict[str, Any]]) -> list[str]:
    """memory.add every record, ADD_BATCH to a JSON-RPC batch; the ids in order."""
    ids: list[str] = []
    for first in range(0, len(params), ADD_BATCH):
        chunk = params[first:first + ADD_BATCH]
        batch = [{"jsonrpc": "2.0", "id": first + i, "method": "memory.add", "params": p}
                 for i, p in enumerate(chunk)]
        client.send_raw(json.dumps(batch).encode("utf-8") + b"\n")
        replies = sorted(json.loads(client.read_line()), key=lambda r: r["id"])
        for reply in replies:
            if "error" in reply:
                raise SystemExit(f"--locomo: memory.add failed: {reply['error']}")
            ids.append(reply["result"]["id"])
    return ids


def score(picked: list[str], evidence: set[str]) -> dict[str, float]:
    found = [rank for rank, turn in enumerate(picked, 1) if turn in evidence]
    return {"recall": len(evidence & set(picked)) / len(evidence), "hit": float(bool(found)),
            "rr": 1 / found[0] if found else 0.0, "packed": float(len(picked))}


def evaluate(path: Path, quick: bool, start_daemon: Callable[[int], Any]) -> None:
    """Read LoCoMo at `path` (only its first conversation when `quick`), ask it, print."""
    samples = read_samples(path)
    print_rows(run(samples[:1] if quick else samples, start_daemon,
                   lambda line: print(line, flush=True)))


def run(samples: list[dict[str, Any]], start_daemon: Callable[[int], Any],
        say: Callable[[str], None]) -> dict[str, list[tuple[int, dict[str, float]]]]:
    """Rows (category, metrics) for "retrieve", "no cutoff" and "fts5", over every sample.

    `start_daemon(n)` returns a started daemon (tests/harness.py DaemonProcess) for the n-th
    sample; it is killed once the sample is asked."""
    rows: dict[str, list[tuple[int, dict[str, float]]]] = {
        "retrieve": [], "no cutoff": [], "fts5": []}
    for index, sample in enumerate(samples):
        pairs = list(turns(sample))
        daemon = start_daemon(index)
        try:
            _ask(daemon, sample, pairs, rows)
        finally:
            daemon.kill()
        say(f"  locomo {sample['sample_id']}: {len(pairs)} turns, "
            f"{len(list(questions(sample, {dia for dia, _p in pairs})))} questions")
    return rows


def _ask(daemon: Any, sample: dict[str, Any], pairs: list[tuple[str, dict[str, Any]]],
         rows: dict[str, list[tuple[int, dict[str, float]]]]) -> None:
    with daemon.client(timeout=300) as client:
        ids = add_all(client, [p for _dia, p in pairs])
        turn_of = {record_id: dia for record_id, (dia, _p) in zip(ids, pairs, strict=True)}
        asked = list(questions(sample, set(turn_of.values())))
        ratio = client.call("config.get", {"key":
                                           "engine.memory_retrieval_min_score_ratio"})
        for name, setting in (("retrieve", ratio["value"]), ("no cutoff", 0.0)):
            client.call("config.set", {"key": "engine.memory_retrieval_min_score_ratio",
                                       "value": setting})
            for n, (category, question, evidence) in enumerate(asked):
                task = {"id": f"{sample['sample_id']}-Q{n}", "title": question}
                res = client.call("memory.retrieve", {"task": task})
                picked = [turn_of[s["id"]] for s in res["selected"]]
                rows[name].append((category, score(picked, evidence)))
        for category, question, evidence in asked:
            found = client.call("memory.search", {"query": question, "limit": TOP_K})
            picked = [turn_of[r["id"]] for r in found["records"]]
            rows["fts5"].append((category, score(picked, evidence)))


def print_rows(rows: dict[str, list[tuple[int, dict[str, float]]]]) -> None:
    print("\nLoCoMo (retrieval only; evidence turns among the packed records, categories 1-4)")
    print(f"  {'':14} {'questions':>9} {'recall':>7} {'hit':>6} {'MRR':>6} {'packed':>6}   "
          f"{'no cutoff recall':>16}   {'fts5 recall':>11} {'hit':>6} {'MRR':>6}")
    groups = [(f"{c} {name}", {c}) for c, name in CATEGORIES.items()]
    for label, wanted in [*groups, ("overall", set(CATEGORIES))]:
        ours, plain, base = (_mean([m for c, m in rows[k] if c in wanted])
                             for k in ("retrieve", "no cutoff", "fts5"))
        print(f"  {label:14} {ours['n']:9d} {ours['recall']:7.3f} {ours['hit']:6.3f} "
              f"{ours['rr']:6.3f} {ours['packed']:6.2f}   {plain['recall']:16.3f}   "
              f"{base['recall']:11.3f} {base['hit']:6.3f} {base['rr']:6.3f}")


def _mean(metrics: list[dict[str, float]]) -> dict[str, Any]:
    n = len(metrics) or 1
    out: dict[str, Any] = {k: sum(m[k] for m in metrics) / n
                           for k in ("recall", "hit", "rr", "packed")}
    out["n"] = len(metrics)
    return out
