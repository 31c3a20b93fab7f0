"""Walk a local run's folders for their files' sizes, modification times and change tokens.

A local listing is a `stat` per object: on a run of thousands of trial folders with dozens of
episode files each, most of the listing's time. Only the standard library here, so listing
workers (trace_assets.runtime.process_pool) that import this module start in milliseconds.

Hostile input (trial folders are written by the policy under training): the walk never follows
a symbolic link, never opens anything but folders, and never fails on one entry. Whatever is
not a regular file or a folder it can enter is reported as a skipped entry with its kind, so the
listing can account for it: links (to files or folders, dangling or looping), FIFOs, sockets and
devices (never opened, so they cannot block), folders it cannot enter, and names that are not
UTF-8 (shown with the undecodable bytes escaped, `\\xff`).
"""

from __future__ import annotations

import os
from enum import StrEnum


class EntryKind(StrEnum):
    """Why a listed entry is not read as an object. Travels as its plain string value."""

    LINK = "link"
    SPECIAL = "special"  # FIFO, socket or device
    UNREADABLE = "unreadable"  # a folder that cannot be entered
    UNDECODABLE_NAME = "undecodable_name"


# keys (prefixed with the folder's relative path), sizes, change tokens, modification times (µs
# since the epoch), and skipped entries as (position in the keys, kind): they sit among the keys,
# with size 0, so the listing's batching keeps them with their folder.
Columns = tuple[list[str], list[int], list[str | None], list[int | None], dict[int, str]]


def escaped_name(name: str) -> str:
    """A file name as text that any encoder accepts: undecodable bytes become `\\xNN`."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def _decodable(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def walk_folder(folder: str, relative: str, subfolders: list[str] | None = None) -> Columns:
    """Every entry under a folder, depth first; an explicit stack and plain lists, as they cost least.

    With `subfolders`, the folder's own entries only: the names of its subfolders go there.
    A folder that cannot be entered is a skipped entry, except the root (`relative` empty): that
    is the store's failure, and raises.

    A file's change token is its inode and ctime: a copy that keeps size and modification time
    (`cp -p`, `rsync -a`, `tar x`) cannot keep them, so the incremental cache sees the change.
    """
    keys: list[str] = []
    sizes: list[int] = []
    tokens: list[str | None] = []
    modified: list[int | None] = []
    skipped: dict[int, str] = {}

    def skip(key: str, kind: EntryKind) -> None:
        skipped[len(keys)] = kind.value
        keys.append(key)
        sizes.append(0)
        tokens.append(None)
        modified.append(None)

    stack = [(folder, relative)]
    while stack:
        folder, relative = stack.pop()
        try:
            with os.scandir(folder) as scanned:
                entries = list(scanned)
        except OSError:
            if not relative:
                raise
            skip(relative[:-1], EntryKind.UNREADABLE)
            continue
        for entry in entries:
            name = entry.name
            if not (name.isascii() or _decodable(name)):
                skip(relative + escaped_name(name), EntryKind.UNDECODABLE_NAME)
            elif entry.is_dir(follow_symlinks=False):
                if subfolders is None:
                    stack.append((entry.path, f"{relative}{name}/"))
                else:
                    subfolders.append(name)
            elif entry.is_file(follow_symlinks=False):
                try:
                    stat = entry.stat(follow_symlinks=False)
                except OSError:  # gone since the scan
                    continue
                keys.append(relative + name)
                sizes.append(stat.st_size)
                tokens.append(f"{stat.st_ino}:{stat.st_ctime_ns}")
                modified.append(stat.st_mtime_ns // 1000)
            else:
                skip(relative + name, EntryKind.LINK if entry.is_symlink() else EntryKind.SPECIAL)
    return keys, sizes, tokens, modified, skipped


def walk_folders(root: str, names: list[str]) -> list[Columns]:
    return [walk_folder(os.path.join(root, name), f"{name}/") for name in names]
