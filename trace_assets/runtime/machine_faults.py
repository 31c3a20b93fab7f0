"""Faults of the machine, not of the data, said in one line: a full or read-only file system, a
folder deleted under a running run, too many open files, a refused permission, the instance's
SQLite database locked, full or corrupt.

`fault_line` turns an exception (its whole `__cause__`/`__context__` chain, and the per-file
errors a `shutil.Error` holds) into one line of at most `MAX_LINE` characters: the cause in words,
the folder and its file system, and what is left as it was. `fault_detail` is everything else (the
chain, every file), for a run's debug log. Standard library only: the CLI's error path uses it too.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import sqlite3
import traceback
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

MAX_LINE = 240  # the CLI says it after "[trace-assets] <scope>: step <step> failed: ", within 300
INSTANCE = "DAGSTER_HOME"  # the name under which callers pass the Dagster instance's folder in `places`
MAX_PATH = 80  # a longer path is shown by its end: what names the folder
# The errors of the machine, in words; any other errno is not a machine fault for this module.
_ERRNO_CAUSES = {
    errno.ENOSPC: "no space left",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.EMFILE: "too many open files (ulimit -n)",
    errno.ENFILE: "too many open files on this machine",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EIO: "input/output error",
}
VANISHED = "a folder was removed while the run used it"
# SQLite's messages (through SQLAlchemy or not) for an instance database it cannot use.
_SQLITE_CAUSES = (
    ("database or disk is full", "no space left"),
    ("disk i/o error", "a disk I/O error"),
    ("database is locked", "the instance's database is locked by another process"),
    ("malformed", "the instance's database is corrupt"),
    ("file is not a database", "the instance's database is corrupt"),
    ("unable to open database file", "the instance's database cannot be opened"),
    ("readonly database", "the instance's database is read-only"),
)
_IO_CAUSES = {_ERRNO_CAUSES[errno.EIO], "a disk I/O error"}
NEARLY_FULL = 64 * 1024  # free bytes below which an I/O error is taken for a full file system
_ERRNO_IN_TEXT = re.compile(r"\[Errno (\d+)\]")


@dataclass(frozen=True)
class Fault:
    """One machine fault: what went wrong, in words, and the file or folder it concerns (None when
    the error names none, as SQLite's do)."""

    cause: str
    path: str | None
    database: bool = False  # SQLite's: the path is the instance's folder, not named by the error


def machine_fault(error: BaseException) -> Fault | None:
    """The first machine fault in `error`'s chain, or None when nothing in it is one."""
    for link in _chain(error):
        if isinstance(link, shutil.Error):
            for copy_fault in _copy_faults(link):
                return copy_fault
        if isinstance(link, OSError):
            fault = _os_fault(link.errno, link.filename)
            if fault is not None:
                return fault
        if isinstance(link, sqlite3.Error) or type(link).__module__.startswith("sqlalchemy"):
            text = str(link).lower()
            for message, cause in _SQLITE_CAUSES:
                if message in text:
                    return Fault(cause, None, database=True)
    return None


def fault_line(error: BaseException, places: Mapping[str, str | Path], kept: str) -> str | None:
    """One line for a machine fault in `error`'s chain (None when there is none): its cause, the
    place it concerns (the first of `places`, folders by name such as "the publish root", that
    holds its path; `INSTANCE`'s for the database), that place's file system and its free space,
    and `kept`, what is left as it was."""
    fault = machine_fault(error)
    if fault is None:
        return None
    name, folder = _place(fault, places)
    if fault.cause in _IO_CAUSES and folder and _nearly_full(folder):
        fault = Fault(f"no space left ({fault.cause})", fault.path, fault.database)
    if fault.database:
        line = f"{fault.cause}: the Dagster instance's database in {short_path(folder)}" if folder else fault.cause
    elif name:
        line = f"{fault.cause} under {name} {short_path(folder)}"
    else:
        line = f"{fault.cause} at {short_path(folder)}"
    line += _free_space(folder) if folder else ""
    line += f"; {kept}" if kept else ""
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 1] + "…"


