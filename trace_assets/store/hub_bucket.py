"""A traces root on a Hub Storage Bucket: `hf://buckets/<namespace>/<bucket>[/<prefix>]`.

Read through huggingface_hub's public client, never Xet: listings are `HfApi.list_bucket_tree`
(pages of the bucket's tree API behind `Link` headers), reads are GETs of the bucket's resolve URL,
with a `Range` when only part of a file is wanted, through `http_backoff` (the client's own retry
policy: 429 after its `Retry-After`, 408/5xx, timeouts and dropped connections, five retries). The
token is the client's: `HF_TOKEN`, else the file `hf auth login` writes; the endpoint is
`HF_ENDPOINT`'s, else huggingface.co.

A listing gives each file's size, Xet hash (its change token, as an ETag is on S3) and upload time.
The tree API matches a prefix as a string ("run-1" also lists "run-10/..."), so entries are kept
only below the folder asked for.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import quote

from huggingface_hub import BucketFile, BucketFolder, HfApi, constants
from huggingface_hub.errors import BucketNotFoundError, HfHubHTTPError, RemoteEntryNotFoundError
from huggingface_hub.utils import build_hf_headers, get_token, hf_raise_for_status, http_backoff

from trace_assets.store.bucket_url import BucketRoot

TOKEN_HELP = "set HF_TOKEN, or run `hf auth login`"


def _url_path(path: str) -> str:
    """A file's path in its resolve URL, exactly: each part quoted, and a `.` or `..` part (a hostile
    name a listing can hold) percent-encoded, so no client or proxy resolves it to another file."""
    return "/".join(
        quote(part, safe="") if part not in (".", "..") else part.replace(".", "%2E") for part in path.split("/")
    )


class BucketNotReadable(RuntimeError):
    """The bucket was not found: it does not exist, or it is private and the token (if any) cannot
    read it. Not a FileNotFoundError: a missing folder in a bucket that is there is that."""


def not_found_message(bucket_id: str) -> str:
    """Why a bucket is not found, told apart by whether a token is set at all."""
    if get_token() is None:
        return (
            f"the bucket {bucket_id!r} was not found: it does not exist, or it is private and no Hub token "
            f"is set ({TOKEN_HELP})"
        )
    return f"the bucket {bucket_id!r} does not exist, or the Hub token (HF_TOKEN, or `hf auth login`'s) cannot read it"


def _when(entry: BucketFile) -> datetime | None:
    """When the file last changed in the bucket: its upload time (as S3's LastModified), else the
    modification time the uploader gave."""
    return entry.uploaded_at or entry.mtime


@dataclass(frozen=True)
class ListedFile:
    """One file of a bucket listing, its path relative to the folder listed."""

    key: str
    size: int
    xet_hash: str
    modified: datetime | None


class BucketReader:
    """Reads one bucket: listings below a folder, whole files and ranges of them."""

    def __init__(self, bucket_id: str):
        self.bucket_id = bucket_id
        self.api = HfApi()  # HF_ENDPOINT's Hub, and the client's token
        self.endpoint = self.api.endpoint
        # the client's headers (user agent, token) for the resolve GETs `HfApi` has no method for
        self._headers = build_hf_headers()

    def problem(self, root: BucketRoot) -> str | None:
        """Why the bucket cannot be read at all (it does not exist, or is private and no token is
        set), in one request; None when it can be."""
        try:
            self.api.bucket_info(self.bucket_id)
        except BucketNotFoundError:
            return f"traces root {root.url}: {not_found_message(self.bucket_id)}"
        return None

    def listing(self, folder: str, recursive: bool) -> Iterator[BucketFile | BucketFolder]:
        """Entries below `folder` ("" for the bucket's root), paths relative to the bucket, in the
        order the tree API gives them; recursive: files only, at any depth."""
        prefix = f"{folder}/" if folder else ""
        try:
            for entry in self.api.list_bucket_tree(self.bucket_id, folder or None, recursive=recursive):
                if entry.path.startswith(prefix) and entry.path != prefix:
                    yield entry
        except BucketNotFoundError as error:
            raise BucketNotReadable(not_found_message(self.bucket_id)) from error

    def files(self, folder: str) -> Iterator[ListedFile]:
        """Every file below `folder` at any depth, from one recursive listing, keys relative to it."""
        cut = len(folder) + 1 if folder else 0
        for entry in self.listing(folder, recursive=True):
            if isinstance(entry, BucketFile):
                yield ListedFile(entry.path[cut:], int(entry.size), entry.xet_hash, _when(entry))

    def folders(self, folder: str) -> list[str]:
        """Names of the folders right under `folder`, from one listing of that level."""
        cut = len(folder) + 1 if folder else 0
        return sorted(
            entry.path[cut:].rstrip("/")
            for entry in self.listing(folder, recursive=False)
            if isinstance(entry, BucketFolder)
        )

    def read(self, path: str, start: int = 0, end: int | None = None) -> bytes:
        """The file's bytes, or those from `start` up to `end` (exclusive; fewer at its end, none past it).

        Raises what s3fs raises for one object: FileNotFoundError when the file is not there,
        PermissionError when it is refused; anything else (the bucket gone, a failure that outlasts
        the client's retries) as the client raises it. A response cut short of its Content-Length
        is a dropped connection, which the client retries, so what comes back is whole."""
        headers = dict(self._headers)
        ranged = start > 0 or end is not None
        if ranged:
            headers["Range"] = f"bytes={start}-" + ("" if end is None else str(end - 1))
        url = f"{self.endpoint}/buckets/{self.bucket_id}/resolve/{_url_path(path)}"
        response = http_backoff("GET", url, headers=headers, timeout=constants.HF_HUB_DOWNLOAD_TIMEOUT)
        try:
            hf_raise_for_status(response)
        except RemoteEntryNotFoundError as error:
            raise FileNotFoundError(errno.ENOENT, f"not in the bucket {self.bucket_id!r}", path) from error
        except HfHubHTTPError as error:
            if response.status_code == 403:
                raise PermissionError(errno.EACCES, str(error), path) from error
            if ranged and response.status_code == 416:  # `start` is at or past the end
                return b""
            raise
        data = response.content
        if ranged and response.status_code == 200:  # a server that ignored the Range sent all of it
            data = data[start:end]
        return data
