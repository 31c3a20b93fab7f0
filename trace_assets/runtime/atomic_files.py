"""The one way files and folders are replaced: write a unique temp sibling, then rename it over.

Temp names are unique per attempt (process id and a random part), so two attempts never write
the same temp file, and hidden (a leading `.`), so they never collide with a scope's folders,
whose names start with a letter or digit. A killed attempt's temps are removed by the next one
that holds the scope (`remove_leftovers`).

Published files are also durable (`durable=True`, `copy_atomically`, `move_into_place`): each file
is flushed to disk before the rename that makes it visible, and the folder holding the new name
after it, so after a power loss a renamed card or shard is never empty or missing while the card
naming it is there. A single file is fsynced; a folder of thousands (a version's session files) is
flushed whole by one `syncfs` of its file system where the C library has it (Linux), which costs
a fraction of a fsync per file, else file by file. Staged files skip that: one cut short reads
back broken and is rebuilt.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

TEMP_MARK = ".tmp-"
FSYNC_THREADS = 16  # fsyncs of one folder's files in flight at once
# Temp names of earlier versions, still removed where found.
_OLD_TEMP_MARKS = (".partial", ".retired", ".incoming-", ".retired-")


def temp_sibling(path: Path) -> Path:
    return path.with_name(f".{path.name}{TEMP_MARK}{os.getpid()}-{uuid.uuid4().hex[:8]}")


def is_leftover(name: str) -> bool:
    """A temp file or folder of some attempt (this one's included)."""
    return name.startswith(".") and (TEMP_MARK in name or any(mark in name for mark in _OLD_TEMP_MARKS))


@contextmanager
def replaced_atomically(path: Path, durable: bool = False) -> Iterator[Path]:
    """Yield a fresh temp sibling of `path` to write (a file, or a folder the caller makes); when
    the block succeeds it takes `path`'s place, when it fails it is removed.

    A file is replaced by one rename, so readers see the old file or the new one. A folder takes
    two (the old one aside, the new one in): a crash between them leaves no folder, so only
    rebuildable data (staging) is replaced this way, never a published folder. `durable`: the
    file (the folder with every file in it, `sync_tree`) is on disk before the rename, its folder after.
    """
    created = make_parents(path)
    temp = temp_sibling(path)
    try:
        yield temp
    except BaseException:
        remove_path(temp)
        raise
    if durable:
        sync_tree(temp)
    if temp.is_dir():
        retired = temp_sibling(path)
        if path.exists():
            path.rename(retired)
        temp.rename(path)
        remove_path(retired)
    else:
        os.replace(temp, path)
    if durable:
        fsync_parents(path, created)


def copy_atomically(source: Path, path: Path) -> None:
    """A published file: the old one or the new one whole, also after a power loss."""
    with replaced_atomically(path, durable=True) as temp:
        shutil.copyfile(source, temp)


def make_parents(path: Path) -> list[Path]:
    """Create `path`'s missing parent folders; returns those created, the outermost first."""
    missing = []
    parent = path.parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    path.parent.mkdir(parents=True, exist_ok=True)
    return missing[::-1]


def fsync_path(path: Path) -> None:
    """Flush a file's data, or a folder's entries, to disk."""
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if path.is_dir() else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _c_syncfs() -> Callable[[int], int] | None:
    """The C library's `syncfs(fd)`, where it has one (glibc on Linux); None elsewhere."""
    try:
        return ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError, TypeError):  # no such function; no C library to load by None
        return None


_SYNCFS = _c_syncfs()


def syncfs(path: Path) -> bool:
    """Flush every dirty file and folder of the file system holding `path` (`syncfs(2)`: one call
    and one journal commit, however many files); False where the C library has no syncfs."""
    if _SYNCFS is None:
        return False
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if path.is_dir() else 0))
    try:
        if _SYNCFS(fd) != 0:
            code = ctypes.get_errno()
            raise OSError(code, f"syncfs: {os.strerror(code)}", str(path))
    finally:
        os.close(fd)
    return True


def sync_tree(path: Path) -> None:
    """A folder with everything in it on disk before it is renamed into place: one `syncfs` of its
    file system (every file and folder of the tree is on it, as nothing published is a mount
    point), else `fsync_tree`. A single file is fsynced."""
    if path.is_dir() and not path.is_symlink() and syncfs(path):
        return
    fsync_tree(path)


def fsync_tree(path: Path) -> None:
    """A file, or every file and folder of a folder: the files several at a time (each fsync waits
    for the disk, and the file system commits concurrent ones together), then the folders, the
    deepest first, the folder itself last."""
    if path.is_dir() and not path.is_symlink():
        children = [child for child in path.rglob("*") if not child.is_symlink()]
        files = [child for child in children if not child.is_dir()]
        if len(files) > 1:
            with ThreadPoolExecutor(min(FSYNC_THREADS, len(files))) as pool:
                list(pool.map(fsync_path, files))
        elif files:
            fsync_path(files[0])
        for child in sorted((c for c in children if c.is_dir()), key=lambda p: -len(p.parts)):
            fsync_path(child)
    fsync_path(path)


def fsync_parents(path: Path, created: Sequence[Path] = ()) -> None:
    """After `path` was renamed into place: its folder, and the folders holding any folder just
    created on the way (`created`, from `make_parents`), so every new name on its path is on disk."""
    for folder in [path.parent, *(folder.parent for folder in reversed(created))]:
        fsync_path(folder)


def files_below(folder: Path) -> dict[str, int]:
    """Every file below `folder` (`Path.is_file`'s: a link to a file counts, a folder reached
    through a link is not entered, as `rglob` does), by its path relative to `folder` with `/`
    separators, with its size. os.scandir: a fraction of pathlib's cost for a version's 22,000 files."""
    found: dict[str, int] = {}
    pending = [("", str(folder))]
    while pending:
        prefix, path = pending.pop()
        with os.scandir(path) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    pending.append((f"{prefix}{entry.name}/", entry.path))
                elif entry.is_file():
                    found[prefix + entry.name] = entry.stat().st_size
    return found


def remove_path(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def remove_leftovers(folder: Path) -> list[Path]:
    """Remove interrupted attempts' temp files and folders under `folder`; returns what went."""
    if not folder.is_dir():
        return []
    found = [path for path in folder.rglob(".*") if is_leftover(path.name)]
    for path in found:
        remove_path(path)
    return found
