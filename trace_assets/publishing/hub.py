"""Publish a run's output folder to a Hugging Face Hub dataset repo in a single commit.

Readers of a dataset must never see a mix of two runs' shards, so the new files and the deletion of
stale shards travel in one commit, and that commit is pinned to the head it was planned against
(`parent_commit`) so a concurrent writer makes it fail instead of interleaving.

The token is handed to `huggingface_hub` and nowhere else: it is never logged, and Hub errors are
re-raised as `HubPublishError` without the original exception attached, because that exception
keeps the request (and so the `Authorization` header) around.
"""

from __future__ import annotations

import json
import logging
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple
from urllib.parse import unquote

from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi, hf_hub_download
from huggingface_hub.errors import (
    EntryNotFoundError,
    HfHubHTTPError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

logger = logging.getLogger(__name__)

REPO_TYPE = "dataset"
DEFAULT_REVISION = "main"
SHARD_DIR = "data"
PUBLISH_ROOT_PREFIX = "hf://datasets/"

_REPO_ID_PART = re.compile(r"[A-Za-z0-9._-]{1,96}")
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


def validate_repo_id(repo_id: str) -> str:
    """Return `repo_id` unchanged if the Hub accepts it as `namespace/name`, else raise ValueError.

    Mirrors the Hub's naming rules so a bad id fails before any network call: each part uses
    `[A-Za-z0-9._-]`, is at most 96 characters, neither starts nor ends with `-` or `.`, and has no
    `--` or `..`.
    """
    namespace, slash, name = repo_id.partition("/")
    if not slash or "/" in name:
        raise ValueError(f"Hub repo id must be 'namespace/name', got {repo_id!r}")
    for part in (namespace, name):
        if (
            not _REPO_ID_PART.fullmatch(part)
            or part[0] in "-."
            or part[-1] in "-."
            or _REPEATED_SEPARATORS.search(part)
        ):
            raise ValueError(
                f"Invalid Hub repo id {repo_id!r}: {part!r} must be 1-96 characters of [A-Za-z0-9._-],"
                " must not start or end with '-' or '.', and must not contain '--' or '..'"
            )
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
    return validate_repo_id(repo_id)


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
    repo_id = validate_repo_id(f"{namespace}/{name}")
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
) -> PublishedCommit:
    """Upload every file of `local_dir` to a dataset repo and drop stale shards, all in one commit.

    Stale shards are the files under `<path_in_repo>/data/` on the Hub that the new run does not
    have; nothing outside that folder is deleted, so runs published under different prefixes of
    one repo stay independent. The repo is created (private unless `private=False`) and a
    non-`main` branch is created from `main` when missing. Publishing into an existing public repo
    requires `private=False`, so traces are never made public by accident. If another commit lands
    on the branch while this one is being prepared, the Hub rejects it (HTTP 412) and nothing
    changes; publishing again plans against the new head.

    `token=None` lets `huggingface_hub` find a token itself (HF_TOKEN, then the login cache);
    `endpoint=None` means `HF_ENDPOINT`, else https://huggingface.co.
    """
    validate_repo_id(repo_id)
    prefix = normalize_path_in_repo(path_in_repo)
    uploads = {_join(prefix, relative): source for relative, source in _files_to_publish(Path(local_dir)).items()}
    shard_folder = _join(prefix, SHARD_DIR) + "/"
    if not any(path.startswith(shard_folder) for path in uploads):
        raise ValueError(
            f"{local_dir} has no files under {SHARD_DIR}/; refusing to publish since it would delete every shard"
            f" under {shard_folder} in {repo_id}"
        )

    api = HfApi(endpoint=endpoint, token=token)
    try:
        return _publish(api, uploads, repo_id, revision, private, shard_folder, commit_message)
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
    shard_folder: str,
    commit_message: str,
) -> PublishedCommit:
    head = _prepare_revision(api, repo_id, revision, private)
    remote_files = api.list_repo_files(repo_id, repo_type=REPO_TYPE, revision=head or revision)
    stale_shards = sorted(path for path in remote_files if path.startswith(shard_folder) and path not in uploads)
    logger.info(
        "Publishing %d files to dataset %s@%s, deleting %d stale shards",
        len(uploads),
        repo_id,
        revision,
        len(stale_shards),
    )
    operations: list[CommitOperationAdd | CommitOperationDelete] = [
        CommitOperationAdd(path_in_repo=path, path_or_fileobj=source) for path, source in sorted(uploads.items())
    ]
    operations += [CommitOperationDelete(path_in_repo=path, is_folder=False) for path in stale_shards]
    commit = api.create_commit(
        repo_id,
        operations,
        commit_message=commit_message,
        repo_type=REPO_TYPE,
        revision=revision,
        parent_commit=head,
    )
    logger.info("Published dataset %s@%s at commit %s", repo_id, revision, commit.oid)
    return PublishedCommit(
        repo_id=repo_id,
        revision=revision,
        commit_oid=commit.oid,
        commit_url=commit.commit_url,
        files_added=tuple(sorted(uploads)),
        files_deleted=tuple(stale_shards),
    )


def read_published_json(
    repo_id: str, path_in_repo: str, *, revision: str, token: str | None, endpoint: str | None
) -> Any:
    """A JSON file of a published dataset, or None when the repo, branch or file does not exist."""
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
    api = HfApi(endpoint=endpoint, token=token)
    try:
        api.whoami()
        if api.repo_exists(repo_id, repo_type=REPO_TYPE):
            api.dataset_info(repo_id)
    except HfHubHTTPError as error:
        failure = _describe_hub_failure(error, repo_id, DEFAULT_REVISION, token).replace("Publishing to", "Reaching")
    else:
        return
    raise HubPublishError(failure)


def _prepare_revision(api: HfApi, repo_id: str, revision: str, private: bool) -> str | None:
    """Make sure repo and branch exist; return the head commit the publish is planned against."""
    api.create_repo(repo_id, repo_type=REPO_TYPE, private=private, exist_ok=True)
    if revision != DEFAULT_REVISION:
        api.create_branch(repo_id, repo_type=REPO_TYPE, branch=revision, exist_ok=True)
    info = api.dataset_info(repo_id, revision=revision)
    if private and not info.private:
        raise HubPublishError(
            f"Dataset repo {repo_id} already exists and is public; pass private=False to publish to it anyway"
        )
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
