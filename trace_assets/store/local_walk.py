"""Walk a local run's folders for their files' sizes and modification times.

A local listing is a `stat` per object: on a run of thousands of trial folders with dozens of
episode files each, most of the listing's time. Only the standard library here, so listing
workers (trace_assets.workers) that import this module start in milliseconds.
"""

from __future__ import annotations

import os

# keys (prefixed with the folder's relative path), sizes, modification times (µs since the epoch)
Columns = tuple[list[str], list[int], list[int | None]]


def walk_folder(folder: str, relative: str) -> Columns:
    """Every file under a folder, depth first; an explicit stack and plain lists, as they cost least."""
    keys: list[str] = []
    sizes: list[int] = []
    modified: list[int | None] = []
    stack = [(folder, relative)]
    while stack:
        folder, relative = stack.pop()
        with os.scandir(folder) as scanned:
            for entry in scanned:
                if entry.is_dir(follow_symlinks=False):
                    stack.append((entry.path, f"{relative}{entry.name}/"))
                elif entry.is_file():
                    stat = entry.stat()
                    keys.append(relative + entry.name)
                    sizes.append(stat.st_size)
                    modified.append(stat.st_mtime_ns // 1000)
    return keys, sizes, modified


def walk_folders(root: str, names: list[str]) -> list[Columns]:
    return [walk_folder(os.path.join(root, name), f"{name}/") for name in names]
