"""scripts/eval.py runs end to end on a slice of the labelled set and prints its metrics."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO
from tests.harness import DaemonProcess


def test_eval_quick_prints_metrics_for_both_rankings_on_every_set():
    done = subprocess.run([sys.executable, "scripts/eval.py", "--quick", "--tasks"], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    loaded = re.findall(r"^== (\S+): loaded (\d+) records; 12 tasks$", out, re.MULTILINE)
    assert [name for name, _ in loaded] == ["tests/eval/set.json", "tests/eval/blind.yaml",
                                            "tests/eval/third.yaml"], out
    assert all(int(n) >= 90 for _, n in loaded), loaded
    header = re.compile(r"recall@8 +MRR +prec@8 +viol +copies +no_terms")
    # per set: memory.retrieve and the FTS5 baseline; then the sets side by side
    assert len(header.findall(out)) == 7, out
    for name in ("easy", "hard", "overall"):
        rows = re.findall(rf"^  {name} +(\d+) +([\d.]+) +([\d.]+) +([\d.]+) +(\d+) +(\d+) +(\d+)",
                          out, re.MULTILINE)
        assert len(rows) == 6, (name, out)
        for row in rows:
            assert all(0.0 <= float(v) <= 1.0 for v in row[1:4]), row
    # the cutoff's cost, read off the same daemon
    assert len(re.findall(r"^  no cutoff +12 ", out, re.MULTILINE)) == 3, out
    side = out[out.index("all sets side by side"):]
    for name in ("set", "set no cutoff", "set fts5", "blind", "blind no cutoff", "blind fts5",
                 "third", "third no cutoff", "third fts5"):
        assert re.search(rf"^  {name} +12 +[\d.]+ +[\d.]+ +[\d.]+ ", side, re.MULTILINE), side
    assert len(re.findall(r"^  [EH]-\S+ +(easy|hard) ", out, re.MULTILINE)) == 12, out
    assert len(re.findall(r"^  B[EH]-\S+ +(easy|hard) ", out, re.MULTILINE)) == 24, out
    assert "LoCoMo skipped" in out and "snap-research/locomo" in out


def test_eval_locomo_reads_a_local_copy_and_reports_per_category(tmp_path: Path) -> None:
    """A two-session conversation in the published locomo10.json form: every question of
    categories 1-4 finds an evidence turn, and all of them with no cutoff."""
    turns = [("Ann", "I adopted a beagle called Pixel last week."),
             ("Ben", "Nice! I started learning the cello in the spring."),
             ("Ann", "Pixel chewed my running shoes this morning."),
             ("Ben", "My cello teacher lives in Lisbon.")]
    conversation = {"speaker_a": "Ann", "speaker_b": "Ben",
                    "session_1_date_time": "1:56 pm on 8 May, 2023",
                    "session_1": [{"speaker": s, "dia_id": f"D1:{i + 1}", "text": t}
                                  for i, (s, t) in enumerate(turns[:2])],
                    "session_2_date_time": "10:37 am on 27 June, 2023",
                    "session_2": [{"speaker": s, "dia_id": f"D2:{i + 1}", "text": t}
                                  for i, (s, t) in enumerate(turns[2:])]}
    qa = [{"question": "What did Pixel chew?", "evidence": ["D2:1"], "category": 4},
          {"question": "When did Ann adopt Pixel?", "evidence": ["D1:1"], "category": 2},
          {"question": "Where does Ben's cello teacher live?", "evidence": ["D1:2; D2:2"],
           "category": 1},
          {"question": "Would Ann like a beagle?", "evidence": ["D1:1"], "category": 3},
          {"question": "What did Ann say about cats?", "evidence": [], "category": 5,
           "adversarial_answer": "nothing"}]
    data = tmp_path / "locomo10.json"
    data.write_text(json.dumps([{"sample_id": "conv-1", "conversation": conversation,
                                 "qa": qa}]))
    done = subprocess.run([sys.executable, "scripts/eval.py", "--no-sets", "--locomo", str(data)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "=== set" not in out and "locomo conv-1: 4 turns, 4 questions" in out, out
    rows = dict(re.findall(r"^  (\d \S+|overall) +(\d+ +[\d. ]+)$", out, re.MULTILINE))
    assert set(rows) == {"1 multi-hop", "2 temporal", "3 open-domain", "4 single-hop",
                         "overall"}, out
    overall = rows["overall"].split()  # questions, recall, hit, MRR, packed, no-cutoff recall
    assert overall[0] == "4" and overall[2] == overall[5] == "1.000", out
    missing = subprocess.run([sys.executable, "scripts/eval.py", "--locomo",
                              str(tmp_path / "absent.json")], cwd=REPO, capture_output=True,
                             text=True, timeout=60)
    assert missing.returncode != 0 and "does not exist" in missing.stderr
    empty = tmp_path / "empty.json"
    empty.write_text("")
    done = subprocess.run([sys.executable, "scripts/eval.py", "--locomo", str(empty)], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and f"{empty} is empty" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "== " not in done.stdout  # before the sets


def _retrieved_terms(tmp_path: Path, without: list[str]) -> list[str]:
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import eval as evaluation
    finally:
        sys.path.remove(str(REPO / "scripts"))
    daemon = DaemonProcess(tmp_path / "-".join(["home", *without]),
                           env=evaluation.daemon_env(without))
    daemon.start()
    try:
        with daemon.client() as client:
            task = {"id": "T-1", "title": "Login calls are rate limited by the identity provider"}
            return client.call("memory.retrieve", {"task": task})["terms"]
    finally:
        daemon.stop()


def test_without_switches_the_part_off_in_the_daemon_only(tmp_path: Path) -> None:
    """--without synonyms: the daemon eval.py starts adds no synonyms; one started without it
    does (so the figures of a --without run are really retrieval without that part)."""
    assert "429" in _retrieved_terms(tmp_path, [])
    assert "429" not in _retrieved_terms(tmp_path, ["synonyms"])
    assert "rate" in _retrieved_terms(tmp_path, ["synonyms"])
