"""Read-side access to a traces root on any fsspec filesystem (a local folder, `s3://...`).

One recursive listing per run (ListObjectsV2 pages without a delimiter on S3, a directory
walk on a local disk), then concurrent GETs of exactly the keys asked for, in bounded batches.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import fsspec
from fsspec.asyn import AsyncFileSystem, sync
from fsspec.implementations.local import LocalFileSystem

from trace_assets.scope import TRACE_JOBS, RunScope
from trace_assets.store.local_walk import Columns, walk_folders
from trace_assets.store.objects import ObjectBatch
from trace_assets.store.process_pool import ordered_map


class FetchError(RuntimeError):
    """Needed objects could not be read, even after retries: nothing may be published from a partial read."""

    def __init__(self, failures: Mapping[str, BaseException]):
        self.failures = dict(failures)
        shown = ", ".join(sorted(self.failures)[:20])
        more = f" (and {len(self.failures) - 20} more)" if len(self.failures) > 20 else ""
        first = next(iter(self.failures.values()))
        super().__init__(
            f"{len(self.failures)} object(s) could not be read: {shown}{more}; first error: {type(first).__name__}: {first}"
        )


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)


def _modified_us(info: Mapping[str, Any]) -> int | None:
    """An object's modification time in microseconds since the epoch, exactly (no float rounding)."""
    value = info.get("LastModified") or info.get("mtime") or info.get("last_modified")
    if isinstance(value, datetime):
        return ((value if value.tzinfo else value.replace(tzinfo=UTC)) - EPOCH) // MICROSECOND
    if isinstance(value, (int, float)):
        return round(value * 1_000_000)
    return None


def _etag(info: Mapping[str, Any]) -> str | None:
    value = info.get("ETag") or info.get("etag")
    return str(value).strip('"') if value else None


def _available_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


PARALLEL_WALK_MIN_FOLDERS = 256  # below this, starting workers costs more than it saves
WALK_CHUNK_FOLDERS = 64  # top-level folders per request to a listing worker


def _walk_local(root: str, workers: int) -> Iterator[ObjectBatch]:
    """A local run a top-level folder at a time, in name order; files right under the root first."""
    with os.scandir(root) as scanned:
        entries = sorted(scanned, key=lambda entry: entry.name)
    top_files = ObjectBatch()
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False) and entry.is_file():
            stat = entry.stat()
            top_files.append(entry.name, stat.st_size, None, stat.st_mtime_ns // 1000)
    yield top_files
    names = [entry.name for entry in entries if entry.is_dir(follow_symlinks=False)]
    if workers < 2 or len(names) < PARALLEL_WALK_MIN_FOLDERS:
        answers: Iterator[list[Columns]] = (walk_folders(root, [name]) for name in names)
    else:
        chunks = ((None, (root, names[i : i + WALK_CHUNK_FOLDERS])) for i in range(0, len(names), WALK_CHUNK_FOLDERS))
        answers = (columns for _, columns in ordered_map(walk_folders, chunks, workers, ahead=4))
    for answer in answers:
        for keys, sizes, modified in answer:
            yield ObjectBatch(keys, sizes, [None] * len(keys), modified)


def _read_local(path: str) -> bytes | OSError:
    """A local file's bytes, without fsspec's per-call path handling (it costs more than the read)."""
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError as err:
        return err


class TraceStore:
    """A traces root: `<root>/<run_id>/trace_jobs/...`."""

    def __init__(
        self,
        root_url: str,
        storage_options: Mapping[str, Any] | None = None,
        max_concurrency: int = 64,
        walk_workers: int | None = None,
    ):
        """`max_concurrency`: object-store requests in flight; `walk_workers`: processes walking a
        local run (default: one per available core)."""
        self.root_url = root_url.rstrip("/")
        self.fs, self.root = fsspec.core.url_to_fs(self.root_url, **dict(storage_options or {}))
        self.root = self.root.rstrip("/")
        self.max_concurrency = max_concurrency
        self.walk_workers = walk_workers if walk_workers is not None else _available_cores()

    def scope_path(self, scope: RunScope) -> str:
        return f"{self.root}/{scope.source_prefix}"

    def run_ids(self) -> list[str]:
        """Run folders under the root that hold a `trace_jobs/` folder."""
        entries = self.fs.ls(self.root, detail=True)
        runs = []
        for entry in entries:
            if entry.get("type") != "directory":
                continue
            name = entry["name"].rstrip("/").rsplit("/", 1)[-1]
            if self.fs.isdir(f"{self.root}/{name}/{TRACE_JOBS}"):
                runs.append(name)
        return sorted(runs)

    def iter_run(self, scope: RunScope) -> Iterator[ObjectBatch]:
        """Every object under the run's trace_jobs/, keys relative to it, in pages as listed.

        One recursive listing, streamed: S3 pages of ListObjectsV2 without a delimiter, a
        depth-first walk on local disks, a top-level folder a page; the full listing is never
        held in memory. Either way the objects of one top-level folder come together.
        """
        base = self.scope_path(scope)
        if not self.fs.isdir(base):
            raise FileNotFoundError(f"no {TRACE_JOBS}/ folder for run {scope.key!r} under {self.root_url}")
        if isinstance(self.fs, LocalFileSystem):
            yield from _walk_local(base, self.walk_workers)
        elif hasattr(self.fs, "_call_s3"):
            yield from self._iter_s3(base)
        else:
            prefix = base + "/"
            page = ObjectBatch()
            for path, info in sorted(self.fs.find(base, detail=True, withdirs=False).items()):
                if path.startswith(prefix) and info.get("type", "file") != "directory":
                    page.append(path[len(prefix) :], int(info.get("size") or 0), _etag(info), _modified_us(info))
            yield page

    def _iter_s3(self, folder: str) -> Iterator[ObjectBatch]:
        bucket, key_prefix, _ = self.fs.split_path(folder)
        key_prefix = key_prefix.rstrip("/") + "/"
        token = None
        while True:
            response = sync(
                self.fs.loop,
                self.fs._call_s3,
                "list_objects_v2",
                Bucket=bucket,
                Prefix=key_prefix,
                **({"ContinuationToken": token} if token else {}),
            )
            page = ObjectBatch()
            for item in response.get("Contents", []):
                if not item["Key"].endswith("/"):
                    page.append(item["Key"][len(key_prefix) :], int(item["Size"]), _etag(item), _modified_us(item))
            yield page
            token = response.get("NextContinuationToken")
            if not response.get("IsTruncated") or not token:
                return

    def fetch(self, scope: RunScope, keys: list[str]) -> dict[str, bytes]:
        """Bytes of each key (relative to trace_jobs/), fetched concurrently; raises FetchError on any failure."""
        if not keys:
            return {}
        base = self.scope_path(scope) + "/"
        paths = [base + key for key in keys]
        if isinstance(self.fs, AsyncFileSystem):
            results = self.fs.cat(paths, on_error="return", batch_size=self.max_concurrency)
        elif isinstance(self.fs, LocalFileSystem):
            results = {path: _read_local(path) for path in paths}
        else:
            results = {}
            for path in paths:
                try:
                    results[path] = self.fs.cat_file(path)
                except OSError as err:
                    results[path] = err
        failures = {path: value for path, value in results.items() if isinstance(value, BaseException)}
        missing = set(paths) - set(results)
        failures.update({path: FileNotFoundError(path) for path in missing})
        if failures:
            raise FetchError(failures)
        return {path[len(base) :]: value for path, value in results.items()}
