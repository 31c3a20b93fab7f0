"""What the ways of publishing to the Hub share: the repo type, the result of a publish, the error
whose message is safe to log, and how an upload's progress counts a file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from trace_assets.runtime.progress import FileTransfer

if TYPE_CHECKING:
    from huggingface_hub import CommitOperationAdd, HfApi
    from huggingface_hub.errors import HfHubHTTPError
    from huggingface_hub.hf_api import RepoFile

REPO_TYPE = "dataset"


class HubPublishError(RuntimeError):
    """The Hub refused or failed a publish step; the message is safe to log (it never holds the token).
    `status`: the Hub's HTTP status, when it answered one (412: the branch moved while planning)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


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


def describe_hub_failure(error: HfHubHTTPError, repo_id: str, revision: str, token: str | None) -> str:
    status = error.response.status_code
    reason = error.server_message or error.response.reason_phrase or type(error).__name__
    message = f"Publishing to dataset {repo_id}@{revision} failed: HTTP {status}: {reason.strip()}"
    if status == 401:
        message += " (check that HF_TOKEN is set, valid, and allowed to write to this namespace)"
    if error.request_id:
        message += f" [request id {error.request_id}]"
    return message.replace(token, "***") if token else message


def travels_in_commit(addition: CommitOperationAdd) -> bool:
    """A regular (non-LFS) file: `preupload_lfs_files` leaves it, and its bytes go up in the commit.
    huggingface_hub keeps the server's choice only in `_upload_mode`; unknown counts as regular."""
    return getattr(addition, "_upload_mode", None) != "lfs"


def advance(transfer: FileTransfer, additions: list[CommitOperationAdd]) -> None:
    if additions:
        transfer.advance(len(additions), sum(addition.upload_info.size for addition in additions))


def listed_files(api: HfApi, repo_id: str, head: str, folder: str, *, recursive: bool) -> dict[str, RepoFile]:
    """The files in `folder` at `head` (below it too when `recursive`; "" is the repo's top) by path;
    {} for a folder the head lacks. A publish lists its scope's folder, never a whole sweep's repo."""
    from huggingface_hub.errors import EntryNotFoundError, RemoteEntryNotFoundError
    from huggingface_hub.hf_api import RepoFile

    try:
        tree = list(
            api.list_repo_tree(
                repo_id, path_in_repo=folder or None, recursive=recursive, repo_type=REPO_TYPE, revision=head
            )
        )
    except (EntryNotFoundError, RemoteEntryNotFoundError):
        return {}
    return {entry.path: entry for entry in tree if isinstance(entry, RepoFile)}
