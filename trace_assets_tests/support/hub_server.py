"""An in-memory stand-in for the part of the Hugging Face Hub HTTP API that publishing uses.

Tests drive the real `huggingface_hub` client against it, so the request and response shapes
follow that client's source (hf_api.py, _commit_api.py, lfs.py, file_download.py of
huggingface_hub 2.4.0) rather than the docs. Supported: repo creation and info, branches and refs,
tree listing, a revision's commit history (newest first, 50 a page behind a `Link` header, as the
Hub pages it), README metadata validation (`DatasetCard.validate`: the YAML, and for a dataset the
schema's rules for the keys this project writes, see `dataset_metadata_errors`), preupload, the Git LFS batch API with single-part
"basic" uploads, NDJSON commits, `/resolve` downloads, and pull requests (create, list, details,
publish a draft, close, merge; commits to `refs/pr/N`). A pull request's ref starts at `main`'s
head when it is created, so its history holds its base, as on the Hub.

Storage Buckets, read side, as huggingface_hub 2.4 reads one with `HF_HUB_DISABLE_XET=1` (hf_api.py's
`bucket_info`, `list_bucket_tree`, `get_bucket_paths_info`; hf_file_system.py's ranged resolve GETs):
bucket info, the tree API (recursive: every file whose path starts with the prefix, as a string;
otherwise a folder's files and sub-folders; `tree_page_size` entries a page, the next page's URL in
`Link`), paths-info, and resolve with `Range` (206, or 416 past the end). Uploads go through Xet,
which the stand-in does not speak: tests place files with `create_bucket` and `put_bucket_files`.
Bucket faults, off by default, drawn per bucket request from `bucket_faults` (seeded): a 429 with
`Retry-After`, a 503, or a connection dropped half-way through the body; `bucket_latency` seconds
are added before every bucket answer; a path in `unreadable_bucket_paths` always gets a 500.

Off by default, for publishing at real sizes: a per-commit file limit (`max_files_per_commit`)
and random failures (`failure_rate`, seeded) of preuploads and commits, half of the commit
failures after the commit was applied, as a Hub commit can time out while completing.

Xet is out of scope. The client uploads through Xet whenever `hf_xet` is importable and
`HF_HUB_DISABLE_XET` was off at import time (`huggingface_hub.utils._runtime.is_xet_available`),
without asking the server, so the `hub_server` fixture switches that constant off. Downloads only
go through Xet when a response carries `X-Xet-Hash`, which this server never sends.

Register the fixture with `pytest_plugins = ["trace_assets_tests.support.hub_server"]`.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import hmac
import json
import random
import re
import secrets
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from posixpath import dirname
from types import MappingProxyType
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

import pytest
import yaml
from huggingface_hub import constants as hf_constants

STAND_IN_TOKEN = "hf_standin_write_token_0123456789"

# What a new dataset repo's .gitattributes marks as LFS on the real Hub (a representative subset).
LFS_PATTERNS = ("*.parquet", "*.arrow", "*.bin", "*.gz", "*.zip", "*.zst", "*.tar", "*.npy", "*.safetensors")
# The Hub refuses regular (non-LFS) files above 10 MB.
# Commits per page of the Hub's commit history (its `Link: <...?p=1&limit=50>; rel="next"`).
COMMITS_PER_PAGE = 50
MAX_REGULAR_FILE_SIZE = 10 * 1024 * 1024
INVALID_CREDENTIALS = "Invalid credentials in Authorization header"

_REPO = r"(?P<repo_id>[^/]+/[^/]+)"
_BUCKET = r"(?P<bucket_id>[^/]+/[^/]+)"
# The Hub's `size_categories` values (its dataset metadata schema).
SIZE_CATEGORIES = (
    "n<1K", "1K<n<10K", "10K<n<100K", "100K<n<1M", "1M<n<10M", "10M<n<100M", "100M<n<1B",
    "1B<n<10B", "10B<n<100B", "100B<n<1T", "n>1T",
)  # fmt: skip


def dataset_metadata_errors(metadata: dict[str, Any]) -> list[str]:
    """What the Hub's dataset card schema refuses, for the keys this project writes: strings and
    lists of strings where it wants them, a known size category, and configs each with a unique
    name (no '/') and data files as a path, a list of paths, or a list of {split, path}."""

    def strings(value: Any) -> bool:
        return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))

    errors = []
    for key in ("license", "language", "task_categories", "tags", "pretty_name"):
        if key in metadata and not strings(metadata[key]):
            errors.append(f'"{key}" must be a string or a list of strings')
    if isinstance(metadata.get("pretty_name"), list):
        errors.append('"pretty_name" must be a string')
    for category in metadata.get("size_categories") or []:
        if category not in SIZE_CATEGORIES:
            errors.append(f'"size_categories" has an unknown value {category!r}')
    names = []
    for config in metadata.get("configs") or []:
        name = config.get("config_name") if isinstance(config, dict) else None
        if not isinstance(name, str) or not name or "/" in name:
            errors.append(f'"configs": config_name {name!r} must be a non-empty string without "/"')
        names.append(name)
        files = config.get("data_files") if isinstance(config, dict) else None
        entries = files if isinstance(files, list) else [files]
        for entry in entries:
            path = entry.get("path") if isinstance(entry, dict) else entry
            if not strings(path) or (isinstance(entry, dict) and not isinstance(entry.get("split"), str)):
                errors.append(f'"configs": {name!r} data_files must be paths, or splits with paths')
    if len(names) != len(set(names)):
        errors.append('"configs": config names must be unique')
    return errors


@dataclass(frozen=True)
class Blob:
    """A file's content and how the repo stores it."""

    content: bytes = field(repr=False)
    is_lfs: bool

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.content).hexdigest()

    @property
    def lfs_pointer(self) -> bytes:
        return (
            f"version https://git-lfs.github.com/spec/v1\noid sha256:{self.sha256}\nsize {len(self.content)}\n"
        ).encode()

    @property
    def git_oid(self) -> str:
        """Git blob id: of the pointer file for LFS files, as git stores it."""
        stored = self.lfs_pointer if self.is_lfs else self.content
        return hashlib.sha1(b"blob %d\0" % len(stored) + stored).hexdigest()

    @property
    def upload_oid(self) -> str:
        """The id the client compares against to skip unchanged files: sha256 for LFS, git id otherwise."""
        return self.sha256 if self.is_lfs else self.git_oid


