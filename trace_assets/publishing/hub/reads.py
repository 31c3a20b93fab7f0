"""Calls that only read the Hub: the token and repo checked before any work, a file of the
published version read back (its coverage and versions, for the shrink guard and the card), and
the local cache of a repo's small files by blob id."""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

from trace_assets.publishing.hub.base import REPO_TYPE, HubPublishError, describe_hub_failure
from trace_assets.publishing.hub.naming import DEFAULT_REVISION
from trace_assets.runtime.atomic_files import replaced_atomically


def read_published_file(
    repo_id: str, path_in_repo: str, *, revision: str, token: str | None, endpoint: str | None
) -> bytes | None:
    """A file of a published dataset, or None when the repo, branch or file does not exist."""
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
            return Path(path).read_bytes()
    except (RepositoryNotFoundError, RevisionNotFoundError, EntryNotFoundError, RemoteEntryNotFoundError):
        return None
    except HfHubHTTPError as error:
        failure = describe_hub_failure(error, repo_id, revision, token)
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
        failure = describe_hub_failure(error, repo_id, DEFAULT_REVISION, token).replace("Publishing to", "Reaching")
    else:
        return
    raise HubPublishError(failure)


_BLOB_ID = re.compile(r"[0-9a-f]{40}")  # a sha1 hex digest, as git and the Hub's `oid` write it


def git_blob_id(data: bytes) -> str:
    """The id git (and the Hub's tree listing, as `oid`) gives a file of these bytes."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


class BlobCache:
    """A repo's small (non-LFS) files kept on local disk by their git blob id. The id names the
    content, so a file read at one head is the same at every head listing that id: the root card's
    merge, which reads every other scope's card and JSON files on each publish to a repo per sweep,
    downloads only those that changed since this host last read them. Each file is checked against
    its id when kept and when read (a torn or altered copy is read from the Hub again); a folder
    that cannot be written only means no caching."""

    def __init__(self, folder: Path):
        self.folder = folder

    @classmethod
    def default(cls) -> BlobCache:
        """Under the user's cache folder (`XDG_CACHE_HOME`, else ~/.cache), read when called."""
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return cls(Path(base) / "trace_assets" / "hub-blobs")

    def _path(self, blob_id: str) -> Path:
        return self.folder / blob_id[:2] / blob_id

    def get(self, blob_id: str) -> bytes | None:
        if not _BLOB_ID.fullmatch(blob_id):  # the listing's id names a path only when it is a git id
            return None
        try:
            data = self._path(blob_id).read_bytes()
        except OSError:  # missing or unreadable
            return None
        return data if git_blob_id(data) == blob_id else None

    def put(self, blob_id: str, data: bytes) -> None:
        if git_blob_id(data) != blob_id:  # so it is a git id too
            return  # not the file the listing named: not kept
        try:
            with replaced_atomically(self._path(blob_id)) as temp:
                temp.write_bytes(data)
        except OSError:
            return
