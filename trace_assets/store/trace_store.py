"""Read-side access to a traces root on any fsspec filesystem (a local folder, `s3://...`) or a
Hub Storage Bucket (`hf://buckets/...`, see `hub_bucket`).

One recursive listing per run (ListObjectsV2 pages without a delimiter on S3, the tree API's
pages on a bucket, a directory walk on a local disk), then concurrent GETs of exactly the keys
asked for, in bounded batches.

Hostile input: trial folders are written by the policy under training, so on local roots
(and mounted buckets) nothing under a run's `trace_jobs/` is read through a symbolic link.
The walk never follows one (see `local_walk`), and reads open each path component relative
to the one before with `O_NOFOLLOW` (and `O_NONBLOCK`, and refuse what is not a regular
file), so a link swapped in after the listing cannot lead outside the root either. The
traces root and the run folders above `trace_jobs/` are the operator's, and are taken as
they are. A read that fails because of what one trial holds (a link, a FIFO, a file gone or
not readable) comes back as that key's `Exclusion`; only failures of the store itself (the
root or run folder cannot be read, the endpoint fails, an object keeps failing after
retries) raise, naming the run and the key. Keys are fetched exactly as listed: no call
that expands glob patterns (`[`, `*`, `?`, `{` are ordinary characters in trial names).
"""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import fsspec
from fsspec.asyn import AsyncFileSystem, sync
from fsspec.implementations.local import LocalFileSystem

from trace_assets.core.accounting import Exclusion, Reason
from trace_assets.core.defaults import DEFAULT_BATCH_BYTES, DEFAULT_FETCH_AHEAD
from trace_assets.core.scope import TRACE_JOBS, RunScope, ScopeUnit, run_scopes
from trace_assets.runtime.ahead import available_cores, produced_ahead
from trace_assets.runtime.process_pool import ordered_map
from trace_assets.store.bucket_url import BucketRoot, is_bucket_url
from trace_assets.store.confined import ConfinedReader, FolderReadError, read_files
from trace_assets.store.local_walk import Columns, walk_folder, walk_folders
from trace_assets.store.objects import ObjectBatch

if TYPE_CHECKING:
    from trace_assets.store.hub_bucket import BucketReader


