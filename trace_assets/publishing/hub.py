"""Publish a run's output folder to a Hugging Face Hub dataset repo in a single commit.

Readers of a dataset must never see a mix of two runs' shards, so the new files and the deletion of
stale shards travel in one commit, and that commit is pinned to the head it was planned against
(`parent_commit`) so a concurrent writer makes it fail instead of interleaving.

The token is handed to `huggingface_hub` and nowhere else: it is never logged, and Hub errors are
re-raised as `HubPublishError` without the original exception attached, because that exception
keeps the request (and so the `Authorization` header) around.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar
from urllib.parse import unquote

from trace_assets.progress import FileTransfer, Progress, quiet, terminal

# huggingface_hub (with httpx2) is imported where it is used, so the runs that publish to a folder
# (and the pipeline's start-up) never load it: 0.1-0.3 s of every run's start-up otherwise.
if TYPE_CHECKING:
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi
    from huggingface_hub.errors import HfHubHTTPError
    from huggingface_hub.hf_api import RepoFile

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

REPO_TYPE = "dataset"
DEFAULT_REVISION = "main"
SHARD_DIR = "data"
SESSIONS_DIR = "sessions"  # session files; like shards, the files a new version may drop
# The Hub's guidance for commits over HTTP: larger ones can time out while still completing.
MAX_FILES_PER_COMMIT = 100
PUBLISH_ROOT_PREFIX = "hf://datasets/"
# Contents go up before the commit in groups this small, so progress moves during a long upload.
UPLOAD_GROUP_FILES = 32
UPLOAD_GROUP_BYTES = 64 * 2**20

_CHARS_NOT_ALLOWED_IN_REPO_NAMES = re.compile(r"[^A-Za-z0-9._-]+")
_REPEATED_SEPARATORS = re.compile(r"-{2,}|\.{2,}")


class HubPublishError(RuntimeError):
    """The Hub refused or failed a publish step; the message is safe to log (it never holds the token)."""


@dataclass(frozen=True)
class PublishedCommit:
    """Where a run landed on the Hub.

    `files_added` is every path the commit was asked to write; the client leaves out files whose
    content is already on the Hub, so a re-publish of an unchanged file uploads nothing.
    """

    repo_id: str
    revision: str
    commit_oid: str
    commit_url: str
    files_added: tuple[str, ...]
    files_deleted: tuple[str, ...]


class PublishRoot(NamedTuple):
    """A parsed `hf://datasets/<org>/<name>[@revision][/path]` URL."""

    repo_id: str
    revision: str
    path_in_repo: str


def validate_repo_id(repo_id: str, source: str = "") -> str:
    """Return `repo_id` unchanged if the Hub accepts it as `namespace/name`, else raise ValueError
    naming `source` (the setting it came from), so a bad id fails before any network call.

    The rules are `huggingface_hub`'s (`validate_repo_id`); a bare name, which the client would
    complete with the token's user, is refused: the target must say where its data goes.
    """
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id as hub_validate_repo_id

    where = f" (from {source})" if source else ""
    if "/" not in repo_id:
        raise ValueError(f"Hub repo id must be 'namespace/name', got {repo_id!r}{where}")
    try:
        hub_validate_repo_id(repo_id)
    except HFValidationError:
        raise ValueError(
            f"Invalid Hub repo id {repo_id!r}{where}: each part must be 1-96 characters of [A-Za-z0-9._-],"
            " must not start or end with '-' or '.', must not contain '--' or '..', and the name must not"
            " end in '.git'"
        ) from None
    return repo_id


def sanitize_repo_name_part(value: str) -> str:
    """Turn a free-form value such as a run id into something usable inside a Hub repo name.

    Runs of disallowed characters become `-`, repeated separators collapse (the Hub rejects `--`
    and `..`), and separators are trimmed from both ends.
    """
    sanitized = _CHARS_NOT_ALLOWED_IN_REPO_NAMES.sub("-", value)
    sanitized = _REPEATED_SEPARATORS.sub(lambda match: match.group()[0], sanitized).strip("-.")
    if not sanitized:
        raise ValueError(f"{value!r} has no characters usable in a Hub repo name")
    return sanitized


def render_repo_id(template: str, run_id: str, **fields: str) -> str:
    """Fill a template such as `"{org}/traces-{run_id}"` and validate the resulting repo id.

    Only `run_id` is sanitised: it comes from the run and may hold any character, whereas the
    other fields are configuration and should fail loudly when wrong.
    """
    try:
        repo_id = template.format(run_id=sanitize_repo_name_part(run_id), **fields)
    except KeyError as missing:
        raise ValueError(f"Repo id template {template!r} needs a value for {missing}") from None
    return validate_repo_id(repo_id, f"repo id template {template!r}")


def parse_publish_root(url: str) -> PublishRoot:
    """Split `hf://datasets/<org>/<name>[@revision][/path]` into repo id, revision and path.

    The revision defaults to `main`; a revision containing `/` must be percent-encoded
    (`@release%2F2025`) since a literal `/` starts the path.
    """
    if not url.startswith(PUBLISH_ROOT_PREFIX):
        raise ValueError(f"Publish root must look like 'hf://datasets/<org>/<name>[@revision][/path]', got {url!r}")
    parts = url[len(PUBLISH_ROOT_PREFIX) :].strip("/").split("/", 2)
    if len(parts) < 2:
        raise ValueError(f"Publish root {url!r} must name both an organisation and a dataset")
    namespace, name_and_revision = parts[0], parts[1]
    name, at, revision = name_and_revision.partition("@")
    if at and not revision:
        raise ValueError(f"Publish root {url!r} has an empty revision after '@'")
    repo_id = validate_repo_id(f"{namespace}/{name}", f"publish root {url!r}")
    path_in_repo = normalize_path_in_repo(parts[2] if len(parts) == 3 else "")
    return PublishRoot(repo_id, unquote(revision) or DEFAULT_REVISION, path_in_repo)


def normalize_path_in_repo(path_in_repo: str) -> str:
    """Strip surrounding slashes and reject paths that could escape or blur the prefix."""
    path = path_in_repo.strip("/")
    if path and any(segment in ("", ".", "..") for segment in path.split("/")):
        raise ValueError(f"Invalid path in repo {path_in_repo!r}: empty, '.' or '..' segments are not allowed")
    return path


def publish_run_folder(
    local_dir: Path,
    repo_id: str,
    *,
    token: str | None,
    revision: str = DEFAULT_REVISION,
    private: bool = True,
    path_in_repo: str = "",
    commit_message: str,
    endpoint: str | None = None,
    max_files_per_commit: int = MAX_FILES_PER_COMMIT,
    retry: RetryPolicy | None = None,
    shared_file: SharedFile | None = None,
    progress: Progress = quiet,
) -> PublishedCommit:
    """Upload every file of `local_dir` to a dataset repo and drop stale shards, all in one commit.

    A version of more than `max_files_per_commit` file changes goes up in batches on a pull
    request that is merged at the end instead, so `main` still moves in one step (see
    `_publish_in_batches`); stale session files are dropped like stale shards.

    Stale shards are the files under `<path_in_repo>/data/` on the Hub that the new run does not
    have; nothing outside that folder is deleted, so runs published under different prefixes of
    one repo stay independent. The repo is created (private unless `private=False`) and a
    non-`main` branch is created from `main` when missing. Publishing into an existing public repo
    requires `private=False`, so traces are never made public by accident. If another commit lands
    on the branch while this one is being prepared, the Hub rejects it (HTTP 412) and nothing
    changes; publishing again plans against the new head.

    `shared_file` (the root card of a repo holding many scopes) is read at the head the commit is
    planned against and its merge goes into the same commit, so the Hub's parent-commit check keeps
    a concurrent publish of another scope from losing either's change.

    `token=None` lets `huggingface_hub` find a token itself (HF_TOKEN, then the login cache);
    `endpoint=None` means `HF_ENDPOINT`, else https://huggingface.co. `progress` gets the upload's
    bytes and files done/total, rate and ETA.
    """
    validate_repo_id(repo_id)
    prefix = normalize_path_in_repo(path_in_repo)
    uploads = {_join(prefix, relative): source for relative, source in _files_to_publish(Path(local_dir)).items()}
    shard_folder = _join(prefix, SHARD_DIR) + "/"
    stale_folders = (shard_folder, _join(prefix, SESSIONS_DIR) + "/")
    if not any(path.startswith(shard_folder) for path in uploads):
        raise ValueError(
            f"{local_dir} has no files under {SHARD_DIR}/; refusing to publish since it would delete every shard"
            f" under {shard_folder} in {repo_id}"
        )

    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    api = HfApi(endpoint=endpoint, token=token)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            return _publish(
                api,
                uploads,
                repo_id,
                revision,
                private,
                stale_folders,
                commit_message,
                max_files_per_commit,
                retry,
                (shared_file, Path(scratch)) if shared_file else None,
                progress,
            )
    except HfHubHTTPError as error:
        failure = _describe_hub_failure(error, repo_id, revision, token)
    # Raised outside the except block so the Hub error, whose request still carries the
    # Authorization header, is not chained onto ours.
    raise HubPublishError(failure)


def _publish(
    api: HfApi,
    uploads: dict[str, Path],
    repo_id: str,
    revision: str,
    private: bool,
    stale_folders: tuple[str, ...],
    commit_message: str,
    max_files_per_commit: int = MAX_FILES_PER_COMMIT,
    retry: RetryPolicy | None = None,
    shared: tuple[SharedFile, Path] | None = None,
    progress: Progress = quiet,
) -> PublishedCommit:
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete
    from huggingface_hub.errors import EntryNotFoundError, RemoteEntryNotFoundError

    head = _prepare_revision(api, repo_id, revision, private)
    if shared:
        (shared_file, scratch), existing = shared, None
        try:
            existing = Path(
                api.hf_hub_download(repo_id, shared_file.path, repo_type=REPO_TYPE, revision=head, cache_dir=scratch)
            ).read_text()
        except (EntryNotFoundError, RemoteEntryNotFoundError):
            pass
        merged = scratch / "shared-file"
        merged.write_text(shared_file.merge(existing))
        uploads = {**uploads, shared_file.path: merged}
    remote_files = api.list_repo_files(repo_id, repo_type=REPO_TYPE, revision=head)
    stale_shards = sorted(path for path in remote_files if path.startswith(stale_folders) and path not in uploads)
    if len(uploads) + len(stale_shards) > max_files_per_commit:
        batches = _BatchedPublish(
            api, repo_id, uploads, stale_folders, max_files_per_commit, retry or RetryPolicy(), progress
        )
        return batches.publish(revision, commit_message, head)
    logger.info(
        "Publishing %d files to dataset %s@%s, deleting %d stale shards",
        len(uploads),
        repo_id,
        revision,
        len(stale_shards),
    )
    additions = [
        CommitOperationAdd(path_in_repo=path, path_or_fileobj=source) for path, source in sorted(uploads.items())
    ]
    transfer = FileTransfer("upload", [addition.upload_info.size for addition in additions], progress, bar=terminal())
    for group in _upload_groups(additions):  # the client skips these contents in the commit
        api.preupload_lfs_files(repo_id, additions=group, repo_type=REPO_TYPE, revision=revision)
        _advance(transfer, [addition for addition in group if not _travels_in_commit(addition)])
    operations: list[CommitOperationAdd | CommitOperationDelete] = list(additions)
    operations += [CommitOperationDelete(path_in_repo=path, is_folder=False) for path in stale_shards]
    commit = api.create_commit(
        repo_id,
        operations,
        commit_message=commit_message,
        repo_type=REPO_TYPE,
        revision=revision,
        parent_commit=head,
    )
    transfer.finish_all()  # the regular files went up in the commit
    logger.info("Published dataset %s@%s at commit %s", repo_id, revision, commit.oid)
    return PublishedCommit(
        repo_id=repo_id,
        revision=revision,
        commit_oid=commit.oid,
        commit_url=commit.commit_url,
        files_added=tuple(sorted(uploads)),
        files_deleted=tuple(stale_shards),
    )


def _upload_groups(additions: list[CommitOperationAdd]) -> Iterator[list[CommitOperationAdd]]:
    """Consecutive groups of at most UPLOAD_GROUP_FILES files and (unless one file is larger) UPLOAD_GROUP_BYTES."""
    group: list[CommitOperationAdd] = []
    for addition in additions:
        if group and (
            len(group) == UPLOAD_GROUP_FILES
            or sum(a.upload_info.size for a in group) + addition.upload_info.size > UPLOAD_GROUP_BYTES
        ):
            yield group
            group = []
        group.append(addition)
    if group:
        yield group


def read_published_json(
    repo_id: str, path_in_repo: str, *, revision: str, token: str | None, endpoint: str | None
) -> Any:
    """A JSON file of a published dataset, or None when the repo, branch or file does not exist."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import (
        EntryNotFoundError,
        HfHubHTTPError,
        RemoteEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
        with tempfile.TemporaryDirectory() as cache_dir:
            path = hf_hub_download(
                repo_id,
                path_in_repo,
                repo_type=REPO_TYPE,
                revision=revision,
                token=token,
                endpoint=endpoint,
                cache_dir=cache_dir,
            )
            return json.loads(Path(path).read_text())
    except (RepositoryNotFoundError, RevisionNotFoundError, EntryNotFoundError, RemoteEntryNotFoundError):
        return None
    except HfHubHTTPError as error:
        failure = _describe_hub_failure(error, repo_id, revision, token)
    raise HubPublishError(failure.replace("Publishing to", "Reading"))