@dataclass(frozen=True)
class CommitRecord:
    oid: str
    parent_oid: str | None
    title: str
    description: str
    added: tuple[str, ...]
    deleted: tuple[str, ...]
    files: Mapping[str, Blob] = field(repr=False)
    created_at: datetime


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: str
    status: int
    body_bytes: int = 0  # of the response body sent (all of it, or a dropped connection's part)


class BucketFault(StrEnum):
    """A bucket request's injected failure (see `HubStandIn.bucket_faults`)."""

    RATE_LIMITED = "rate_limited"  # 429 with `Retry-After: 0`
    UNAVAILABLE = "unavailable"  # 503
    RESET = "reset"  # the connection closed half-way through the response body


@dataclass(frozen=True)
class BucketObject:
    content: bytes = field(repr=False)
    uploaded_at: datetime
    # Stands in for the Xet hash: a content hash the stand-in makes up (the client only compares it).
    xet_hash: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "xet_hash", hashlib.sha256(b"xet\0" + self.content).hexdigest())


@dataclass
class _Bucket:
    private: bool
    created_at: datetime
    files: dict[str, BucketObject] = field(default_factory=dict)


@dataclass
class _Repo:
    private: bool
    created_at: datetime
    branches: dict[str, str] = field(default_factory=dict)
    commits: dict[str, CommitRecord] = field(default_factory=dict)
    lfs_objects: dict[str, bytes] = field(default_factory=dict)
    pull_requests: dict[int, _PullRequest] = field(default_factory=dict)

    def add_commit(
        self,
        parent_oid: str | None,
        title: str,
        description: str,
        files: dict[str, Blob],
        added: list[str],
        deleted: list[str],
    ) -> CommitRecord:
        tree = ",".join(f"{path}:{blob.git_oid}" for path, blob in sorted(files.items()))
        oid = hashlib.sha1(f"{len(self.commits)}\n{parent_oid}\n{title}\n{tree}".encode()).hexdigest()
        commit = CommitRecord(
            oid=oid,
            parent_oid=parent_oid,
            title=title,
            description=description,
            added=tuple(added),
            deleted=tuple(deleted),
            files=MappingProxyType(dict(files)),
            created_at=datetime.now(UTC),
        )
        self.commits[oid] = commit
        return commit

    def resolve(self, revision: str) -> CommitRecord:
        oid = self.branches.get(revision, revision)
        if oid not in self.commits:
            raise _HubError(404, f"Invalid rev id: {revision}", error_code="RevisionNotFound")
        return self.commits[oid]

    def history(self, revision: str) -> list[CommitRecord]:
        """The revision's head and its ancestors, newest first."""
        history = []
        commit: CommitRecord | None = self.resolve(revision)
        while commit is not None:
            history.append(commit)
            commit = self.commits[commit.parent_oid] if commit.parent_oid else None
        return history


@dataclass
class _PullRequest:
    """A pull request's ref is `refs/pr/<num>` in the repo's branches; it targets `main`."""

    num: int
    title: str
    description: str
    base_oid: str
    created_at: datetime
    status: str = "draft"  # draft -> open -> merged, or closed
    merge_oid: str | None = None

    @property
    def ref(self) -> str:
        return f"refs/pr/{self.num}"


