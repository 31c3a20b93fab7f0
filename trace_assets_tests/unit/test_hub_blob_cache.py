"""The Hub's blob cache keeps a file only under its own git blob id, and an id from a listing that
is no git id never names a path to read (a hostile `oid` such as `../../etc/passwd`)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from trace_assets.publishing.hub.reads import BlobCache, git_blob_id


def test_a_file_is_kept_under_its_blob_id_and_read_back(tmp_path: Path) -> None:
    cache = BlobCache(tmp_path / "cache")
    data = b'{"rows": 3}\n'
    cache.put(git_blob_id(data), data)
    assert cache.get(git_blob_id(data)) == data
    cache.put("0" * 40, data)  # not its id: not kept
    assert cache.get("0" * 40) is None


def test_an_id_that_is_no_git_id_opens_nothing_outside_the_cache(tmp_path: Path) -> None:
    """A FIFO outside the cache: opening it would block, so a read through a hostile id would hang."""
    fifo = tmp_path / "outside"
    os.mkfifo(fifo)
    cache = BlobCache(tmp_path / "cache")
    answers: list[bytes | None] = []
    hostile = [str(fifo), "../outside", "../../outside", "", "A" * 40]
    reader = threading.Thread(target=lambda: answers.extend(cache.get(blob_id) for blob_id in hostile), daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert answers == [None] * len(hostile)
    for blob_id in hostile:
        cache.put(blob_id, b"secret")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside"]