def check_hub_access(repo_id: str, *, token: str | None, endpoint: str | None) -> None:
    """Before any work: the token is valid, and the repo, if it exists, can be read with it."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError, LocalTokenNotFoundError

    api = HfApi(endpoint=endpoint, token=token)
    try:
        api.whoami()
        if api.repo_exists(repo_id, repo_type=REPO_TYPE):
            api.dataset_info(repo_id)
    except LocalTokenNotFoundError:
        failure = (
            f"Reaching dataset {repo_id} failed: no Hugging Face token (set HF_TOKEN, or log in with `hf auth login`)"
        )
    except HfHubHTTPError as error:
        failure = _describe_hub_failure(error, repo_id, DEFAULT_REVISION, token).replace("Publishing to", "Reaching")
    else:
        return
    raise HubPublishError(failure)


class SharedFile(NamedTuple):
    """A file many publishes to one repo each change a part of: its path, and the merge of one
    publish's part into the text at the head (None when there is none)."""

    path: str
    merge: Callable[[str | None], str]


def _prepare_revision(api: HfApi, repo_id: str, revision: str, private: bool) -> str:
    """Make sure repo and branch exist; return the head commit the publish is planned against."""
    api.create_repo(repo_id, repo_type=REPO_TYPE, private=private, exist_ok=True)
    if revision != DEFAULT_REVISION:
        api.create_branch(repo_id, repo_type=REPO_TYPE, branch=revision, exist_ok=True)
    info = api.dataset_info(repo_id, revision=revision)
    if private and not info.private:
        raise HubPublishError(
            f"Dataset repo {repo_id} already exists and is public; pass private=False to publish to it anyway"
        )
    assert info.sha is not None, "the Hub names every revision's head commit"
    return info.sha