class _HubError(Exception):
    """An error response, shaped like the Hub's so `hf_raise_for_status` maps it to the right exception."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        error_code: str | None = None,
        headers: Mapping[str, str] | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_code = error_code
        self.headers = dict(headers or {})
        self.details = dict(details or {})


class HubStandIn:
    """A threaded HTTP server on 127.0.0.1 holding repos -> branches -> commits -> files in memory.

    Writes need `Authorization: Bearer <token>`; reads of public repos also work anonymously, like
    on the Hub. A wrong token always gets a 401. Every request is recorded (without headers, so
    never the token) for tests to assert on.
    """

    def __init__(
        self,
        token: str = STAND_IN_TOKEN,
        *,
        max_files_per_commit: int | None = None,
        failure_rate: float = 0.0,
        seed: int = 0,
        tree_page_size: int = 1000,
    ) -> None:
        self._token = token
        self.tree_page_size = tree_page_size
        self.bucket_faults: dict[BucketFault, float] = {}
        self.bucket_latency = 0.0
        self.unreadable_bucket_paths: set[str] = set()
        self.bucket_faults_injected: dict[BucketFault, int] = dict.fromkeys(BucketFault, 0)
        self._buckets: dict[str, _Bucket] = {}
        self.max_files_per_commit = max_files_per_commit
        self.failure_rate = failure_rate
        self._random = random.Random(seed)
        self.failures_injected = 0
        self._signing_key = secrets.token_bytes(32)
        self._lock = threading.Lock()
        self._repos: dict[str, _Repo] = {}
        self._requests: list[RecordedRequest] = []
        self._server = _StandInHTTPServer(("127.0.0.1", 0), _HubRequestHandler, self)
        self._thread = threading.Thread(
            # A short poll interval keeps shutdown, and so every test's teardown, quick.
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="hub-stand-in",
            daemon=True,
        )

    def __enter__(self) -> HubStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def token(self) -> str:
        """The one token with write access."""
        return self._token

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def requests_to(self, method: str, path_pattern: str) -> list[RecordedRequest]:
        """Recorded requests with this method whose path matches the regex `path_pattern`."""
        return [r for r in self.requests if r.method == method and re.search(path_pattern, r.path)]

    def files(self, repo_id: str, revision: str = "main") -> dict[str, bytes]:
        with self._lock:
            return {path: blob.content for path, blob in self._repo(repo_id).resolve(revision).files.items()}

    def lfs_files(self, repo_id: str, revision: str = "main") -> set[str]:
        with self._lock:
            return {path for path, blob in self._repo(repo_id).resolve(revision).files.items() if blob.is_lfs}

    def commits(self, repo_id: str, revision: str = "main") -> list[CommitRecord]:
        """The history of `revision`, oldest first, starting with the repo's initial commit."""
        with self._lock:
            repo = self._repo(repo_id)
            history = []
            commit: CommitRecord | None = repo.resolve(revision)
            while commit is not None:
                history.append(commit)
                commit = repo.commits[commit.parent_oid] if commit.parent_oid else None
            return history[::-1]

    def branches(self, repo_id: str) -> dict[str, str]:
        with self._lock:
            return dict(self._repo(repo_id).branches)

    def is_private(self, repo_id: str) -> bool:
        with self._lock:
            return self._repo(repo_id).private

    def lfs_oids(self, repo_id: str) -> set[str]:
        """Every LFS object uploaded to the repo, committed or not."""
        with self._lock:
            return set(self._repo(repo_id).lfs_objects)

    def pull_request_status(self, repo_id: str, num: int) -> str:
        with self._lock:
            return self._repo(repo_id).pull_requests[num].status

    def create_bucket(self, bucket_id: str, *, private: bool = False) -> None:
        """A new, empty bucket `namespace/name` (as `HfApi.create_bucket` would make it)."""
        with self._lock:
            if bucket_id in self._buckets:
                raise ValueError(f"bucket {bucket_id!r} already exists")
            self._buckets[bucket_id] = _Bucket(private, datetime.now(UTC))

    def put_bucket_files(
        self, bucket_id: str, files: Mapping[str, bytes], *, uploaded_at: datetime | None = None
    ) -> None:
        """Place (or overwrite) files in a bucket, as an upload through Xet would (at `uploaded_at`,
        default now: a run synced long ago is one settled long ago)."""
        now = uploaded_at or datetime.now(UTC)
        with self._lock:
            bucket = self._buckets[bucket_id]
            for path, content in files.items():
                bucket.files[path] = BucketObject(bytes(content), now)

    def bucket_file(self, bucket_id: str, path: str) -> bytes:
        with self._lock:
            return self._buckets[bucket_id].files[path].content

    def bucket_requests(self) -> list[RecordedRequest]:
        """Recorded requests to bucket endpoints (`/api/buckets/...`, `/buckets/.../resolve/...`)."""
        return [r for r in self.requests if r.path.startswith(("/api/buckets/", "/buckets/"))]

    def _bucket_fault(self) -> BucketFault | None:
        """Draw one bucket fault from `bucket_faults`; callers hold no lock."""
        with self._lock:
            draw = self._random.random()
            for fault, rate in self.bucket_faults.items():
                if draw < rate:
                    self.bucket_faults_injected[fault] += 1
                    return fault
                draw -= rate
        return None

    def _bucket(self, bucket_id: str) -> _Bucket:
        if bucket_id not in self._buckets:
            raise _HubError(404, "Bucket not found", error_code="RepoNotFound")
        return self._buckets[bucket_id]

    def _should_fail(self) -> bool:
        """Draw one random failure; callers hold no lock."""
        with self._lock:
            fail = self.failure_rate > 0 and self._random.random() < self.failure_rate
            self.failures_injected += fail
            return fail

    def _repo(self, repo_id: str) -> _Repo:
        if repo_id not in self._repos:
            raise _HubError(404, "Repository not found", error_code="RepoNotFound")
        return self._repos[repo_id]

    def _upload_signature(self, repo_id: str, oid: str, size: int) -> str:
        return hmac.new(self._signing_key, f"{repo_id}\n{oid}\n{size}".encode(), hashlib.sha256).hexdigest()


class _StandInHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the client opens up to its concurrency's connections at once, as to the Hub

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], hub: HubStandIn) -> None:
        super().__init__(address, handler)
        self.hub = hub


# (method, raw path pattern, handler method of _HubRequestHandler); groups are URL-decoded before the call.
_ROUTES: list[tuple[str, re.Pattern[str], str]] = [
    ("GET", re.compile(r"/api/whoami-v2"), "_whoami"),
    ("POST", re.compile(r"/api/repos/create"), "_create_repo"),
    ("POST", re.compile(r"/api/validate-yaml"), "_validate_yaml"),
    ("GET", re.compile(rf"/api/datasets/{_REPO}"), "_dataset_info"),
    ("GET", re.compile(rf"/api/datasets/{_REPO}/revision/(?P<revision>[^/]+)"), "_dataset_info"),
    ("GET", re.compile(rf"/api/datasets/{_REPO}/refs"), "_list_refs"),
    ("GET", re.compile(rf"/api/datasets/{_REPO}/commits/(?P<revision>[^/]+)"), "_list_commits"),
    ("POST", re.compile(rf"/api/datasets/{_REPO}/branch/(?P<branch>[^/]+)"), "_create_branch"),
    ("GET", re.compile(rf"/api/datasets/{_REPO}/tree/(?P<revision>[^/]+)(?:/(?P<path>.+))?"), "_list_tree"),
    ("POST", re.compile(rf"/api/datasets/{_REPO}/preupload/(?P<revision>[^/]+)"), "_preupload"),
    ("POST", re.compile(rf"/api/datasets/{_REPO}/commit/(?P<revision>[^/]+)"), "_commit"),
    ("POST", re.compile(rf"/datasets/{_REPO}\.git/info/lfs/objects/batch"), "_lfs_batch"),
    ("POST", re.compile(rf"/datasets/{_REPO}\.git/info/lfs/objects/verify"), "_lfs_verify"),
    ("PUT", re.compile(rf"/lfs-storage/{_REPO}/(?P<oid>[0-9a-f]{{64}})"), "_lfs_store_object"),
    ("GET", re.compile(rf"/datasets/{_REPO}/resolve/(?P<revision>[^/]+)/(?P<path>.+)"), "_resolve"),
    ("GET", re.compile(rf"/api/datasets/{_REPO}/discussions"), "_list_discussions"),
    ("POST", re.compile(rf"/api/datasets/{_REPO}/discussions"), "_create_discussion"),
    ("GET", re.compile(rf"/api/datasets/{_REPO}/discussions/(?P<num>[0-9]+)"), "_discussion_details"),
    ("POST", re.compile(rf"/api/datasets/{_REPO}/discussions/(?P<num>[0-9]+)/status"), "_discussion_status"),
    ("POST", re.compile(rf"/api/datasets/{_REPO}/discussions/(?P<num>[0-9]+)/merge"), "_merge_pull_request"),
    ("HEAD", re.compile(rf"/datasets/{_REPO}/resolve/(?P<revision>[^/]+)/(?P<path>.+)"), "_resolve"),
    ("GET", re.compile(rf"/api/buckets/{_BUCKET}"), "_bucket_info"),
    ("GET", re.compile(rf"/api/buckets/{_BUCKET}/tree(?:/(?P<prefix>.+))?"), "_bucket_tree"),
    ("POST", re.compile(rf"/api/buckets/{_BUCKET}/paths-info"), "_bucket_paths_info"),
    ("GET", re.compile(rf"/buckets/{_BUCKET}/resolve/(?P<path>.+)"), "_bucket_resolve"),
    ("HEAD", re.compile(rf"/buckets/{_BUCKET}/resolve/(?P<path>.+)"), "_bucket_resolve"),
]


