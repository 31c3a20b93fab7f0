"""A version with more file changes than one commit should carry: batches on a pull request,
merged in one step (see `BatchedPublish`), each Hub call retried on transient failures."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from trace_assets.publishing.hub.base import (
    REPO_TYPE,
    HubPublishError,
    PublishedCommit,
    advance,
    listed_files,
    travels_in_commit,
)
from trace_assets.publishing.hub.naming import DEFAULT_REVISION
from trace_assets.runtime.progress import FileTransfer, Progress, quiet, terminal

if TYPE_CHECKING:
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi
    from huggingface_hub.hf_api import RepoFile

logger = logging.getLogger(__name__)
_T = TypeVar("_T")


@dataclass(frozen=True)
class RetryPolicy:
    """How often one Hub call or batch is tried after transient failures, and the first wait (doubled each time)."""

    attempts: int = 6
    wait_seconds: float = 2.0

    def call(self, call: Callable[[], _T], retrying: Callable[[Exception], None]) -> _T:
        """`call()`, tried again after each transient failure, `attempts` times at most; `retrying`
        is told of each failure that is tried again, before the wait."""
        for attempt in range(self.attempts):
            try:
                return call()
            except Exception as error:
                if not _is_transient(error) or attempt == self.attempts - 1:
                    raise
                retrying(error)
                time.sleep(self.wait_seconds * 2**attempt)
        raise AssertionError("unreachable: the last attempt returns or raises")


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


class BatchedPublish:
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
        folders: tuple[tuple[str, bool], ...],
        *,
        max_files: int,
        retry: RetryPolicy,
        progress: Progress = quiet,
    ) -> None:
        self.api = api
        self.progress = progress
        self.repo_id = repo_id
        self.local = {path: _LocalFile.read(source) for path, source in uploads.items()}
        self.stale_folders = stale_folders
        self.folders = folders  # (folder, recursive): where the uploads and stale files are, listed at a ref
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
        return self.retry.call(
            call, lambda error: logger.warning("Hub call failed (%s), trying again", type(error).__name__)
        )

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
        """The ref's head and every file in `folders` (not the whole repo: a sweep's other scopes)."""
        head = self._call(lambda: self.api.dataset_info(self.repo_id, revision=ref)).sha
        assert head is not None, "the Hub names every revision's head commit"
        files: dict[str, RepoFile] = {}
        for folder, recursive in self.folders:
            files.update(self._call(partial(listed_files, self.api, self.repo_id, head, folder, recursive=recursive)))
        return head, files

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
            advance(transfer, [addition for addition in additions if not travels_in_commit(addition)])
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
        replan = False

        def commit_next() -> None:
            """The plan's next batch; after a failed commit, planned again first from what the ref
            holds (the commit may have landed after all)."""
            nonlocal head, plan, replan
            if replan:
                head, remote = self._state(ref)
                plan, replan = self._plan(remote), False
            if not plan:
                return
            batch = plan[: self.max_files]
            head = self.api.create_commit(
                self.repo_id,
                batch,
                commit_message=f"{title}: {len(batch)} of {len(plan)} remaining changes",
                repo_type=REPO_TYPE,
                revision=ref,
                parent_commit=head,
            ).oid
            advance(transfer, [op for op in batch if isinstance(op, CommitOperationAdd) and travels_in_commit(op)])
            plan = plan[self.max_files :]

        def retrying(error: Exception) -> None:
            nonlocal replan
            logger.warning("Commit to %s@%s failed (%s), re-planning", self.repo_id, ref, type(error).__name__)
            replan = True

        while plan:
            self.retry.call(commit_next, retrying)
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