def _files_to_publish(local_dir: Path) -> dict[str, Path]:
    """Map repo-relative POSIX paths to local files, skipping hidden files and folders (caches, .DS_Store)."""
    if not local_dir.is_dir():
        raise ValueError(f"Run folder {local_dir} does not exist or is not a directory")
    files = {}
    for path in sorted(local_dir.rglob("*")):
        relative = path.relative_to(local_dir)
        if path.is_file() and not any(part.startswith(".") for part in relative.parts):
            files[relative.as_posix()] = path
    return files


def _join(prefix: str, path: str) -> str:
    return str(PurePosixPath(prefix, path)) if prefix else path


def _describe_hub_failure(error: HfHubHTTPError, repo_id: str, revision: str, token: str | None) -> str:
    status = error.response.status_code
    reason = error.server_message or error.response.reason_phrase or type(error).__name__
    message = f"Publishing to dataset {repo_id}@{revision} failed: HTTP {status}: {reason.strip()}"
    if status == 401:
        message += " (check that HF_TOKEN is set, valid, and allowed to write to this namespace)"
    if error.request_id:
        message += f" [request id {error.request_id}]"
    return message.replace(token, "***") if token else message


# --------------------------------------------------------------------------- versions too big for one commit


@dataclass(frozen=True)
class RetryPolicy:
    """How often one Hub call or batch is tried after transient failures, and the first wait (doubled each time)."""

    attempts: int = 6
    wait_seconds: float = 2.0


