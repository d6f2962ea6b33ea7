"""Crash-safe file primitives: atomic replace, locked append, reading with limits.

Atomic replace = write a temp file in the same directory, fsync it, rename over the target,
fsync the directory. A reader therefore sees the old or the new file, never a mix.
"""

from __future__ import annotations

import errno
import fcntl
import os
import secrets
import signal
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from filelock import FileLock

LOCK_TIMEOUT_S = 10.0


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


NAME_MAX_BYTES = 255  # the longest file name Linux and macOS file systems take


def fit_name(stem: str, suffix: str, max_bytes: int = NAME_MAX_BYTES) -> str:
    """`stem + suffix`, the stem cut (on a character boundary) so the whole fits max_bytes."""
    room = max(0, max_bytes - len(suffix.encode("utf-8")))
    return stem.encode("utf-8")[:room].decode("utf-8", "ignore") + suffix


def _temp_name(path: Path, tag: str) -> Path:
    """A hidden temp name beside `path`: the pid and 6 random bytes (opened O_EXCL). A long
    target name is cut so the temp name is still a legal file name."""
    return path.with_name(fit_name(f".{path.name}", f".{tag}.{os.getpid()}."
                                   f"{secrets.token_hex(6)}"))


def _write_temp(path: Path, tag: str, data: bytes, mode: int, sync: bool = True) -> Path:
    """Write `data` to a fresh temp file beside `path` and fsync it (unless `sync` is false);
    returns its path.

    O_EXCL: a temp file is only ever this writer's own inode, so two writers can never
    truncate or fill each other's file.
    """
    while True:
        tmp = _temp_name(path, tag)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if sync:
                handle.flush()
                os.fsync(handle.fileno())
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename is None:
            exc.filename = str(path)  # a write error names no file: say which one
        raise
    return tmp


def write_temp_synced(path: Path, data: bytes, mode: int = 0o600) -> Path:
    """atomic_write_bytes's first half: `data` in a fresh hidden temp file beside `path`,
    synced to disk. The caller renames it into place (then fsyncs the directory) or
    unlinks it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return _write_temp(path, "tmp", data, mode)


def _rename_over(tmp: Path, path: Path) -> None:
    """os.replace(tmp, path); an error names `path` alone (e.g. "is a directory: notes.md"),
    not the temp file, which is gone once the caller cleans up."""
    try:
        os.replace(tmp, path)
    except OSError as exc:
        if exc.filename2 is None:
            raise
        raise OSError(exc.errno, exc.strerror, str(path)) from None


def atomic_write_bytes(path: Path, data: bytes, mode: int = 0o600) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _write_temp(path, "tmp", data, mode)
    try:
        _rename_over(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str, mode: int = 0o600) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), mode)


def atomic_write_through(path: Path, text: str, mode: int = 0o600) -> None:
    """atomic_write_text for a file a person may have made a symlink (config.toml kept in a
    dotfiles repository, a shared pinned.md): the link stays and its target is replaced,
    keeping the target's permissions when it exists."""
    if path.is_symlink():
        path = Path(os.path.realpath(path))
        try:
            mode = path.stat().st_mode & 0o777
        except FileNotFoundError:
            pass
    atomic_write_text(path, text, mode)


def lock_for(path: Path) -> FileLock:
    """The permanent lock file guarding `path` (kept beside it, never deleted)."""
    # Imported on first use: the daemon's start-up path locks nothing.
    from filelock import FileLock

    return FileLock(str(path.with_name(f".{path.name}.lock")), timeout=LOCK_TIMEOUT_S)


class ReadWarnings(Protocol):
    """Told how each hand-editable file read went (memory/filewarn.py keeps them for status)."""

    def replaced(self, path: Path, reason: str) -> None: ...

    def clean(self, path: Path, text: str) -> None: ...


