"""The one way files and folders are replaced: write a unique temp sibling, then rename it over.

Temp names are unique per attempt (process id and a random part), so two attempts never write
the same temp file, and hidden (a leading `.`), so they never collide with a scope's folders,
whose names start with a letter or digit. A killed attempt's temps are removed by the next one
that holds the scope (`remove_leftovers`).
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TEMP_MARK = ".tmp-"
# Temp names of earlier versions, still removed where found.
_OLD_TEMP_MARKS = (".partial", ".retired", ".incoming-", ".retired-")


def temp_sibling(path: Path) -> Path:
    return path.with_name(f".{path.name}{TEMP_MARK}{os.getpid()}-{uuid.uuid4().hex[:8]}")


def is_leftover(name: str) -> bool:
    """A temp file or folder of some attempt (this one's included)."""
    return name.startswith(".") and (TEMP_MARK in name or any(mark in name for mark in _OLD_TEMP_MARKS))


@contextmanager
def replaced_atomically(path: Path) -> Iterator[Path]:
    """Yield a fresh temp sibling of `path` to write (a file, or a folder the caller makes); when
    the block succeeds it takes `path`'s place, when it fails it is removed.

    A file is replaced by one rename, so readers see the old file or the new one. A folder takes
    two (the old one aside, the new one in): a crash between them leaves no folder, so only
    rebuildable data (staging) is replaced this way, never a published folder.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = temp_sibling(path)
    try:
        yield temp
    except BaseException:
        remove_path(temp)
        raise
    if temp.is_dir():
        retired = temp_sibling(path)
        if path.exists():
            path.rename(retired)
        temp.rename(path)
        remove_path(retired)
    else:
        os.replace(temp, path)


def copy_atomically(source: Path, path: Path) -> None:
    with replaced_atomically(path) as temp:
        shutil.copyfile(source, temp)


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