class FetchError(RuntimeError):
    """Needed objects could not be read, even after retries: nothing may be published from a partial read."""

    def __init__(self, run: str, failures: Mapping[str, BaseException]):
        self.failures = dict(failures)
        shown = ", ".join(sorted(self.failures)[:20])
        more = f" (and {len(self.failures) - 20} more)" if len(self.failures) > 20 else ""
        first = next(iter(self.failures.values()))
        super().__init__(
            f"run {run!r}: {len(self.failures)} object(s) could not be read: {shown}{more}; "
            f"first error: {type(first).__name__}: {first}"
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


def _is_s3(fs: fsspec.AbstractFileSystem) -> bool:
    """s3fs, told by its protocol: importing s3fs to check would load botocore for local roots too."""
    protocols = fs.protocol if isinstance(fs.protocol, tuple | list) else (fs.protocol,)
    return "s3" in protocols


BUCKET_PAGE_OBJECTS = 1000  # a bucket listing's objects handed on at once, as an S3 page holds
BUCKET_PAGES_AHEAD = 2  # listed while the pages before are grouped: the tree API's pages come one by one
PARALLEL_WALK_MIN_FOLDERS = 256  # below this, starting workers costs more than it saves
WALK_CHUNK_FOLDERS = 64  # top-level folders per request to a listing worker


def _walk_local(root: str, workers: int) -> Iterator[ObjectBatch]:
    """A local run a top-level folder at a time, in name order; entries right under the root first."""
    names: list[str] = []
    keys, sizes, tokens, modified, skipped = walk_folder(root, "", subfolders=names)
    yield ObjectBatch(keys, sizes, tokens, modified, skipped)
    names.sort()
    if workers < 2 or len(names) < PARALLEL_WALK_MIN_FOLDERS:
        answers: Iterator[list[Columns]] = (walk_folders(root, [name]) for name in names)
    else:
        chunks = ((None, (root, names[i : i + WALK_CHUNK_FOLDERS])) for i in range(0, len(names), WALK_CHUNK_FOLDERS))
        answers = (columns for _, columns in ordered_map(walk_folders, chunks, workers, ahead=4))
    for answer in answers:
        for keys, sizes, tokens, modified, skipped in answer:
            yield ObjectBatch(keys, sizes, tokens, modified, skipped)


class TraceStore:
    """A traces root: `<root>/<run_id>/trace_jobs/...`."""

    def __init__(
        self,
        root_url: str,
        storage_options: Mapping[str, Any] | None = None,
        max_concurrency: int = 64,
        walk_workers: int | None = None,
        batch_bytes: int = DEFAULT_BATCH_BYTES,
        fetch_ahead: int = DEFAULT_FETCH_AHEAD,
    ):
        """`max_concurrency`: object-store requests in flight; `walk_workers`: processes walking a
        local run (default: one per available core); `batch_bytes`: listed bytes of the trials'
        files the steps hold fetched at once (a trial larger than that is a batch of its own);
        `fetch_ahead`: batches fetched while one is parsed (see `trace_assets/runtime/ahead.py`)."""
        self.root_url = root_url.rstrip("/")
        options = dict(storage_options or {})
        if self.root_url.startswith(("s3://", "s3a://")):
            # botocore keeps 10 connections by default, which would cap the GETs in flight at 10
            config = dict(options.get("config_kwargs") or {})
            config["max_pool_connections"] = max(config.get("max_pool_connections", 0), max_concurrency)
            options["config_kwargs"] = config
        # On a bucket the steps' listings and reads go through `bucket`; `fs` (HfFileSystem) answers
        # only the checks made when a scope is missing, from a listings cache this store alone holds.
        self.bucket: BucketReader | None = None
        if is_bucket_url(self.root_url):
            # here, not at the top: huggingface_hub's HfApi takes 0.25 s to import, paid by bucket roots only
            from trace_assets.store.hub_bucket import BucketReader

            self.bucket = BucketReader(BucketRoot.parse(self.root_url).bucket_id)
            options["skip_instance_cache"] = True
        self.fs, self.root = fsspec.core.url_to_fs(self.root_url, **options)
        self.root = self.root.rstrip("/")
        self.max_concurrency = max_concurrency
        self.fetch_ahead = fetch_ahead
        self.walk_workers = walk_workers if walk_workers is not None else available_cores()
        self.batch_bytes = batch_bytes

    @property
    def fetch_batch_bytes(self) -> int:
        """One batch's share of `batch_bytes`: with fetching ahead, that many + 1 batches are held."""
        return max(1, self.batch_bytes // (self.fetch_ahead + 1))

    def scope_path(self, scope: RunScope) -> str:
        return f"{self.root}/{scope.source_prefix}"

    def _in_bucket(self, path: str) -> str:
        """A path of `fs` (`buckets/<namespace>/<bucket>/...`) as the bucket names it."""
        assert self.bucket is not None
        return path.removeprefix(f"buckets/{self.bucket.bucket_id}").strip("/")

    def run_ids(self) -> list[str]:
        """Run folders under the root that hold a `trace_jobs/` folder."""
        if self.bucket is not None:
            root = self._in_bucket(self.root)
            inside = f"{root}/" if root else ""
            return [name for name in self.run_folders() if TRACE_JOBS in self.bucket.folders(inside + name)]
        entries = self.fs.ls(self.root, detail=True)
        runs = []
        for entry in entries:
            if entry.get("type") != "directory":
                continue
            name = entry["name"].rstrip("/").rsplit("/", 1)[-1]
            if self.fs.isdir(f"{self.root}/{name}/{TRACE_JOBS}"):
                runs.append(name)
        return sorted(runs)

    def run_folders(self) -> list[str]:
        """Every folder right under the root, from one delimiter listing (a request per 1,000 on S3);
        unlike `run_ids`, no folder is checked for a trace_jobs/ folder."""
        if isinstance(self.fs, LocalFileSystem):
            with os.scandir(self.root) as entries:
                return sorted(entry.name for entry in entries if entry.is_dir())
        if self.bucket is not None:  # one listing of the root's level (a request per page)
            return self.bucket.folders(self._in_bucket(self.root))
        entries = self.fs.ls(self.root, detail=True, refresh=True)
        return sorted(e["name"].rstrip("/").rsplit("/", 1)[-1] for e in entries if e.get("type") == "directory")

    def scopes(self, run_id: str, unit: ScopeUnit = ScopeUnit.STEP) -> list[RunScope]:
        """The run's scopes (see `scope.run_scopes`), from one delimiter listing of its trace_jobs/."""
        base = f"{self.root}/{run_id}/{TRACE_JOBS}"
        if isinstance(self.fs, LocalFileSystem):
            with os.scandir(base) as entries:
                found = [(e.name, e.is_dir(follow_symlinks=False), e.is_symlink()) for e in entries]
            folders = [name for name, is_dir, _ in found if is_dir]
            return run_scopes(run_id, folders, unit, keep_whole=any(link for _, _, link in found))
        if self.bucket is not None:
            level = list(self.bucket.listing(self._in_bucket(base), recursive=False))
            if not level:  # a folder of an object store is there only while it holds objects
                raise FileNotFoundError(f"no {TRACE_JOBS}/ folder for run {run_id!r} under {self.root_url}")
            steps = sorted(entry.path.rsplit("/", 1)[-1] for entry in level if entry.type == "directory")
            return run_scopes(run_id, steps, unit)
        entries = self.fs.ls(base, detail=True, refresh=True)
        folders = [e["name"].rstrip("/").rsplit("/", 1)[-1] for e in entries if e.get("type") == "directory"]
        return run_scopes(run_id, folders, unit)

    def present(self, keys: Iterable[str]) -> set[str]:
        """The scope keys among `keys` whose traces are under the root now: a delimiter listing of
        the root and one of each named run's trace_jobs/ (the sensor's run listing), whatever the
        sweep's size in scopes. A whole-run key is there while its run's trace_jobs/ is."""
        runs = set(self.run_folders())
        by_run: dict[str, list[str]] = {}
        for key in keys:
            by_run.setdefault(RunScope.from_key(key).run_id, []).append(key)
        found: set[str] = set()
        for run_id, ours in by_run.items():
            if run_id not in runs:
                continue
            try:
                steps = {scope.key for scope in self.scopes(run_id, ScopeUnit.STEP)}
            except FileNotFoundError:  # no trace_jobs/ (any more)
                continue
            found |= {key for key in ours if RunScope.from_key(key).step is None or key in steps}
        return found

    def iter_run(self, scope: RunScope) -> Iterator[ObjectBatch]:
        """Every object under the run's trace_jobs/, keys relative to it, in pages as listed.

        One recursive listing, streamed: S3 pages of ListObjectsV2 without a delimiter, a
        depth-first walk on local disks, a top-level folder a page; the full listing is never
        held in memory. Either way the objects of one top-level folder come together.
        """
        base = self.scope_path(scope)
        if self.bucket is not None:  # an empty listing is the missing folder: no request to check first
            yield from produced_ahead(self._iter_bucket(scope, base), BUCKET_PAGES_AHEAD)
            return
        if not self.fs.isdir(base):
            raise FileNotFoundError(f"no {TRACE_JOBS}/ folder for run {scope.key!r} under {self.root_url}")
        if isinstance(self.fs, LocalFileSystem):
            yield from _walk_local(base, self.walk_workers)
        elif _is_s3(self.fs):
            yield from self._iter_s3(base)
        else:
            prefix = base + "/"
            page = ObjectBatch()
            for path, info in sorted(self.fs.find(base, detail=True, withdirs=False).items()):
                if path.startswith(prefix) and info.get("type", "file") != "directory":
                    page.append(path[len(prefix) :], int(info.get("size") or 0), _etag(info), _modified_us(info))
            yield page

    def _iter_s3(self, folder: str) -> Iterator[ObjectBatch]:
        """ListObjectsV2 pages in order; each page's successor is requested as soon as its
        continuation token is known, so it is in flight while the page is grouped and written.
        Through s3fs's own aiobotocore client (`set_session`), so its credentials, endpoint and
        retry settings apply; botocore retries throttling and dropped connections."""
        from botocore.exceptions import ClientError
        from s3fs.errors import translate_boto_error

        bucket, key_prefix, _ = self.fs.split_path(folder)
        key_prefix = key_prefix.rstrip("/") + "/"
        client = sync(self.fs.loop, self.fs.set_session)

        async def list_page(token: str | None) -> dict[str, Any]:
            try:
                return await client.list_objects_v2(
                    Bucket=bucket, Prefix=key_prefix, **({"ContinuationToken": token} if token else {})
                )
            except ClientError as error:  # as s3fs raises it: FileNotFoundError, PermissionError, OSError
                raise translate_boto_error(error) from error

        def request(token: str | None) -> Future[dict[str, Any]]:
            return asyncio.run_coroutine_threadsafe(list_page(token), self.fs.loop)

        pending = request(None)
        while True:
            response = pending.result()
            token = response.get("NextContinuationToken")
            more = bool(response.get("IsTruncated") and token)
            if more:
                pending = request(token)
            page = ObjectBatch()
            for item in response.get("Contents", []):
                if not item["Key"].endswith("/"):
                    page.append(item["Key"][len(key_prefix) :], int(item["Size"]), _etag(item), _modified_us(item))
            yield page
            if not more:
                return

    def _iter_bucket(self, scope: RunScope, folder: str) -> Iterator[ObjectBatch]:
        """The tree API's pages in order, re-cut at BUCKET_PAGE_OBJECTS objects (listed in a worker
        thread, BUCKET_PAGES_AHEAD pages ahead of their use: see `iter_run`). Later steps need the
        objects of a top-level folder together, as S3's key order gives them: a listing that does
        not is refused rather than split a trial."""
        assert self.bucket is not None
        page = ObjectBatch()
        seen = 0
        done: set[str] = set()
        current = ""
        for listed in self.bucket.files(self._in_bucket(folder)):
            top = listed.key.partition("/")[0]
            if top != current:
                if top in done:
                    raise RuntimeError(
                        f"run {scope.key!r}: the bucket's listing of {self.root_url} came out of path order "
                        f"({top!r} again after {current!r}); nothing was read"
                    )
                done.add(current)
                current = top
            modified = None if listed.modified is None else (listed.modified - EPOCH) // MICROSECOND
            page.append(listed.key, listed.size, listed.xet_hash or None, modified)
            seen += 1
            if len(page) >= BUCKET_PAGE_OBJECTS:
                yield page
                page = ObjectBatch()
        if not seen:
            raise FileNotFoundError(f"no {TRACE_JOBS}/ folder for run {scope.key!r} under {self.root_url}")
        yield page

    def _read_bucket(self, path: str, start: int, end: int | None) -> bytes:
        assert self.bucket is not None
        return self.bucket.read(self._in_bucket(path), start, end)

    def local_folder(self, scope: RunScope) -> str | None:
        """The scope's folder on a local root (keys are relative to it), which `read_files` reads
        as `fetch` does; None on an object store."""
        return self.scope_path(scope) + "/" if isinstance(self.fs, LocalFileSystem) else None

    def fetch(self, scope: RunScope, keys: list[str]) -> dict[str, bytes | Exclusion]:
        """Bytes of each key (relative to trace_jobs/), fetched concurrently, or the trial-level
        reason it cannot be read; raises FetchError when the store fails."""
        if not keys:
            return {}
        base = self.scope_path(scope) + "/"
        if isinstance(self.fs, LocalFileSystem):
            return self._read_local(scope, base, keys)
        paths = [base + key for key in keys]
        if self.bucket is not None:
            return self._fetch_bucket(scope, keys, paths)
        # `cat_ranges` reads each path as given (`cat` would expand glob patterns), on an async store
        # `batch_size` at a time, and returns each path's error in its place.
        bounded = {"batch_size": self.max_concurrency} if isinstance(self.fs, AsyncFileSystem) else {}
        results: list[Any] = self.fs.cat_ranges(paths, None, None, on_error="return", **bounded)
        failures = {path: value for path, value in zip(paths, results) if isinstance(value, BaseException)}
        if failures:
            raise FetchError(scope.key, failures)
        return dict(zip(keys, results))

    def _fetch_bucket(self, scope: RunScope, keys: list[str], paths: list[str]) -> dict[str, bytes | Exclusion]:
        """GETs of whole files, `max_concurrency` in flight; any that fails after the client's retries
        fails the scope, as on S3."""

        def read(path: str) -> bytes | BaseException:
            try:
                return self._read_bucket(path, 0, None)
            except Exception as error:  # every failure is named in the FetchError below
                return error

        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(paths))) as pool:
            results = list(pool.map(read, paths))
        failures = {path: value for path, value in zip(paths, results) if isinstance(value, BaseException)}
        if failures:
            raise FetchError(scope.key, failures)
        return {key: value for key, value in zip(keys, results) if isinstance(value, bytes)}

    def fetch_range(self, scope: RunScope, key: str, start: int, length: int) -> bytes | Exclusion:
        """`length` bytes of one object from `start` (fewer at its end, none past it), with `fetch`'s
        confinement: a large object read in chunks, never whole. An object gone or not readable at
        read time is its `Exclusion` on every store, as a local root's reader makes it."""
        base = self.scope_path(scope) + "/"
        if isinstance(self.fs, LocalFileSystem):
            try:
                reader = ConfinedReader(base)
                try:
                    return reader.read(key, start, length)
                finally:
                    reader.close()
            except OSError as err:
                raise FetchError(scope.key, {base + key: err}) from err
        if self.bucket is not None:
            return self._bucket_range(scope, base + key, key, start, length)
        try:
            data = self.fs.cat_file(base + key, start=start, end=start + length)
        except (FileNotFoundError, PermissionError) as err:  # deleted, or its access revoked, since the listing
            return Exclusion(Reason.UNREADABLE, f"{key}: {err}")
        except OSError as err:
            # s3fs maps S3's 416 (the object shrank below `start`, or was emptied) to EINVAL, and
            # also this object's other refusals (stored with SSE-C, an invalid request): only an
            # object now that short is read as empty; the others are refused, named so.
            if err.errno != errno.EINVAL:
                raise FetchError(scope.key, {base + key: err}) from err
            self.fs.invalidate_cache(base + key)
            try:
                size = self.fs.info(base + key)["size"]
            except OSError as refused:  # gone, or its HEAD refused too (an SSE-C object without its key)
                return Exclusion(Reason.UNREADABLE, f"{key}: {refused}")
            return b"" if isinstance(size, int) and size <= start else Exclusion(Reason.UNREADABLE, f"{key}: {err}")
        return bytes(data)

    def _bucket_range(self, scope: RunScope, path: str, key: str, start: int, length: int) -> bytes | Exclusion:
        """A range of a bucket's file, refused as on S3: gone or refused since the listing is its
        `Exclusion`; a failure that outlasts the client's retries fails the scope."""
        if length <= 0:
            return b""
        try:
            return self._read_bucket(path, start, start + length)
        except (FileNotFoundError, PermissionError) as err:
            return Exclusion(Reason.UNREADABLE, f"{key}: {err}")
        except Exception as err:
            raise FetchError(scope.key, {path: err}) from err

    def read_run_file(self, scope: RunScope, key: str, limit: int) -> bytes | Exclusion | None:
        """One file of the scope's run folder above its trial folders (`result.json`,
        `trace_jobs/result.json`), key relative to `<root>/<run_id>/`: None when there is none, at most
        `limit` + 1 bytes of it (so a larger one is seen to be larger, never read whole), or why it
        cannot be read. Locally read as `fetch` reads, through no link below the run's folder."""
        base = f"{self.root}/{scope.run_id}"
        if isinstance(self.fs, LocalFileSystem):
            try:
                reader = ConfinedReader(base)
                try:
                    data = reader.read(key, 0, limit + 1)
                finally:
                    reader.close()
            except OSError as err:
                raise FetchError(scope.key, {f"{base}/{key}": err}) from err
            if isinstance(data, Exclusion) and not os.path.lexists(f"{base}/{key}"):
                return None
            return data
        path = f"{base}/{key}"
        if self.bucket is not None:  # one ranged GET, as on S3
            try:
                return self._read_bucket(path, 0, limit + 1)
            except FileNotFoundError:
                return None
            except PermissionError as err:
                return Exclusion(Reason.UNREADABLE, f"{key}: {err}")
            except Exception as err:
                raise FetchError(scope.key, {path: err}) from err
        try:  # one ranged GET: a missing key is its 404, never a HEAD or a listing
            return bytes(self.fs.cat_file(path, start=0, end=limit + 1))
        except FileNotFoundError:
            return None
        except OSError as err:
            # S3's 416 for an empty object, or a refusal of this object alone (EINVAL, see fetch_range)
            if isinstance(err, PermissionError) or err.errno == errno.EINVAL:
                return Exclusion(Reason.UNREADABLE, f"{key}: {err}")
            raise FetchError(scope.key, {path: err}) from err

    def _read_local(self, scope: RunScope, base: str, keys: list[str]) -> dict[str, bytes | Exclusion]:
        """Confined reads (see the module's docstring); an error that is not one trial's fails the run."""
        try:
            return read_files(base, keys)
        except FolderReadError as err:
            raise FetchError(scope.key, {err.path: err.error}) from err.error
