"""Publish a run's output folder to a Hugging Face Hub dataset repo in a single commit.

Readers of a dataset must never see a mix of two runs' shards, so the new files and the deletion of
stale shards travel in one commit, and that commit is pinned to the head it was planned against
(`parent_commit`) so a concurrent writer makes it fail instead of interleaving. A version of more
file changes than one commit should carry goes to `batched` instead.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, NamedTuple

from trace_assets.publishing.hub.base import (
    REPO_TYPE,
    HubPublishError,
    PublishedCommit,
    advance,
    describe_hub_failure,
    listed_files,
    travels_in_commit,
)
from trace_assets.publishing.hub.batched import BatchedPublish, RetryPolicy
from trace_assets.publishing.hub.naming import DEFAULT_REVISION, normalize_path_in_repo, validate_repo_id
from trace_assets.publishing.hub.reads import BlobCache
from trace_assets.runtime.progress import FileTransfer, Progress, quiet, terminal

if TYPE_CHECKING:
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi

logger = logging.getLogger(__name__)

SHARD_DIR = "data"
SESSIONS_DIR = "sessions"  # session files; like shards, the files a new version may drop
# The Hub's guidance for commits over HTTP: larger ones can time out while still completing.
MAX_FILES_PER_COMMIT = 100
# Contents go up before the commit in groups this small, so progress moves during a long upload.
UPLOAD_GROUP_FILES = 32
UPLOAD_GROUP_BYTES = 64 * 2**20


class HeadFiles(NamedTuple):
    """The repo at the head a commit is planned against, for shared files written from the others:
    every file's path (`all_paths()`: one tree listing of the whole repo, made only when called), and
    a reader of many files at once (those missing left out)."""

    all_paths: Callable[[], list[str]]
    read: Callable[[list[str]], dict[str, bytes]]


class SharedFiles(NamedTuple):
    """Files many publishes to one repo each change a part of (the root card and its index): their
    paths, all in one folder, and the merge of one publish's part into their texts at the head (None
    for one not there), which may read the head's other files; it returns every file's new text."""

    paths: tuple[str, ...]
    merge: Callable[[dict[str, str | None], HeadFiles], dict[str, str]]


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
    shared_files: SharedFiles | None = None,
    whole_folder: bool = False,
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

    `shared_files` (the root card of a repo holding many scopes, and its index) are read at the head
    the commit is planned against and their merge goes into the same commit, so the Hub's parent-commit
    check keeps a concurrent publish of another scope from losing either's change. Only the folder
    `path_in_repo` (recursively) and the shared files' folder are listed, not the whole repo.

    `whole_folder` (a scope the secret scan blocked, whose folder keeps its scan report and history only): every
    file under `path_in_repo` that `local_dir` lacks is deleted, not only stale shards; it needs a
    `path_in_repo`, and `local_dir` needs no shards.

    `token=None` lets `huggingface_hub` find a token itself (HF_TOKEN, then the login cache);
    `endpoint=None` means `HF_ENDPOINT`, else https://huggingface.co. `progress` gets the upload's
    bytes and files done/total, rate and ETA.
    """
    validate_repo_id(repo_id)
    prefix = normalize_path_in_repo(path_in_repo)
    uploads = {_join(prefix, relative): source for relative, source in _files_to_publish(Path(local_dir)).items()}
    shard_folder = _join(prefix, SHARD_DIR) + "/"
    stale_folders: tuple[str, ...] = (shard_folder, _join(prefix, SESSIONS_DIR) + "/")
    if whole_folder:
        if not prefix:
            raise ValueError(f"refusing to replace the whole of {repo_id}: whole_folder needs a path in the repo")
        stale_folders = (prefix + "/",)
    elif not any(path.startswith(shard_folder) for path in uploads):
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
                repo_id=repo_id,
                revision=revision,
                private=private,
                stale_folders=stale_folders,
                commit_message=commit_message,
                max_files_per_commit=max_files_per_commit,
                retry=retry,
                prefix=prefix,
                shared=(shared_files, Path(scratch)) if shared_files else None,
                progress=progress,
            )
    except HfHubHTTPError as error:
        failure, status = describe_hub_failure(error, repo_id, revision, token), error.response.status_code
    # Raised outside the except block so the Hub error, whose request still carries the
    # Authorization header, is not chained onto ours.
    raise HubPublishError(failure, status)


