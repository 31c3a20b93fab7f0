"""The Hub's names: repo ids (validated before any network call, a run id made usable in one),
`hf://datasets/<org>/<name>[@revision][/path]` publish roots, and paths inside a repo."""

from __future__ import annotations

import re
from typing import NamedTuple
from urllib.parse import unquote

DEFAULT_REVISION = "main"
PUBLISH_ROOT_PREFIX = "hf://datasets/"

_CHARS_NOT_ALLOWED_IN_REPO_NAMES = re.compile(r"[^A-Za-z0-9._-]+")
_REPEATED_SEPARATORS = re.compile(r"-{2,}|\.{2,}")


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
