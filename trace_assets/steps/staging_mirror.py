"""Staging on object storage: a scope's staged files mirrored to an fsspec URL (`s3://bucket/staging`)
at step boundaries, so each step can run in a different process or container with an empty disk.

Steps keep working on a local scratch folder (Parquet writers, renames and the flock need a real
filesystem). `RunStaging.locked` pulls the scope's files before a step and pushes them after it
succeeds. Remotely a scope is content-addressed blobs plus one manifest (`relative path -> sha256`):

    <url>/<scope>/.blobs/<sha256>       one per distinct file content
    <url>/<scope>/.manifest.json        written last, in one PUT: the commit point
    <url>/.locks/<scope>.lock           a lease naming its holder, renewed while held

So an interrupted push leaves the previous manifest intact (readers see the old files or the new
ones, never a mix), and unchanged files (a rerun's incremental cache) are neither uploaded nor
downloaded again. Hidden names (`.blobs`, `.manifest.json`, `.locks`) can never be a scope's
folder, since scope segments start with a letter or digit.

The lease is made with an exclusive create (S3's `If-None-Match: *`). Limit: a lease whose holder
died is taken over after `lease_seconds` by delete-then-create, which two waiters could race; the
instance's one-run-per-partition limit (deploy/dagster.yaml) is what serialises a scope's runs
across machines, the lease is the second line.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fsspec

from trace_assets.core.defaults import DEFAULT_LEASE_SECONDS
from trace_assets.runtime.atomic_files import remove_path, replaced_atomically

MANIFEST = ".manifest.json"
BLOBS = ".blobs"
LOCKS = ".locks"
LOCAL_RECORDS = ".mirror"  # under the local scratch root: what each scope's files were last synced as
_HASH_CHUNK = 1 << 20

Manifest = dict[str, str]  # relative posix path -> sha256 of the content


@dataclass
class StagingMirror:
    """The object-store copy of the staging root; `url` is any fsspec URL."""

    url: str
    storage_options: Mapping[str, Any] = field(default_factory=dict)
    lease_seconds: float = DEFAULT_LEASE_SECONDS
    _fs: Any = field(default=None, init=False, repr=False)
    _root: str = field(default="", init=False, repr=False)

    def __post_init__(self) -> None:
        self._fs, root = fsspec.core.url_to_fs(self.url, **dict(self.storage_options))
        self._root = root.rstrip("/")

    def _scope_path(self, key: str) -> str:
        return f"{self._root}/{key}"

    def remote_manifest(self, key: str) -> Manifest:
        try:
            return dict(json.loads(self._fs.cat_file(f"{self._scope_path(key)}/{MANIFEST}")))
        except FileNotFoundError:
            return {}

    def pull(self, key: str, folder: Path, records: Path) -> tuple[int, int]:
        """Make `folder` hold exactly the remote manifest's files; returns (downloaded, removed)."""
        remote = self.remote_manifest(key)
        local = local_manifest(folder, records)
        downloaded = removed = 0
        for relative, sha in remote.items():
            if local.get(relative) != sha:
                with replaced_atomically(folder / relative) as temp:
                    self._fs.get_file(f"{self._scope_path(key)}/{BLOBS}/{sha}", str(temp))
                downloaded += 1
        for relative in set(local) - set(remote):
            remove_path(folder / relative)
            removed += 1
        _prune_empty_folders(folder)
        _write_records(records, folder)
        return downloaded, removed

    def push(self, key: str, folder: Path, records: Path) -> int:
        """Upload what changed in `folder`, then the manifest, then drop unreferenced blobs; returns uploads."""
        remote = self.remote_manifest(key)
        local = local_manifest(folder, records)
        if local == remote:
            _write_records(records, folder)
            return 0
        blobs = f"{self._scope_path(key)}/{BLOBS}"
        have = set(remote.values())
        uploads = {sha: relative for relative, sha in local.items() if sha not in have}
        for sha, relative in uploads.items():
            self._fs.put_file(str(folder / relative), f"{blobs}/{sha}")
        self._fs.pipe_file(f"{self._scope_path(key)}/{MANIFEST}", json.dumps(local, sort_keys=True).encode())
        stale = [f"{blobs}/{sha}" for sha in have - set(local.values())]
        if stale:
            self._fs.rm(stale)
        _write_records(records, folder)
        return len(uploads)

    def remove(self, key: str) -> None:
        """The scope's remote files (the manifest first, so a half-removed scope reads as empty)."""
        path = self._scope_path(key)
        if self._fs.exists(f"{path}/{MANIFEST}"):
            self._fs.rm_file(f"{path}/{MANIFEST}")
        if self._fs.exists(path):
            self._fs.rm(path, recursive=True)

    @contextmanager
    def leased(self, key: str, holder: str, log: Callable[[str], None]) -> Iterator[None]:
        """Hold the scope's lease (waiting, with a log line a minute, while another holder's is live)."""
        lock = f"{self._root}/{LOCKS}/{key}.lock"
        logged_at = 0.0
        while not self._try_lease(lock, holder):
            if time.monotonic() - logged_at >= 60:
                log(f"waiting for staging lease {lock}: held by {self._holder(lock)}")
                logged_at = time.monotonic()
            time.sleep(0.5)
        stop = threading.Event()
        renewer = threading.Thread(target=self._renew, args=(lock, holder, stop), daemon=True)
        renewer.start()
        try:
            yield
        finally:
            stop.set()
            renewer.join()
            self._fs.rm_file(lock)

    def _try_lease(self, lock: str, holder: str) -> bool:
        try:
            self._fs.pipe_file(lock, self._lease(holder), mode="create")
            return True
        except FileExistsError:
            pass
        try:
            expires = float(json.loads(self._fs.cat_file(lock))["expires"])
        except FileNotFoundError:
            return False  # released meanwhile: try again
        except (ValueError, KeyError, TypeError):
            expires = 0.0  # unreadable lease: treat as expired
        if expires < time.time():
            self._fs.rm_file(lock)  # the holder died; see the module's note on this race
        return False

    def _holder(self, lock: str) -> str:
        try:
            return str(json.loads(self._fs.cat_file(lock)).get("holder", "?"))
        except (FileNotFoundError, ValueError):
            return "nobody now"

    def _renew(self, lock: str, holder: str, stop: threading.Event) -> None:
        while not stop.wait(self.lease_seconds / 4):
            self._fs.pipe_file(lock, self._lease(holder))

    def _lease(self, holder: str) -> bytes:
        return json.dumps({"holder": holder, "expires": time.time() + self.lease_seconds}).encode()


