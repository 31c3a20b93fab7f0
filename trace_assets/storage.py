"""Read-side access to a traces root on any fsspec filesystem (a local folder, `s3://...`).

One recursive listing per run (s3fs turns `find` into paged ListObjectsV2 calls without a
delimiter), then concurrent GETs of exactly the keys asked for, in bounded batches.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from typing import Any

import fsspec
from fsspec.asyn import AsyncFileSystem, sync
from fsspec.implementations.local import LocalFileSystem

from trace_assets.listing import StoredObject

TRACE_JOBS = "trace_jobs"


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


def _modified(info: Mapping[str, Any]) -> datetime | None:
    value = info.get("LastModified") or info.get("mtime") or info.get("last_modified")
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(value, tz=timezone.utc)
    return None


def _etag(info: Mapping[str, Any]) -> str | None:
    value = info.get("ETag") or info.get("etag")
    return str(value).strip('"') if value else None


SORTED_WALK_DEPTH = 2  # trace_jobs/<trial>/ and trace_jobs/<step>/<trial>/: enough for publishing order


def _walk_local(root: str) -> Iterator[StoredObject]:
    """Files under a local folder, depth first, so each folder's files come together.

    The top levels are walked in name order, so trials usually arrive in publishing order;
    inside a trial the order does not matter and sorting would only cost time. An explicit
    stack rather than recursion: a chain of nested generators costs more than the stat calls.
    """
    stack = [(root, "", 0)]
    while stack:
        folder, relative, depth = stack.pop()
        with os.scandir(folder) as scanned:
            entries = sorted(scanned, key=lambda entry: entry.name) if depth < SORTED_WALK_DEPTH else list(scanned)
        subfolders = []
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                subfolders.append((entry.path, f"{relative}{entry.name}/", depth + 1))
            elif entry.is_file():
                stat = entry.stat()
                modified = datetime.fromtimestamp(stat.st_mtime, tz=timezone.utc)
                yield StoredObject(f"{relative}{entry.name}", stat.st_size, None, modified)
        stack.extend(reversed(subfolders))


class TraceStore:
    """A traces root: `<root>/<run_id>/trace_jobs/...`."""

    def __init__(self, root_url: str, storage_options: Mapping[str, Any] | None = None, max_concurrency: int = 64):
        self.root_url = root_url.rstrip("/")
        self.fs, self.root = fsspec.core.url_to_fs(self.root_url, **dict(storage_options or {}))
        self.root = self.root.rstrip("/")
        self.max_concurrency = max_concurrency

    def trace_jobs_path(self, run_id: str) -> str:
        return f"{self.root}/{run_id}/{TRACE_JOBS}"

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

    def iter_run(self, run_id: str) -> Iterator[StoredObject]:
        """Every object under the run's trace_jobs/, keys relative to it, as listed.

        One recursive listing, streamed: S3 pages of ListObjectsV2 without a delimiter, a
        depth-first walk on local disks; the full listing is never held in memory. Either way
        the objects of one top-level folder come together.
        """
        base = self.trace_jobs_path(run_id)
        if not self.fs.isdir(base):
            raise FileNotFoundError(f"no {TRACE_JOBS}/ folder for run {run_id!r} under {self.root_url}")
        if isinstance(self.fs, LocalFileSystem):
            yield from _walk_local(base)
        elif hasattr(self.fs, "_call_s3"):
            yield from self._iter_s3(base)
        else:
            prefix = base + "/"
            for path, info in sorted(self.fs.find(base, detail=True, withdirs=False).items()):
                if path.startswith(prefix) and info.get("type", "file") != "directory":
                    yield StoredObject(path[len(prefix) :], int(info.get("size") or 0), _etag(info), _modified(info))

    def _iter_s3(self, folder: str) -> Iterator[StoredObject]:
        bucket, key_prefix, _ = self.fs.split_path(folder)
        key_prefix = key_prefix.rstrip("/") + "/"
        token = None
        while True:
            page = sync(
                self.fs.loop,
                self.fs._call_s3,
                "list_objects_v2",
                Bucket=bucket,
                Prefix=key_prefix,
                **({"ContinuationToken": token} if token else {}),
            )
            for item in page.get("Contents", []):
                if not item["Key"].endswith("/"):
                    yield StoredObject(item["Key"][len(key_prefix) :], int(item["Size"]), _etag(item), _modified(item))
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return

    def fetch(self, run_id: str, keys: list[str]) -> dict[str, bytes]:
        """Bytes of each key (relative to trace_jobs/), fetched concurrently; raises FetchError on any failure."""
        if not keys:
            return {}
        base = self.trace_jobs_path(run_id) + "/"
        paths = [base + key for key in keys]
        if isinstance(self.fs, AsyncFileSystem):
            results = self.fs.cat(paths, on_error="return", batch_size=self.max_concurrency)
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