def decode_lenient(data: bytes, path: Path, warnings: ReadWarnings | None = None) -> str:
    """`data` as UTF-8; bytes that are not UTF-8 become U+FFFD and `warnings` hears of it."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if warnings is not None:
            warnings.replaced(path, f"not valid UTF-8 (first bad byte at offset {exc.start}); "
                                    "read with U+FFFD in place of each undecodable byte")
        return data.decode("utf-8", "replace")
    if warnings is not None:
        warnings.clean(path, text)
    return text


KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
         (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def kind_of(mode: int) -> str:
    """What a file of `mode` is, in words ("a FIFO"); "a regular file" for one."""
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((word for test, word in KINDS if test(mode)), "not a regular file")


class NotRegularFile(OSError):
    """A file minionsd reads or appends to is a directory, FIFO, socket or device. str() is
    the reason alone ("is a FIFO, not a regular file"); the path is `filename`, and
    errors.os_error_detail shows both."""

    def __init__(self, path: Path, kind: str) -> None:
        super().__init__(errno.EINVAL, f"is {kind}, not a regular file", str(path))
        self.kind = kind

    def __str__(self) -> str:
        return self.strerror or ""


def open_regular(path: Path, flags: int = os.O_RDONLY) -> int:
    """A descriptor on `path` (symlinks followed), which must be a regular file: NotRegularFile
    otherwise, FileNotFoundError when it does not exist. Never blocks: a FIFO is opened
    O_NONBLOCK and refused, so no reader or writer ever waits for the other end."""
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno != errno.ENXIO:  # ENXIO: a socket, or a FIFO with no reader
            raise
        raise NotRegularFile(path, kind_of(os.stat(path).st_mode)) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(path, kind_of(mode))
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_regular(path: Path) -> None:
    """NotRegularFile when `path` (symlinks followed) exists and is not a regular file, for a
    reader that must not open a FIFO or device."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise NotRegularFile(path, kind_of(mode))


def open_for_writing(path: Path) -> bool | None:
    """Whether some process has the regular file `path` open for writing, so it may not be
    fully written yet; None when that cannot be told (no file leases on this platform or file
    system, a file owned by another user, a file that is gone).

    Linux refuses a read lease (F_SETLEASE F_RDLCK, EAGAIN) on a file open for writing
    anywhere. A lease that is granted is dropped at once; a writer opening the file in that
    instant waits for the drop, and the lease-break signal is SIGURG, which is ignored by
    default (the default SIGIO would end the process)."""
    set_lease = getattr(fcntl, "F_SETLEASE", None)
    set_sig = getattr(fcntl, "F_SETSIG", None)
    if set_lease is None or set_sig is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.fcntl(fd, set_sig, signal.SIGURG)
        fcntl.fcntl(fd, set_lease, fcntl.F_RDLCK)
    except OSError as exc:
        return True if exc.errno == errno.EAGAIN else None
    finally:
        os.close(fd)  # also drops the lease
    return False


def read_text(path: Path, warnings: ReadWarnings | None = None) -> str | None:
    """The file's text, None when it does not exist. Hand-edited files may hold bytes that are
    not UTF-8: they are read as U+FFFD (never an error), and `warnings` is told (SPEC §2).

    A path that is not a regular file (a directory, a FIFO, a device) reads as missing, never
    blocking, and `warnings` is told what it is; other errors (permissions) are raised, as a
    caller that rewrites the file must not take an unreadable one for an empty one."""
    try:
        fd = open_regular(path)
    except FileNotFoundError:
        if warnings is not None:
            warnings.clean(path, "")  # gone: whatever was said about it no longer holds
        return None
    except NotRegularFile as exc:
        if warnings is not None:
            warnings.replaced(path, f"{exc.strerror}: read as missing until it is a regular "
                                    "file again")
        return None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read()
    return decode_lenient(data, path, warnings)


def read_shown(path: Path, warnings: ReadWarnings | None = None) -> str | None:
    """read_text for a file that is only shown (a prompt's section), never rewritten from
    what was read: a file that cannot be read at all (permissions, a symlink loop) is also
    None, with a warning naming the error, so it never fails what shows it (SPEC §2)."""
    try:
        return read_text(path, warnings)
    except OSError as exc:
        if warnings is not None:
            reason = (exc.strerror or type(exc).__name__).lower()
            warnings.replaced(path, f"cannot be read ({reason}): left out until it can")
        return None