def _is_transient(error: Exception) -> bool:
    """Worth another try: the server failed or timed out, or a batch landed after all (412 on the stale parent)."""
    import httpx2
    from huggingface_hub.errors import HfHubHTTPError

    if isinstance(error, HfHubHTTPError):
        status = error.response.status_code
        return status >= 500 or status in (408, 412, 429)
    return isinstance(error, httpx2.TransportError)


@dataclass(frozen=True)
class _LocalFile:
    """A file to publish and the two ids the Hub may know it by."""

    source: Path
    sha256: str  # what an LFS file is known by
    git_oid: str  # what a regular file is known by

    @classmethod
    def read(cls, source: Path) -> _LocalFile:
        data = source.read_bytes()
        git_oid = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        return cls(source, hashlib.sha256(data).hexdigest(), git_oid)

    def is_on(self, remote: RepoFile | None) -> bool:
        if remote is None:
            return False
        if remote.lfs is not None:
            return remote.lfs.sha256 == self.sha256
        return remote.blob_id == self.git_oid


def _travels_in_commit(addition: CommitOperationAdd) -> bool:
    """A regular (non-LFS) file: `preupload_lfs_files` leaves it, and its bytes go up in the commit.
    huggingface_hub keeps the server's choice only in `_upload_mode`; unknown counts as regular."""
    return getattr(addition, "_upload_mode", None) != "lfs"