class _HubRequestHandler(BaseHTTPRequestHandler):
    """One request against the stand-in; see `_ROUTES` for which method serves which path."""

    protocol_version = "HTTP/1.1"  # keep-alive, as the client's connection pool expects
    server: _StandInHTTPServer

    def do_GET(self) -> None:
        self._dispatch()

    def do_HEAD(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def log_message(self, format: str, *args: Any) -> None:
        """Silenced: requests are recorded on the hub instead of printed."""

    @property
    def hub(self) -> HubStandIn:
        return self.server.hub

    def _dispatch(self) -> None:
        url = urlsplit(self.path)
        self._query = {key: values[-1] for key, values in parse_qs(url.query).items()}
        # Always drain the body first: with keep-alive, unread bytes would corrupt the next request.
        self._body = self._read_body()
        self._status = 500
        self._url = url
        self._recorded = False
        self._reset_after_headers = False
        try:
            if url.path.startswith(("/api/buckets/", "/buckets/")):
                self._bucket_weather(unquote(url.path))
            for method, pattern, handler_name in _ROUTES:
                match = pattern.fullmatch(url.path)
                if method == self.command and match:
                    arguments = {key: unquote(value) for key, value in match.groupdict().items() if value is not None}
                    getattr(self, handler_name)(**arguments)
                    break
            else:
                raise _HubError(404, f"The stand-in does not implement {self.command} {url.path}")
        except _HubError as error:
            self._send_error(error)
        except _DroppedConnection:
            self.close_connection = True
        except Exception as error:  # a stand-in bug: answer so the client fails with the cause instead of hanging
            self._send_error(_HubError(500, f"Hub stand-in failed: {error!r}"))
        finally:
            if not self._recorded:  # a failure before any answer was sent
                self._record(0)

    def _record(self, body_bytes: int) -> None:
        """Recorded before the answer goes out, so a client that has its answer finds it counted."""
        self._recorded = True
        recorded = RecordedRequest(self.command, unquote(self._url.path), self._url.query, self._status, body_bytes)
        with self.hub._lock:
            self.hub._requests.append(recorded)

    # --- endpoints -------------------------------------------------------------------------------

    def _create_repo(self) -> None:
        self._require_write_access()
        payload = self._json_body()
        if payload.get("type") != "dataset":
            raise _HubError(400, "The stand-in only hosts dataset repos")
        if not payload.get("organization"):
            raise _HubError(400, "The stand-in has no user namespace: pass repo ids as 'namespace/name'")
        repo_id = f"{payload['organization']}/{payload['name']}"
        url = f"{self.hub.url}/datasets/{repo_id}"
        with self.hub._lock:
            if repo_id in self.hub._repos:
                raise _HubError(409, "You already created this dataset repo", details={"url": url})
            repo = _Repo(private=payload.get("visibility") == "private", created_at=datetime.now(UTC))
            gitattributes = "".join(f"{pattern} filter=lfs diff=lfs merge=lfs -text\n" for pattern in LFS_PATTERNS)
            initial_files = {".gitattributes": Blob(gitattributes.encode(), is_lfs=False)}
            initial = repo.add_commit(None, "initial commit", "", initial_files, [".gitattributes"], [])
            repo.branches["main"] = initial.oid
            self.hub._repos[repo_id] = repo
        self._send_json(200, {"url": url, "name": repo_id, "id": repo_id})

    def _validate_yaml(self) -> None:
        self._caller_is_authenticated()  # only to reject a wrong token: validation itself is open to anyone
        content = self._json_body().get("content", "")
        errors = []
        if content.startswith("---"):
            front_matter = content[3:].split("\n---", 1)[0]
            try:
                metadata = yaml.safe_load(front_matter)
            except yaml.YAMLError as error:
                errors.append({"message": f"Invalid YAML: {error}"})
            else:
                if metadata is not None and not isinstance(metadata, dict):
                    errors.append({"message": "The YAML header must be a mapping"})
                elif metadata and self._json_body().get("repoType") == "dataset":
                    errors += [{"message": message} for message in dataset_metadata_errors(metadata)]
        self._send_json(400 if errors else 200, {"errors": errors, "warnings": []})

    def _whoami(self) -> None:
        """The token's owner: what `HfApi.whoami` (the CLI's pre-flight) reads."""
        if not self._caller_is_authenticated():
            raise _HubError(401, "Invalid username or password.")
        self._send_json(200, {"type": "user", "name": "stand-in", "auth": {"accessToken": {"role": "write"}}})

    def _dataset_info(self, repo_id: str, revision: str = "main") -> None:
        with self.hub._lock:
            repo = self._readable_repo(repo_id)
            commit = repo.resolve(revision)
            info = {
                "_id": hashlib.sha1(repo_id.encode()).hexdigest()[:24],
                "id": repo_id,
                "author": repo_id.split("/")[0],
                "sha": commit.oid,
                "createdAt": _hub_timestamp(repo.created_at),
                "lastModified": _hub_timestamp(commit.created_at),
                "private": repo.private,
                "gated": False,
                "disabled": False,
                "downloads": 0,
                "likes": 0,
                "tags": [],
                "siblings": [{"rfilename": path} for path in sorted(commit.files)],
            }
        self._send_json(200, info)

    def _list_refs(self, repo_id: str) -> None:
        with self.hub._lock:
            branches = [
                {"name": name, "ref": f"refs/heads/{name}", "targetCommit": oid}
                for name, oid in self._readable_repo(repo_id).branches.items()
                if not name.startswith("refs/")  # pull request refs
            ]
        self._send_json(200, {"branches": branches, "converts": [], "tags": [], "pullRequests": []})

    def _list_commits(self, repo_id: str, revision: str) -> None:
        """One page of the revision's history, newest first; the next page's URL in `Link`, as the Hub sends it."""
        page = int(self._query.get("p", "0"))
        limit = int(self._query.get("limit", str(COMMITS_PER_PAGE)))
        with self.hub._lock:
            history = self._readable_repo(repo_id).history(revision)
        listed = [
            {
                "id": commit.oid,
                "title": commit.title,
                "message": commit.description,
                "authors": [{"user": "stand-in"}],
                "date": _hub_timestamp(commit.created_at),
            }
            for commit in history[page * limit : (page + 1) * limit]
        ]
        headers = {"X-Total-Count": str(len(history))}
        if (page + 1) * limit < len(history):
            next_page = f"{self.hub.url}/api/datasets/{repo_id}/commits/{quote(revision, safe='')}"
            headers["Link"] = f'<{next_page}?p={page + 1}&limit={limit}>; rel="next"'
        self._send_json(200, listed, headers=headers)

    def _create_branch(self, repo_id: str, branch: str) -> None:
        self._require_write_access()
        starting_point = self._json_body().get("startingPoint", "main")
        with self.hub._lock:
            repo = self.hub._repo(repo_id)
            if branch in repo.branches:
                raise _HubError(409, "Reference already exists")
            repo.branches[branch] = repo.resolve(starting_point).oid
        self._send_json(200, {})

    def _list_tree(self, repo_id: str, revision: str, path: str = "") -> None:
        recursive = self._query.get("recursive", "false").lower() in ("true", "1")
        folder = path.strip("/")
        with self.hub._lock:
            commit = self._readable_repo(repo_id).resolve(revision)
            entries = _tree_entries(commit, folder, recursive)
        if folder and not entries:
            raise _HubError(404, f"{folder} does not exist on {revision}", error_code="EntryNotFound")
        self._send_json(200, entries)

    def _preupload(self, repo_id: str, revision: str) -> None:
        self._require_write_access()
        if "create_pr" in self._query:
            raise _HubError(400, "The stand-in does not support pull requests")
        if self.hub._should_fail():
            raise _HubError(503, "Service temporarily unavailable (stand-in failure)")
        with self.hub._lock:
            commit = self.hub._repo(repo_id).resolve(revision)
        files = []
        for file in self._json_body()["files"]:
            sample = base64.b64decode(file["sample"])
            entry: dict[str, Any] = {
                "path": file["path"],
                "uploadMode": "lfs" if _must_be_lfs(file["path"], file["size"], sample) else "regular",
                "shouldIgnore": False,
            }
            if file["path"] in commit.files:
                entry["oid"] = commit.files[file["path"]].upload_oid
            files.append(entry)
        self._send_json(200, {"files": files, "commitOid": commit.oid})

    def _lfs_batch(self, repo_id: str) -> None:
        self._require_write_access()
        payload = self._json_body()
        if payload.get("operation") != "upload":
            raise _HubError(400, "The stand-in only supports LFS uploads")
        if "basic" not in payload.get("transfers", ["basic"]):
            raise _HubError(400, "The stand-in only supports the 'basic' LFS transfer")
        objects = []
        with self.hub._lock:
            repo = self.hub._repo(repo_id)
            for requested in payload["objects"]:
                oid, size = requested["oid"], requested["size"]
                described = {"oid": oid, "size": size}
                stored = repo.lfs_objects.get(oid)
                if stored is None or len(stored) != size:
                    signature = self.hub._upload_signature(repo_id, oid, size)
                    upload_url = f"{self.hub.url}/lfs-storage/{repo_id}/{oid}?size={size}&signature={signature}"
                    described["authenticated"] = True
                    described["actions"] = {
                        "upload": {"href": upload_url},
                        "verify": {"href": f"{self.hub.url}/datasets/{repo_id}.git/info/lfs/objects/verify"},
                    }
                objects.append(described)
        self._send_json(200, {"transfer": "basic", "objects": objects}, content_type="application/vnd.git-lfs+json")

    def _lfs_store_object(self, repo_id: str, oid: str) -> None:
        """The pre-signed upload URL handed out by the batch API: no Authorization, like S3."""
        size = int(self._query.get("size", "-1"))
        expected = self.hub._upload_signature(repo_id, oid, size)
        if not hmac.compare_digest(expected, self._query.get("signature", "")):
            raise _HubError(403, "Invalid upload signature")
        if len(self._body) != size or hashlib.sha256(self._body).hexdigest() != oid:
            raise _HubError(400, "Uploaded content does not match the announced oid and size")
        with self.hub._lock:
            self.hub._repo(repo_id).lfs_objects[oid] = self._body
        self._send_json(200, {}, headers={"ETag": f'"{hashlib.md5(self._body).hexdigest()}"'})

    def _lfs_verify(self, repo_id: str) -> None:
        self._require_write_access()
        payload = self._json_body()
        with self.hub._lock:
            stored = self.hub._repo(repo_id).lfs_objects.get(payload["oid"])
        if stored is None or len(stored) != payload["size"]:
            raise _HubError(404, f"LFS object {payload['oid']} was not uploaded")
        self._send_json(200, {})

    def _commit(self, repo_id: str, revision: str) -> None:
        self._require_write_access()
        if "create_pr" in self._query:
            raise _HubError(400, "The stand-in does not support pull requests")
        lines = [json.loads(line) for line in self._body.splitlines() if line.strip()]
        if not lines or lines[0].get("key") != "header":
            raise _HubError(400, "The first NDJSON line of a commit must be its header")
        header = lines[0]["value"]
        limit = self.hub.max_files_per_commit
        if limit is not None and len(lines) - 1 > limit:
            raise _HubError(422, f"Too many files in one commit: {len(lines) - 1} > {limit}")
        fail = self.hub._should_fail()
        if fail and self.hub._random.random() < 0.5:
            raise _HubError(503, "Service temporarily unavailable (stand-in failure)")
        with self.hub._lock:
            repo = self.hub._repo(repo_id)
            if revision not in repo.branches:
                raise _HubError(404, f"Branch {revision} does not exist", error_code="RevisionNotFound")
            head = repo.commits[repo.branches[revision]]
            parent = header.get("parentCommit")
            if parent and not head.oid.startswith(parent):
                raise _HubError(412, "A commit has happened since. Please refresh and try again.")
            files, added, deleted = _apply_operations(repo, dict(head.files), lines[1:])
            commit = repo.add_commit(head.oid, header["summary"], header.get("description", ""), files, added, deleted)
            repo.branches[revision] = commit.oid
        if fail:
            raise _HubError(504, "Gateway timeout (stand-in failure after the commit was applied)")
        self._send_json(
            200,
            {
                "success": True,
                "commitOid": commit.oid,
                "commitUrl": f"{self.hub.url}/datasets/{repo_id}/commit/{commit.oid}",
                "hookOutput": "",
                "pullRequestUrl": None,
            },
        )

    def _resolve(self, repo_id: str, revision: str, path: str) -> None:
        with self.hub._lock:
            commit = self._readable_repo(repo_id).resolve(revision)
        blob = commit.files.get(path)
        if blob is None:
            raise _HubError(404, "Entry not found", error_code="EntryNotFound", headers={"X-Repo-Commit": commit.oid})
        headers = {"ETag": f'"{blob.sha256 if blob.is_lfs else blob.git_oid}"', "X-Repo-Commit": commit.oid}
        if blob.is_lfs:
            headers |= {"X-Linked-Etag": f'"{blob.sha256}"', "X-Linked-Size": str(len(blob.content))}
        self._send(200, blob.content, "application/octet-stream", headers)

    # --- storage buckets ---------------------------------------------------------------------------

    def _bucket_weather(self, path: str) -> None:
        """A bucket request's latency and injected fault, before it is answered."""
        if self.hub.bucket_latency:
            time.sleep(self.hub.bucket_latency)
        if "/resolve/" in path and path.split("/resolve/", 1)[1] in self.hub.unreadable_bucket_paths:
            raise _HubError(500, "Internal error (stand-in: this file is unreadable)")
        match self.hub._bucket_fault():
            case BucketFault.RATE_LIMITED:
                raise _HubError(429, "Too many requests (stand-in)", headers={"Retry-After": "0"})
            case BucketFault.UNAVAILABLE:
                raise _HubError(503, "Service temporarily unavailable (stand-in)")
            case BucketFault.RESET:
                self._reset_after_headers = True
            case None:
                pass

    def _readable_bucket(self, bucket_id: str) -> _Bucket:
        """The bucket, if the caller may see it; a private one looks missing to anonymous callers."""
        authenticated = self._caller_is_authenticated()
        bucket = self.hub._bucket(bucket_id)
        if bucket.private and not authenticated:
            raise _HubError(401, "Bucket not found", error_code="RepoNotFound")
        return bucket

    def _bucket_info(self, bucket_id: str) -> None:
        with self.hub._lock:
            bucket = self._readable_bucket(bucket_id)
            info = {
                "id": bucket_id,
                "private": bucket.private,
                "createdAt": _hub_timestamp(bucket.created_at),
                "size": sum(len(obj.content) for obj in bucket.files.values()),
                "totalFiles": len(bucket.files),
            }
        self._send_json(200, info)

    def _bucket_tree(self, bucket_id: str, prefix: str = "") -> None:
        """One page of the tree: recursive, the files whose path starts with `prefix` (a string
        match, as the Hub's); otherwise the files and folders right inside the folder `prefix`."""
        recursive = self._query.get("recursive", "false").lower() in ("true", "1")
        start = int(self._query.get("cursor", "0"))
        with self.hub._lock:
            bucket = self._readable_bucket(bucket_id)
            files = dict(bucket.files)
        entries: list[dict[str, Any]]
        end = start + self.hub.tree_page_size
        if recursive:
            paths = sorted(path for path in files if path.startswith(prefix))
            total, entries = len(paths), [_bucket_file_entry(path, files[path]) for path in paths[start:end]]
        elif prefix in files:
            total, entries = 1, [_bucket_file_entry(prefix, files[prefix])][start:end]
        else:
            inside = f"{prefix.rstrip('/')}/" if prefix else ""
            level: dict[str, dict[str, Any]] = {}
            for path, obj in sorted(files.items()):
                if not path.startswith(inside):
                    continue
                name, sep, _ = path[len(inside) :].partition("/")
                if sep:
                    folder = level.setdefault(inside + name, {"type": "directory", "path": inside + name})
                    folder["uploadedAt"] = max(folder.get("uploadedAt", ""), _hub_timestamp(obj.uploaded_at))
                else:
                    level[path] = _bucket_file_entry(path, obj)
            total, entries = len(level), [level[path] for path in sorted(level)][start:end]
        headers = {}
        if end < total:
            where = f"/{quote(prefix, safe='')}" if prefix else ""
            query = f"recursive={str(recursive).lower()}&cursor={end}"
            headers["Link"] = f'<{self.hub.url}/api/buckets/{bucket_id}/tree{where}?{query}>; rel="next"'
        self._send_json(200, entries, headers=headers)

    def _bucket_paths_info(self, bucket_id: str) -> None:
        paths = self._json_body().get("paths", [])
        with self.hub._lock:
            files = self._readable_bucket(bucket_id).files
            found = [_bucket_file_entry(path, files[path]) for path in paths if path in files]
        self._send_json(200, found)

    def _bucket_resolve(self, bucket_id: str, path: str) -> None:
        with self.hub._lock:
            obj = self._readable_bucket(bucket_id).files.get(path)
        if obj is None:
            raise _HubError(404, "Entry not found", error_code="EntryNotFound")
        content, size = obj.content, len(obj.content)
        headers = {"ETag": f'"{obj.xet_hash}"', "Accept-Ranges": "bytes", "X-Linked-Size": str(size)}
        requested = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        if requested is None:
            self._send(200, content, "application/octet-stream", headers)
            return
        first = int(requested.group(1))
        last = min(int(requested.group(2)), size - 1) if requested.group(2) else size - 1
        if first >= size or last < first:
            raise _HubError(416, "Requested range not satisfiable", headers={"Content-Range": f"bytes */{size}"})
        headers["Content-Range"] = f"bytes {first}-{last}/{size}"
        self._send(206, content[first : last + 1], "application/octet-stream", headers)

    def _discussion_json(self, repo_id: str, pr: _PullRequest) -> dict[str, Any]:
        return {
            "title": pr.title,
            "num": pr.num,
            "author": {"name": "stand-in"},
            "createdAt": _hub_timestamp(pr.created_at),
            "status": pr.status,
            "repo": {"name": repo_id, "type": "dataset"},
            "isPullRequest": True,
        }

    def _list_discussions(self, repo_id: str) -> None:
        with self.hub._lock:
            repo = self._readable_repo(repo_id)
            wanted = self._query.get("status", "all")
            listed = [
                self._discussion_json(repo_id, pr)
                for pr in sorted(repo.pull_requests.values(), key=lambda pr: -pr.num)
                if wanted == "all" or (pr.status in ("open", "draft")) == (wanted == "open")
            ]
        self._send_json(200, {"discussions": listed, "count": len(listed), "start": 0})

    def _create_discussion(self, repo_id: str) -> None:
        self._require_write_access()
        payload = self._json_body()
        if not payload.get("pullRequest"):
            raise _HubError(400, "The stand-in only supports pull requests")
        with self.hub._lock:
            repo = self.hub._repo(repo_id)
            num = len(repo.pull_requests) + 1
            pr = _PullRequest(
                num, payload["title"], payload.get("description", ""), repo.branches["main"], datetime.now(UTC)
            )
            repo.pull_requests[num] = pr
            repo.branches[pr.ref] = pr.base_oid
        self._send_json(200, {"num": num, "url": f"{self.hub.url}/datasets/{repo_id}/discussions/{num}"})

    def _pull_request(self, repo_id: str, num: str) -> _PullRequest:
        pr = self._readable_repo(repo_id).pull_requests.get(int(num))
        if pr is None:
            raise _HubError(404, f"Discussion {num} not found")
        return pr

    def _discussion_details(self, repo_id: str, num: str) -> None:
        with self.hub._lock:
            pr = self._pull_request(repo_id, num)
            details = {
                **self._discussion_json(repo_id, pr),
                "events": [],
                "changes": {"base": "refs/heads/main", **({"mergeCommitId": pr.merge_oid} if pr.merge_oid else {})},
                "filesWithConflicts": [],
            }
        self._send_json(200, details)

    def _discussion_status(self, repo_id: str, num: str) -> None:
        self._require_write_access()
        status = self._json_body().get("status")
        with self.hub._lock:
            pr = self._pull_request(repo_id, num)
            if status not in ("open", "closed") or pr.status == "merged":
                raise _HubError(400, f"Cannot change the status of a {pr.status} pull request to {status}")
            pr.status = status
        event = {
            "id": secrets.token_hex(12),
            "type": "status-change",
            "createdAt": _hub_timestamp(datetime.now(UTC)),
            "author": {"name": "stand-in"},
            "data": {"status": status},
        }
        self._send_json(200, {"newStatus": event})

    def _merge_pull_request(self, repo_id: str, num: str) -> None:
        """Fast-forward when `main` has not moved, else apply the pull request's changes on top,
        refusing paths both sides changed, as the Hub does."""
        self._require_write_access()
        with self.hub._lock:
            repo = self.hub._repo(repo_id)
            pr = self._pull_request(repo_id, num)
            if pr.status != "open":
                raise _HubError(400, f"Only an open pull request can be merged; this one is {pr.status}")
            base, head = repo.commits[pr.base_oid], repo.commits[repo.branches["main"]]
            proposed = repo.commits[repo.branches[pr.ref]]
            ours = {p for p in set(base.files) | set(proposed.files) if base.files.get(p) != proposed.files.get(p)}
            theirs = {p for p in set(base.files) | set(head.files) if base.files.get(p) != head.files.get(p)}
            conflicts = sorted(p for p in ours & theirs if proposed.files.get(p) != head.files.get(p))
            if conflicts:
                raise _HubError(409, f"Merge conflicts in {', '.join(conflicts[:5])}")
            files = dict(head.files)
            for path in ours:
                if path in proposed.files:
                    files[path] = proposed.files[path]
                else:
                    files.pop(path, None)
            added = sorted(p for p in ours if p in proposed.files)
            deleted = sorted(p for p in ours if p not in proposed.files)
            commit = repo.add_commit(head.oid, f"Merge pull request #{pr.num}: {pr.title}", "", files, added, deleted)
            repo.branches["main"] = commit.oid
            pr.status, pr.merge_oid = "merged", commit.oid
        self._send_json(200, {})

    # --- access checks ---------------------------------------------------------------------------

    def _caller_is_authenticated(self) -> bool:
        """True for the configured token, False without one; a wrong token is rejected outright."""
        authorization = self.headers.get("Authorization")
        if authorization is None:
            return False
        if not hmac.compare_digest(authorization, f"Bearer {self.hub._token}"):
            raise _HubError(401, INVALID_CREDENTIALS)
        return True

    def _require_write_access(self) -> None:
        if not self._caller_is_authenticated():
            raise _HubError(401, "You must be authenticated to write to the Hub")

    def _readable_repo(self, repo_id: str) -> _Repo:
        """The repo, if the caller may see it; private repos look missing to anonymous callers, as on the Hub."""
        authenticated = self._caller_is_authenticated()
        repo = self.hub._repo(repo_id)
        if repo.private and not authenticated:
            raise _HubError(401, "Repository not found", error_code="RepoNotFound")
        return repo

    # --- plumbing --------------------------------------------------------------------------------

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while (size := int(self.rfile.readline().split(b";")[0], 16)) > 0:
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(chunks)
        return self.rfile.read(int(self.headers.get("Content-Length", 0)))

    def _json_body(self) -> dict[str, Any]:
        try:
            return json.loads(self._body or b"{}")
        except json.JSONDecodeError:
            raise _HubError(400, "Request body is not valid JSON") from None

    def _send_json(
        self,
        status: int,
        payload: object,
        *,
        content_type: str = "application/json",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._send(status, json.dumps(payload).encode(), content_type, headers or {})

    def _send_error(self, error: _HubError) -> None:
        headers = {"X-Error-Message": error.message, **error.headers}
        if error.error_code:
            headers["X-Error-Code"] = error.error_code
        self._send_json(error.status, {"error": error.message, **error.details}, headers=headers)

    def _send(self, status: int, body: bytes, content_type: str, headers: Mapping[str, str]) -> None:
        self._status = status
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        if self.command == "HEAD":
            self._record(0)
            self.end_headers()
            return
        if self._reset_after_headers:  # a BucketFault.RESET: half the body, then gone
            self._record(len(body) // 2)
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            raise _DroppedConnection
        self._record(len(body))
        self.end_headers()
        self.wfile.write(body)


class _DroppedConnection(Exception):
    """The stand-in closed the connection on purpose (a BucketFault.RESET)."""


def _bucket_file_entry(path: str, obj: BucketObject) -> dict[str, Any]:
    """A file as the bucket tree and paths-info APIs describe it (`BucketFile`'s fields)."""
    stamp = _hub_timestamp(obj.uploaded_at)
    return {
        "type": "file",
        "path": path,
        "size": len(obj.content),
        "xetHash": obj.xet_hash,
        "mtime": stamp,
        "uploadedAt": stamp,
    }


def _apply_operations(
    repo: _Repo, files: dict[str, Blob], operations: list[dict[str, Any]]
) -> tuple[dict[str, Blob], list[str], list[str]]:
    """Apply a commit's NDJSON operations to a copy of the parent's files, refusing what the Hub refuses."""
    added: list[str] = []
    deleted: list[str] = []
    for operation in operations:
        key, value = operation["key"], operation["value"]
        path = value["path"]
        if key == "file":
            content = base64.b64decode(value["content"])
            if _must_be_lfs(path, len(content), content[:512]):
                raise _HubError(400, f"Your push was rejected: {path} must be stored with LFS")
            files[path] = Blob(content, is_lfs=False)
            added.append(path)
        elif key == "lfsFile":
            if value["oid"] not in repo.lfs_objects:
                raise _HubError(400, f"Your push was rejected: the LFS object of {path} was never uploaded")
            files[path] = Blob(repo.lfs_objects[value["oid"]], is_lfs=True)
            added.append(path)
        elif key == "deletedFile":
            if path not in files:
                raise _HubError(404, f"A file with this name doesn't exist: {path}", error_code="EntryNotFound")
            del files[path]
            deleted.append(path)
        elif key == "deletedFolder":
            inside = [existing for existing in files if existing.startswith(path.rstrip("/") + "/")]
            if not inside:
                raise _HubError(404, f"A folder with this name doesn't exist: {path}", error_code="EntryNotFound")
            for existing in inside:
                del files[existing]
            deleted.extend(inside)
        else:
            raise _HubError(400, f"The stand-in does not support commit operation {key!r}")
    return files, added, deleted


def _must_be_lfs(path: str, size: int, sample: bytes) -> bool:
    """The Hub's rule: LFS when .gitattributes says so, when the file is large, or when it is binary."""
    name = path.rsplit("/", 1)[-1]
    tracked = any(fnmatch.fnmatch(name, pattern) for pattern in LFS_PATTERNS)
    return tracked or size > MAX_REGULAR_FILE_SIZE or b"\0" in sample


def _tree_entries(commit: CommitRecord, folder: str, recursive: bool) -> list[dict[str, Any]]:
    """Entries under `folder` shaped like the Hub's tree API (folders before the files they hold)."""
    prefix = f"{folder}/" if folder else ""
    entries: dict[str, dict[str, Any]] = {}
    for path in sorted(commit.files):
        if not path.startswith(prefix):
            continue
        relative = path[len(prefix) :]
        if not recursive and "/" in relative:
            subfolder = prefix + relative.split("/", 1)[0]
            entries.setdefault(subfolder, _folder_entry(commit, subfolder))
            continue
        if recursive:
            parent = dirname(path)
            while len(parent) > len(folder):
                entries.setdefault(parent, _folder_entry(commit, parent))
                parent = dirname(parent)
        entries[path] = _file_entry(path, commit.files[path])
    return sorted(entries.values(), key=lambda entry: entry["path"])


def _file_entry(path: str, blob: Blob) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "file", "oid": blob.git_oid, "size": len(blob.content), "path": path}
    if blob.is_lfs:
        entry["lfs"] = {"oid": blob.sha256, "size": len(blob.content), "pointerSize": len(blob.lfs_pointer)}
    return entry


def _folder_entry(commit: CommitRecord, path: str) -> dict[str, Any]:
    tree_id = hashlib.sha1(f"{commit.oid}:{path}".encode()).hexdigest()
    return {"type": "directory", "oid": tree_id, "size": 0, "path": path}


def _hub_timestamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _point_client_at(hub: HubStandIn, monkeypatch: pytest.MonkeyPatch) -> None:
    """huggingface_hub pointed at the stand-in for the duration of a test.

    Code under test should still pass `endpoint=hub.url`: huggingface_hub copied HF_ENDPOINT
    into `constants.ENDPOINT` at import time, so the environment variable alone is not seen. The
    constant is patched too, as a guard against a forgotten `endpoint=` reaching the real Hub.
    """
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setattr(hf_constants, "ENDPOINT", hub.url)
    monkeypatch.setattr(
        hf_constants, "HUGGINGFACE_CO_URL_TEMPLATE", hub.url + "/{repo_id}/resolve/{revision}/{filename}"
    )
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    monkeypatch.setattr(hf_constants, "HF_HUB_DISABLE_XET", True)
    monkeypatch.delenv("HF_TOKEN", raising=False)


@pytest.fixture
def hub_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[HubStandIn]:
    """A fresh stand-in Hub, with huggingface_hub pointed at it for the duration of the test."""
    with HubStandIn(token=STAND_IN_TOKEN) as hub:
        _point_client_at(hub, monkeypatch)
        yield hub


@pytest.fixture
def hub_server_at_scale(monkeypatch: pytest.MonkeyPatch) -> Iterator[HubStandIn]:
    """A stand-in holding to the Hub's ~100 files per commit and failing one write in ten."""
    with HubStandIn(token=STAND_IN_TOKEN, max_files_per_commit=100, failure_rate=0.1, seed=16) as hub:
        _point_client_at(hub, monkeypatch)
        yield hub
