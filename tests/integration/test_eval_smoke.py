"""scripts/eval.py runs end to end on a slice of the labelled set and prints its metrics."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO
from tests.harness import DaemonProcess


def test_eval_quick_prints_metrics_for_both_rankings_on_both_sets():
    done = subprocess.run([sys.executable, "scripts/eval.py", "--quick", "--tasks"], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    loaded = re.findall(r"^== (\S+): loaded (\d+) records; 12 tasks$", out, re.MULTILINE)
    assert [name for name, _ in loaded] == ["tests/eval/set.json", "tests/eval/blind.yaml"], out
    assert all(int(n) >= 100 for _, n in loaded), loaded
    header = re.compile(r"recall@8 +MRR +prec@8 +viol +copies +no_terms")
    # per set: memory.retrieve and the FTS5 baseline; then both sets side by side
    assert len(header.findall(out)) == 5, out
    for name in ("easy", "hard", "overall"):
        rows = re.findall(rf"^  {name} +(\d+) +([\d.]+) +([\d.]+) +([\d.]+) +(\d+) +(\d+) +(\d+)",
                          out, re.MULTILINE)
        assert len(rows) == 4, (name, out)
        for row in rows:
            assert all(0.0 <= float(v) <= 1.0 for v in row[1:4]), row
    side = out[out.index("all sets side by side"):]
    for name in ("set", "set fts5", "blind", "blind fts5"):
        assert re.search(rf"^  {name} +12 +[\d.]+ +[\d.]+ +[\d.]+ ", side, re.MULTILINE), side
    assert len(re.findall(r"^  [EH]-\S+ +(easy|hard) ", out, re.MULTILINE)) == 12, out
    assert len(re.findall(r"^  B[EH]-\S+ +(easy|hard) ", out, re.MULTILINE)) == 12, out


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
