"""Publishing to a Hugging Face Hub dataset repo, split along its seams:

- `naming`: repo ids (a scope's from the repo id template), `hf://datasets/...` publish roots and
  paths in a repo (no network);
- `commit`: a version in one commit pinned to the head it was planned against;
- `batched`: a version too large for one commit, in batches on a pull request merged in one step;
- `reads`: the token and repo checked before any work, a published file read back;
- `base`: what they share (the repo type, the result, the error and its safe message).

The token is handed to `huggingface_hub` and nowhere else: it is never logged, and Hub errors are
re-raised as `HubPublishError` without the original exception attached, because that exception
keeps the request (and so the `Authorization` header) around. `huggingface_hub` is imported where
it is used, so runs that publish to a folder (and the pipeline's start-up) never load it.

The names the rest of the project uses are re-exported here.
"""

from trace_assets.publishing.hub.base import HubPublishError, PublishedCommit
from trace_assets.publishing.hub.batched import RetryPolicy
from trace_assets.publishing.hub.commit import HeadFiles, SharedFiles, commit_file, publish_run_folder
from trace_assets.publishing.hub.naming import (
    DEFAULT_REVISION,
    PLACEHOLDERS,
    PUBLISH_ROOT_PREFIX,
    PublishRoot,
    RepoIdTemplateError,
    check_repo_id_template,
    normalize_path_in_repo,
    parse_publish_root,
    render_repo_id,
    sanitize_repo_name_part,
    validate_repo_id,
)
from trace_assets.publishing.hub.reads import check_hub_access, read_published_file

__all__ = [
    "DEFAULT_REVISION",
    "PUBLISH_ROOT_PREFIX",
    "PLACEHOLDERS",
    "HeadFiles",
    "HubPublishError",
    "PublishRoot",
    "PublishedCommit",
    "RepoIdTemplateError",
    "RetryPolicy",
    "SharedFiles",
    "check_hub_access",
    "check_repo_id_template",
    "commit_file",
    "normalize_path_in_repo",
    "parse_publish_root",
    "publish_run_folder",
    "read_published_file",
    "render_repo_id",
    "sanitize_repo_name_part",
    "validate_repo_id",
]
