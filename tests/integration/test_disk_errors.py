"""A full disk (a small tmpfs home) gets a clear error naming the problem and the path, and a
consolidation batch that fails on it shows in `status` warnings until one runs through."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess

import pytest

from tests.integration.test_cli import clean_env, ok, run_ctl


@contextlib.contextmanager
def tiny_tmpfs(where, size: str = "6m"):
    where.mkdir(parents=True)
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs",
                        str(where)], check=True, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {exc}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=30)


def fill(path) -> None:
    """Write `path` until the file system is full."""
    with open(path, "wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    with contextlib.suppress(OSError), open(path, "ab") as handle:
        while True:  # the last few bytes too
            handle.write(b"\0" * 512)
            handle.flush()


def test_a_full_disk_is_named_and_a_failed_batch_is_a_status_warning(make_daemon,
                                                                       short_home):
    with tiny_tmpfs(short_home) as home:
        (home / "config.toml").write_text("[engine]\nauto_consolidate_memory = false\n")
        daemon = make_daemon(home=home)
        env = clean_env(MINIONS_HOME=str(home))
        ctl = lambda *args: run_ctl(*args, env=env)  # noqa: E731
        try:
            for i in range(3):
                ok(ctl("note", f"waiting note fulldisk{i} about the staging cluster",
                       "--title", f"waiting {i}"))
            fill(home / "filler.bin")

            refused = ctl("note", "one more note when the disk is full", "--title", "full")
            assert refused.returncode != 0
            said = refused.stderr + refused.stdout
            assert "no space left on device" in said and str(home / "notes" / "inbox") in said, \
                said
            assert "unexpectedly" not in said
            with pytest.raises(Exception) as err:
                daemon.call("inbox.submit", body="x" * 200, author="ci", title="full")
            assert err.value.code == -32000 and err.value.data["errno"] == "ENOSPC"

            failed = ctl("consolidate", "--force")
            assert failed.returncode != 0, failed.stdout
            status = json.loads(ok(ctl("status", "--json")))
            warned = [w for w in status["warnings"] if w["file"] == "notes/inbox"]
            assert len(warned) == 1 and "consolidation batch failed" in warned[0]["reason"], \
                status["warnings"]
            assert status["consolidation"]["last_failure"]["reason"]
            shown = ok(ctl("status"))
            assert "consolidation batch failed" in shown and "last batch FAILED" in shown, shown

            (home / "filler.bin").unlink()
            done = ok(ctl("consolidate", "--force"))
            assert "3 notes" in done, done
            status = json.loads(ok(ctl("status", "--json")))
            assert status["warnings"] == [] and status["consolidation"]["last_failure"] is None
            for i in range(3):
                assert "1 match" in ok(ctl("search", f"fulldisk{i}")), i
        finally:
            daemon.stop()
            os.sync()


def test_a_read_only_inbox_is_named(daemon, short_home):
    inbox = daemon.home / "notes" / "inbox"
    try:
        subprocess.run(["mount", "--bind", str(inbox), str(inbox)], check=True,
                       capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"cannot bind-mount here (needs root): {exc}")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(inbox)], check=True,
                       capture_output=True, timeout=30)
        env = clean_env(MINIONS_HOME=str(daemon.home))
        refused = run_ctl("note", "a note for a read-only inbox", "--title", "ro", env=env)
        said = refused.stderr + refused.stdout
        assert refused.returncode != 0
        assert f"read-only file system: {inbox}/" in said and "unexpectedly" not in said, said
        with pytest.raises(Exception) as err:
            daemon.call("inbox.submit", body="y" * 50, author="ci", title="ro")
        assert err.value.code == -32000 and err.value.data["errno"] == "EROFS"
        assert daemon.call("status")["pid"]  # the daemon keeps running
    finally:
        subprocess.run(["umount", "-l", str(inbox)], capture_output=True, timeout=30)
    ok(run_ctl("note", "a note once the inbox is writable", "--title", "rw",
               env=clean_env(MINIONS_HOME=str(daemon.home))))
