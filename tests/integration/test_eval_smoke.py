"""scripts/eval.py runs end to end on a slice of the labelled set and prints its metrics."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import REPO


def test_eval_quick_prints_metrics_for_both_rankings():
    done = subprocess.run([sys.executable, "scripts/eval.py", "--quick", "--tasks"], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert re.search(r"loaded \d{3} records; 12 tasks", out), out
    header = re.compile(r"recall@8 +MRR +prec@8 +viol +copies +no_terms")
    assert len(header.findall(out)) == 2, out  # memory.retrieve and the FTS5 baseline
    for name in ("easy", "hard", "overall"):
        rows = re.findall(rf"^  {name} +(\d+) +([\d.]+) +([\d.]+) +([\d.]+) +(\d+) +(\d+) +(\d+)",
                          out, re.MULTILINE)
        assert len(rows) == 2, (name, out)
        for row in rows:
            assert all(0.0 <= float(v) <= 1.0 for v in row[1:4]), row
    assert len(re.findall(r"^  [EH]-\S+ +(easy|hard) ", out, re.MULTILINE)) == 12, out