def staging_scratch(url: str) -> Path:
    """The local scratch folder mirroring `url`: under the temp dir (TMPDIR), one per staging URL."""
    return Path(tempfile.gettempdir()) / "trace_assets_staging" / hashlib.sha256(url.encode()).hexdigest()[:16]


def local_manifest(folder: Path, records: Path) -> Manifest:
    """sha256 of every staged file under `folder` (hidden names, the attempts' temps, excluded), reusing the
    last sync's hashes for files whose size and mtime are unchanged."""
    known = _read_records(records)
    manifest: Manifest = {}
    if not folder.is_dir():
        return manifest
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if not path.is_file() or any(part.startswith(".") for part in relative.parts):
            continue
        stat = path.stat()
        record = known.get(relative.as_posix())
        if record and record["size"] == stat.st_size and record["mtime_ns"] == stat.st_mtime_ns:
            manifest[relative.as_posix()] = record["sha"]
        else:
            manifest[relative.as_posix()] = _sha256(path)
    return manifest


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _read_records(records: Path) -> dict[str, dict[str, Any]]:
    try:
        return dict(json.loads(records.read_text()))
    except (OSError, ValueError):
        return {}


def _write_records(records: Path, folder: Path) -> None:
    """Remember each file's size, mtime and hash, so the next sync hashes only what changed."""
    manifest = local_manifest(folder, records)
    data = {}
    for relative, sha in manifest.items():
        stat = (folder / relative).stat()
        data[relative] = {"sha": sha, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    with replaced_atomically(records) as temp:
        temp.write_text(json.dumps(data))


def _prune_empty_folders(folder: Path) -> None:
    if folder.is_dir():
        for path in sorted(folder.rglob("*"), key=lambda p: -len(p.parts)):
            if path.is_dir() and not any(path.iterdir()):
                path.rmdir()