def commit_file(
    repo_id: str,
    path_in_repo: str,
    data: bytes,
    *,
    token: str | None,
    revision: str = DEFAULT_REVISION,
    commit_message: str,
    endpoint: str | None = None,
) -> str:
    """One small file added or replaced in one commit, nothing else touched (a published version's
    history, say); the commit's URL. A Hub error is `HubPublishError`, as `publish_run_folder`'s."""
    validate_repo_id(repo_id)
    from huggingface_hub import CommitOperationAdd, HfApi
    from huggingface_hub.errors import HfHubHTTPError

    api = HfApi(endpoint=endpoint, token=token)
    try:
        operation = CommitOperationAdd(path_in_repo=path_in_repo, path_or_fileobj=data)
        commit = api.create_commit(
            repo_id, [operation], commit_message=commit_message, repo_type=REPO_TYPE, revision=revision
        )
        return str(commit.commit_url)
    except HfHubHTTPError as error:
        failure, status = describe_hub_failure(error, repo_id, revision, token), error.response.status_code
    raise HubPublishError(failure, status)  # outside the except block: see publish_run_folder


def _publish(
    api: HfApi,
    uploads: dict[str, Path],
    *,
    repo_id: str,
    revision: str,
    private: bool,
    stale_folders: tuple[str, ...],
    commit_message: str,
    max_files_per_commit: int,
    retry: RetryPolicy | None,
    prefix: str,
    shared: tuple[SharedFiles, Path] | None,
    progress: Progress,
) -> PublishedCommit:
    """`publish_folder`'s work once its arguments are checked: `uploads` maps each path in the
    repo to its local file; `shared` is the shared file with a scratch folder for its merge."""
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    head = _prepare_revision(api, repo_id, revision, private)
    blob_ids = _listed(api, repo_id, head, prefix, recursive=True)  # the scope's own folder
    remote_files = list(blob_ids)
    folders: tuple[tuple[str, bool], ...] = ((prefix, True),)  # what a batched publish lists of the ref
    if shared:
        shared_files, scratch = shared
        folder = shared_files.paths[0].rpartition("/")[0]
        folders += ((folder, False),)
        ids = {**_listed(api, repo_id, head, folder, recursive=False), **blob_ids}
        read = partial(_read_at, api, repo_id, head, scratch, ids, BlobCache.default())

        def all_paths() -> list[str]:  # the whole repo: read once, to build a missing index
            ids.update(_listed(api, repo_id, head, "", recursive=True))
            return list(ids)

        found = read(list(shared_files.paths))
        existing = {path: found[path].decode() if path in found else None for path in shared_files.paths}
        for number, (path, text) in enumerate(shared_files.merge(existing, HeadFiles(all_paths, read)).items()):
            merged = scratch / f"shared-file-{number}"
            merged.write_text(text)
            uploads = {**uploads, path: merged}
    stale_shards = sorted(path for path in remote_files if path.startswith(stale_folders) and path not in uploads)
    if len(uploads) + len(stale_shards) > max_files_per_commit:
        batches = BatchedPublish(
            api,
            repo_id,
            uploads,
            stale_folders,
            folders,
            max_files=max_files_per_commit,
            retry=retry or RetryPolicy(),
            progress=progress,
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
        advance(transfer, [addition for addition in group if not travels_in_commit(addition)])
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


READ_WORKERS = 8  # files of the head read at once for a shared file's merge


def _listed(api: HfApi, repo_id: str, head: str, folder: str, *, recursive: bool) -> dict[str, str]:
    """`listed_files`, each with its blob id ("" for an LFS file)."""
    files = listed_files(api, repo_id, head, folder, recursive=recursive)
    return {path: entry.blob_id if entry.lfs is None else "" for path, entry in files.items()}


def _read_at(
    api: HfApi,
    repo_id: str,
    head: str,
    scratch: Path,
    blob_ids: dict[str, str],
    cache: BlobCache,
    paths: list[str],
) -> dict[str, bytes]:
    """The files of `paths` the head holds (`blob_ids`: each one's blob id, "" for an LFS file),
    from `cache` when kept there, else downloaded `READ_WORKERS` at a time and kept."""
    wanted = [path for path in dict.fromkeys(paths) if path in blob_ids]

    def one(path: str) -> bytes:
        blob_id = blob_ids[path]
        kept = cache.get(blob_id) if blob_id else None
        if kept is not None:
            return kept
        local = api.hf_hub_download(repo_id, path, repo_type=REPO_TYPE, revision=head, cache_dir=scratch)
        data = Path(local).read_bytes()
        if blob_id:
            cache.put(blob_id, data)
        return data

    with ThreadPoolExecutor(READ_WORKERS) as pool:
        return dict(zip(wanted, pool.map(one, wanted)))


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
