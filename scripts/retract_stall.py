"""How long other clients wait while `memory.retract` handles a very long reason.

    .venv/bin/python scripts/retract_stall.py               # a 900 KB reason, 3 trials
    .venv/bin/python scripts/retract_stall.py --kib 2000 --trials 5

Starts a daemon on a temp home, then for each trial sends one `memory.retract` whose reason is
near-secret fragments (the redactor's slowest input) from a thread while another connection
calls `status` in a loop until the retraction answers. Prints the retraction's time and the
longest `status` call during it. Asserts nothing; the machine's other load moves the figures.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.harness import DaemonProcess  # noqa: E402

CHUNK = "password= token: Bearer aaaa sk-abc eyJabc.def ://u:p@ -----BEGIN x "


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kib", type=int, default=900, help="size of the reason in KiB")
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="stall-", dir="/tmp"))
    daemon = DaemonProcess(root / "home").start()
    reason = CHUNK * (args.kib * 1024 // len(CHUNK))
    try:
        for trial in range(args.trials):
            record = daemon.call("memory.add", body=f"The damson queue drains nightly {trial}.",
                                 type="semantic", scope="global", trust="human", source="bench")
            took: list[float] = []
            done = threading.Event()

            def retract(record_id: str = record["id"], took: list[float] = took,
                        done: threading.Event = done) -> None:
                started = time.perf_counter()
                daemon.call("memory.retract", id=record_id, reason=reason)
                took.append(time.perf_counter() - started)
                done.set()

            worker = threading.Thread(target=retract)
            worker.start()
            waits = []
            with daemon.client() as client:
                while not done.is_set():
                    started = time.perf_counter()
                    client.call("status", {})
                    waits.append(time.perf_counter() - started)
            worker.join()
            print(f"trial {trial + 1}: retract {took[0] * 1000:.0f} ms, longest status "
                  f"{max(waits) * 1000:.0f} ms over {len(waits)} calls")
    finally:
        daemon.kill()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
