"""Calls that only read the Hub: the token and repo checked before any work, and a file of the
published version read back (its coverage and versions, for the shrink guard and the card)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from trace_assets.publishing.hub.base import REPO_TYPE, HubPublishError, describe_hub_failure
from trace_assets.publishing.hub.naming import DEFAULT_REVISION


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