def fault_detail(error: BaseException) -> str:
    """Everything `fault_line` leaves out: the exception chain with its tracebacks, and each file a
    copy could not make (a `shutil.Error`'s list), one a line."""
    lines = traceback.format_exception(error)
    for link in _chain(error):
        if isinstance(link, shutil.Error) and link.args and isinstance(link.args[0], list):
            lines += [f"{entry}\n" for entry in link.args[0]]
    return "".join(lines)


def _chain(error: BaseException) -> Iterator[BaseException]:
    """`error`, then what caused it and what it interrupted, each once, nearest first."""
    seen: set[int] = set()
    pending = [error]
    while pending:
        link = pending.pop(0)
        if id(link) in seen:
            continue
        seen.add(id(link))
        yield link
        pending += [e for e in (link.__cause__, link.__context__, getattr(link, "orig", None)) if e is not None]


def _copy_faults(error: shutil.Error) -> Iterator[Fault]:
    """A `shutil.copytree`'s error holds one (source, destination, message) a file, the message a
    string: the errno is read from its text."""
    entries = error.args[0] if error.args and isinstance(error.args[0], list) else []
    for entry in entries:
        if isinstance(entry, tuple) and len(entry) == 3:
            found = _ERRNO_IN_TEXT.search(str(entry[2]))
            fault = _os_fault(int(found.group(1)), str(entry[1])) if found else None
            if fault is not None:
                yield fault


def _os_fault(code: int | None, filename: object) -> Fault | None:
    path = os.fsdecode(filename) if isinstance(filename, str | bytes) else None
    if code == errno.ENOENT:
        # a file missing from a folder that is there is the data's or the code's, not the machine's
        if path is not None and not Path(path).parent.exists():
            return Fault(VANISHED, path)
        return None
    cause = _ERRNO_CAUSES.get(code) if code is not None else None
    return Fault(cause, path) if cause else None


def _place(fault: Fault, places: Mapping[str, str | Path]) -> tuple[str, str | None]:
    """The named place holding the fault's path (the Dagster instance's for the database's), else
    the path's own folder, unnamed."""
    if fault.database:
        for name, folder in places.items():
            if name == INSTANCE:
                return name, str(folder)
        return "", None
    if fault.path is None:
        return "", None
    path = os.path.abspath(fault.path)
    for name, folder in places.items():
        root = os.path.abspath(folder)
        if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
            return name, str(folder)
    return "", os.path.dirname(path)


def _free_space(folder: str) -> str:
    """ " (file system M: F of T free)" for the nearest existing folder of `folder`."""
    existing = _existing(folder)
    try:
        usage = shutil.disk_usage(existing)
        mount = mount_point(existing)
    except OSError:
        return ""
    where = "its file system" if mount == existing else f"file system {short_path(str(mount))}"
    return f" ({where}: {size(usage.free)} of {size(usage.total)} free)"


def _nearly_full(folder: str) -> bool:
    try:
        return shutil.disk_usage(_existing(folder)).free < NEARLY_FULL
    except OSError:
        return False


def _existing(folder: str) -> Path:
    """`folder`, or its nearest parent that exists (the file system it is, or would be, on)."""
    existing = Path(os.path.abspath(folder))
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    return existing


def mount_point(path: Path) -> Path:
    """The folder `path`'s file system is mounted at (where the device changes going up)."""
    path = path.resolve()
    device = path.stat().st_dev
    while path != path.parent and path.parent.stat().st_dev == device:
        path = path.parent
    return path


def size(count: float) -> str:
    """Bytes as people read them: 512 B, 20.0 MiB."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if count < 1024 or unit == "TiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} TiB"


def short_path(path: str | None) -> str:
    """`path` as a message shows it: a long one by its end, which names the folder."""
    text = str(path or "")
    return text if len(text) <= MAX_PATH else "…" + text[-(MAX_PATH - 1) :]