def _advance(transfer: FileTransfer, additions: list[CommitOperationAdd]) -> None:
    if additions:
        transfer.advance(len(additions), sum(addition.upload_info.size for addition in additions))


class _BatchedPublish:
    """A version with more file changes than one commit should carry.

    Contents go up first (`preupload_lfs_files`), then commits of at most `max_files` changes
    land on a pull request, and merging it moves `main` from the old version to the new one in
    one step: readers of `main` never see half of it. Each step is planned from what the pull
    request already holds, so a rerun after an interruption finds the open pull request by its
    title and resumes it, uploading and committing only what is not there yet; a batch that
    failed on the wire but landed on the server is recognised the same way. A pull request is
    resumed only while it is based on the head of `main` the version was planned on: one opened
    on an older `main` is closed and a new one started, since merging it would meet `main`'s newer
    changes to the same files (the card, the root card) and fail, or undo them. Its LFS contents
    stay in the repo's storage, so the new pull request uploads none of them again; only regular
    files travel again, in its commits. A revision other than `main` takes the batches directly
    (pull requests target `main`).
    """

    def __init__(
        self,
        api: HfApi,
        repo_id: str,
        uploads: dict[str, Path],
        stale_folders: tuple[str, ...],
        max_files: int,
        retry: RetryPolicy,
        progress: Progress = quiet,
    ) -> None:
        self.api = api
        self.progress = progress
        self.repo_id = repo_id
        self.local = {path: _LocalFile.read(source) for path, source in uploads.items()}
        self.stale_folders = stale_folders
        self.max_files = max_files
        self.retry = retry
        self.deleted: set[str] = set()

    def publish(self, revision: str, title: str, planned_on: str) -> PublishedCommit:
        """`planned_on` is the head of `revision` the version (and a shared file's merge) was planned against."""
        number = self._pull_request(title, planned_on) if revision == DEFAULT_REVISION else None
        ref = revision if number is None else _pull_request_ref(number)
        transfer = self._upload_contents(ref)
        head = self._commit_batches(ref, title, transfer)
        transfer.finish_all()
        if number is not None:
            head = self._merge(number)
        logger.info("Published dataset %s@%s at commit %s", self.repo_id, revision, head)
        return PublishedCommit(
            repo_id=self.repo_id,
            revision=revision,
            commit_oid=head,
            commit_url=f"{self.api.endpoint}/datasets/{self.repo_id}/commit/{head}",
            files_added=tuple(sorted(self.local)),
            files_deleted=tuple(sorted(self.deleted)),
        )

    def _call(self, call: Callable[[], _T]) -> _T:
        for attempt in range(self.retry.attempts):
            try:
                return call()
            except Exception as error:
                if not _is_transient(error) or attempt == self.retry.attempts - 1:
                    raise
                logger.warning("Hub call failed (%s), trying again", type(error).__name__)
                time.sleep(self.retry.wait_seconds * 2**attempt)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _pull_request(self, title: str, planned_on: str) -> int:
        """The open pull request an interrupted publish of this scope left, if it is still based on
        `planned_on`, else a new one, which must start there; stale ones are closed on the way."""
        for discussion in self._call(
            lambda: list(
                self.api.get_repo_discussions(self.repo_id, discussion_type="pull_request", repo_type=REPO_TYPE)
            )
        ):
            if discussion.title != title or discussion.status not in ("draft", "open"):
                continue
            if self._is_based_on(discussion.num, planned_on):
                logger.info("Resuming pull request #%d of %s", discussion.num, self.repo_id)
                return discussion.num
            self._close(discussion.num, "main has moved since it was opened; a new pull request replaces it")
        number = self._call(
            lambda: self.api.create_pull_request(
                self.repo_id,
                title=title,
                description="Batches of one version, merged in one step when complete (trace_assets).",
                repo_type=REPO_TYPE,
            )
        ).num
        start = self._call(lambda: self.api.dataset_info(self.repo_id, revision=_pull_request_ref(number))).sha
        if start != planned_on:  # main moved after the plan: merging would undo that change of a shared file
            self._close(number, "main moved while this version was being planned")
            raise HubPublishError(
                f"Publishing to dataset {self.repo_id}@{DEFAULT_REVISION} stopped: main moved from {planned_on}"
                f" to {start} while the version was being planned; publishing again plans against the new head"
            )
        return number

    def _is_based_on(self, number: int, commit: str) -> bool:
        """Whether `commit`, main's head when this publish began, is in the pull request's history.
        An earlier publish of the scope opened the pull request before that, so it was opened on
        `commit`, and merging it moves main to exactly the pull request's files. One request per 50
        commits of history (the Hub's page), made only when an open pull request of the scope is found."""
        history = self._call(
            lambda: self.api.list_repo_commits(self.repo_id, repo_type=REPO_TYPE, revision=_pull_request_ref(number))
        )
        return any(entry.commit_id == commit for entry in history)

    def _close(self, number: int, why: str) -> None:
        logger.warning("Closing pull request #%d of %s: %s", number, self.repo_id, why)
        self._call(
            lambda: self.api.change_discussion_status(
                self.repo_id, number, "closed", comment=f"Closed by trace_assets: {why}.", repo_type=REPO_TYPE
            )
        )

    def _state(self, ref: str) -> tuple[str, dict[str, RepoFile]]:
        """The ref's head and every file under it."""
        from huggingface_hub.hf_api import RepoFile

        head = self._call(lambda: self.api.dataset_info(self.repo_id, revision=ref)).sha
        assert head is not None, "the Hub names every revision's head commit"
        entries = self._call(
            lambda: list(self.api.list_repo_tree(self.repo_id, recursive=True, repo_type=REPO_TYPE, revision=head))
        )
        return head, {entry.path: entry for entry in entries if isinstance(entry, RepoFile)}

    def _missing(self, remote: dict[str, RepoFile]) -> list[str]:
        return sorted(path for path, local in self.local.items() if not local.is_on(remote.get(path)))

    def _upload_contents(self, ref: str) -> FileTransfer:
        """LFS contents before any commit, so commits are small and quick; regular files travel in
        them. The returned transfer counts every file the ref lacks: LFS ones here, regular ones as
        their commits land."""
        _, remote = self._state(ref)
        missing = self._missing(remote)
        sizes = {path: self.local[path].source.stat().st_size for path in missing}
        transfer = FileTransfer("upload", list(sizes.values()), self.progress, bar=terminal())
        for batch in _batches(missing, self.max_files):
            additions = self._call(partial(self._preupload, batch, ref))
            _advance(transfer, [addition for addition in additions if not _travels_in_commit(addition)])
        return transfer

    def _preupload(self, paths: list[str], ref: str) -> list[CommitOperationAdd]:
        additions = self._additions(paths)
        self.api.preupload_lfs_files(self.repo_id, additions=additions, repo_type=REPO_TYPE, revision=ref)
        return additions

    def _additions(self, paths: list[str]) -> list[CommitOperationAdd]:
        from huggingface_hub import CommitOperationAdd

        return [CommitOperationAdd(path_in_repo=path, path_or_fileobj=self.local[path].source) for path in paths]

    def _plan(self, remote: dict[str, RepoFile]) -> list[CommitOperationAdd | CommitOperationDelete]:
        """What the ref still lacks: additions (the card last: it describes the rest), then stale files."""
        from huggingface_hub import CommitOperationDelete

        missing = sorted(self._missing(remote), key=lambda path: (path.rsplit("/", 1)[-1] == "README.md", path))
        stale = sorted(path for path in remote if path.startswith(self.stale_folders) and path not in self.local)
        self.deleted.update(stale)
        return [*self._additions(missing), *(CommitOperationDelete(path_in_repo=path) for path in stale)]

    def _commit_batches(self, ref: str, title: str, transfer: FileTransfer) -> str:
        from huggingface_hub import CommitOperationAdd

        head, remote = self._state(ref)
        plan = self._plan(remote)
        failures = 0
        while plan:
            batch = plan[: self.max_files]
            try:
                head = self.api.create_commit(
                    self.repo_id,
                    batch,
                    commit_message=f"{title}: {len(batch)} of {len(plan)} remaining changes",
                    repo_type=REPO_TYPE,
                    revision=ref,
                    parent_commit=head,
                ).oid
                _advance(
                    transfer, [op for op in batch if isinstance(op, CommitOperationAdd) and _travels_in_commit(op)]
                )
                plan = plan[self.max_files :]
                failures = 0
            except Exception as error:
                failures += 1
                if not _is_transient(error) or failures >= self.retry.attempts:
                    raise
                logger.warning("Commit to %s@%s failed (%s), re-planning", self.repo_id, ref, type(error).__name__)
                time.sleep(self.retry.wait_seconds * 2 ** (failures - 1))
                head, remote = self._state(ref)
                plan = self._plan(remote)
        return head

    def _merge(self, number: int) -> str:
        """Move `main` to the pull request's version in one step; a merge that landed on a failed
        response counts as done."""

        def merge() -> None:
            details = self.api.get_discussion_details(self.repo_id, number, repo_type=REPO_TYPE)
            if details.status == "merged":
                return
            if details.status == "draft":
                self.api.change_discussion_status(self.repo_id, number, "open", repo_type=REPO_TYPE)
            self.api.merge_pull_request(self.repo_id, number, repo_type=REPO_TYPE)

        self._call(merge)
        head = self._call(lambda: self.api.dataset_info(self.repo_id, revision=DEFAULT_REVISION)).sha
        assert head is not None, "the Hub names every revision's head commit"
        return head


def _pull_request_ref(number: int) -> str:
    return f"refs/pr/{number}"


def _batches(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