def read_tail(path: Path, size: int) -> bytes | None:
    """The file's last `size` bytes (all of it when it is shorter), None when it does not
    exist; NotRegularFile when it is a directory, FIFO or device."""
    try:
        fd = open_regular(path)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as file:
        end = file.seek(0, os.SEEK_END)
        file.seek(max(0, end - size))
        return file.read()


def append_synced(path: Path, data: bytes) -> None:
    """Append `data` to an existing file and fsync it. A crash during the write can leave
    only part of `data` at the end: the caller must be able to tell on its redo
    (notesfile.history_addition does). NotRegularFile when `path` is a FIFO or device."""
    fd = open_regular(path, os.O_WRONLY | os.O_APPEND)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def create_new_text(path: Path, text: str, mode: int = 0o600) -> None:
    """Write a complete new file, failing with FileExistsError instead of overwriting.

    The temp file is hard-linked to the target name, which the kernel refuses when the name
    exists, so a concurrent writer can never be overwritten and no half file is visible.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _write_temp(path, "new", text.encode("utf-8"), mode)
    try:
        os.link(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)


# --- many files, few disk syncs (a consolidation batch) ------------------------------------

def _syncfs(path: Path) -> bool:
    """syncfs(2) on the file system holding `path`: one call flushes every file and directory
    written there. False where the platform has none (then the caller fsyncs each path)."""
    import ctypes  # only the daemon's batch writes come here

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        syncfs = libc.syncfs
    except (OSError, AttributeError):
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        if syncfs(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"syncfs failed: {os.strerror(err)}", str(path))
    finally:
        os.close(fd)
    return True


def flush_to_disk(paths: list[Path]) -> None:
    """Make the contents of `paths` (files or directories, on one file system) durable: one
    syncfs where the platform has it, else an fsync each. Fewer syncs than a file at a time,
    with the same guarantee once it returns."""
    if not paths or _syncfs(paths[0]):
        return
    for path in dict.fromkeys(paths):
        fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if path.is_dir() else 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_temp_unsynced(path: Path, text: str, mode: int = 0o600) -> Path:
    """A fresh hidden temp file beside `path` holding `text`, not yet synced (see
    create_from_temp and flush_to_disk)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return _write_temp(path, "new", text.encode("utf-8"), mode, sync=False)


def create_from_temp(tmp: Path, path: Path) -> None:
    """create_new_text's second half for a temp file already flushed to disk: link it to
    `path` (FileExistsError when the name is taken; the temp is removed either way). The
    caller flushes the directory afterwards."""
    try:
        os.link(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def replace_all(files: list[tuple[Path, str]], mode: int = 0o600, *,
                also_flush: list[Path] | tuple[Path, ...] = (),
                flush_directories: bool = True) -> list[Path]:
    """atomic_write_text of each (path, text) with two disk syncs in all instead of two per
    file: every text goes to a fresh temp file beside its target, the temps are flushed
    together (with `also_flush`), each is renamed over its target, then the directories are
    flushed. A crash leaves every target old or new, never a mix; once this returns, all are
    durable. With flush_directories False the renames are not flushed: the directories are
    returned for the caller to flush before anything relies on the new texts."""
    temps: list[tuple[Path, Path]] = []
    try:
        for path, text in files:
            path.parent.mkdir(parents=True, exist_ok=True)
            temps.append((_write_temp(path, "tmp", text.encode("utf-8"), mode, sync=False),
                          path))
        flush_to_disk([*(tmp for tmp, _ in temps), *also_flush])
        for tmp, path in temps:
            _rename_over(tmp, path)
    finally:
        for tmp, _ in temps:
            tmp.unlink(missing_ok=True)  # only those not renamed: a failure part way
    directories = list(dict.fromkeys(path.parent for _, path in temps))
    if not flush_directories:
        return directories
    flush_to_disk(directories)
    return []
