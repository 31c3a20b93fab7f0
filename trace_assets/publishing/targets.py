"""`PublishTarget`: where a scope's dataset folder goes, chosen once from configuration.

A folder target (a local disk, or any fsspec store such as s3://) replaces `<root>/<scope>/` as a
whole: on a local disk by renaming (readers see the old folder or the new one, never a mix); on
object storage by uploading the new files, then deleting the stale ones. A Hub target makes one
commit per scope (see `publishing.hub`).
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import fsspec
from fsspec.implementations.local import LocalFileSystem

from trace_assets.publishing.dataset_folder import SCAN_REPORT_FILE
from trace_assets.publishing.hub import (
    PUBLISH_ROOT_PREFIX,
    parse_publish_root,
    publish_run_folder,
    render_repo_id,
    sanitize_repo_name_part,
)
from trace_assets.publishing.shards import DATA_DIR
from trace_assets.scope import RunScope


class PublishTarget(Protocol):
    def location(self, scope: RunScope) -> str:
        """Where the scope's dataset is (or would be) published, for messages and metadata."""
        ...

    def publish(self, local_dir: Path, scope: RunScope) -> str:
        """Replace the scope's published dataset with `local_dir`'s files; returns where it went."""
        ...

    def publish_blocked(self, scan_report: Path, scope: RunScope) -> None:
        """A blocked scope's published folder holds the scan report and nothing else."""
        ...


@dataclass(frozen=True)
class FolderTarget:
    root_url: str
    storage_options: dict[str, Any] = field(default_factory=dict)

    def location(self, scope: RunScope) -> str:
        return scope.publish_url(self.root_url)

    def publish(self, local_dir: Path, scope: RunScope) -> str:
        target = self.location(scope)
        replace_folder(local_dir, target, self.storage_options)
        return target

    def publish_blocked(self, scan_report: Path, scope: RunScope) -> None:
        with tempfile.TemporaryDirectory() as folder:
            shutil.copyfile(scan_report, Path(folder) / SCAN_REPORT_FILE)
            replace_folder(Path(folder), self.location(scope), self.storage_options)


@dataclass(frozen=True)
class HubSettings:
    """How to reach the Hub; the token goes to huggingface_hub and nowhere else."""

    token: str | None = field(default=None, repr=False)
    endpoint: str | None = None
    repo_id_template: str = ""  # one repo per scope, e.g. "{org}/traces-{run_id}"
    org: str = ""
    private: bool = True
    revision: str = "main"


@dataclass(frozen=True)
class HubTarget:
    """A Hub dataset repo per scope (from a name template), or one repo holding scopes as folders."""

    settings: HubSettings
    shared_repo: str = ""  # set for `hf://datasets/<org>/<name>` publish roots
    shared_revision: str = "main"
    shared_path: str = ""

    def _place(self, scope: RunScope) -> tuple[str, str, str]:
        """(repo id, revision, path in repo) for the scope."""
        if self.settings.repo_id_template:
            repo_id = render_repo_id(self.settings.repo_id_template, scope.key, org=self.settings.org)
            return repo_id, self.settings.revision, ""
        path = "/".join(part for part in (self.shared_path, sanitize_repo_name_part(scope.key)) if part)
        return self.shared_repo, self.shared_revision, path

    def location(self, scope: RunScope) -> str:
        repo_id, revision, path = self._place(scope)
        return f"{PUBLISH_ROOT_PREFIX}{repo_id}@{revision}" + (f"/{path}" if path else "")

    def publish(self, local_dir: Path, scope: RunScope) -> str:
        repo_id, revision, path = self._place(scope)
        return publish_run_folder(
            local_dir,
            repo_id,
            token=self.settings.token,
            revision=revision,
            private=self.settings.private,
            path_in_repo=path,
            commit_message=f"Publish traces of run {scope.key}",
            endpoint=self.settings.endpoint,
        ).commit_url

    def publish_blocked(self, scan_report: Path, scope: RunScope) -> None:
        """Nothing is committed for a blocked scope: its report stays in the staging folder."""


def choose_target(publish_root: str, storage_options: dict[str, Any], hub: HubSettings) -> PublishTarget:
    """A Hub target when a repo template is set or the root is `hf://datasets/...`, else a folder."""
    if hub.repo_id_template:
        return HubTarget(hub)
    if publish_root.startswith(PUBLISH_ROOT_PREFIX):
        root = parse_publish_root(publish_root)
        return HubTarget(hub, root.repo_id, root.revision, root.path_in_repo)
    return FolderTarget(publish_root, storage_options)


def replace_folder(local_dir: Path, target_url: str, storage_options: dict[str, Any] | None = None) -> None:
    """Make `target_url` hold exactly the files of `local_dir`."""
    fs, target = fsspec.core.url_to_fs(target_url, **dict(storage_options or {}))
    target = target.rstrip("/")
    if isinstance(fs, LocalFileSystem):
        _swap_local(local_dir, Path(target))
        return
    new_files = {p.relative_to(local_dir).as_posix() for p in local_dir.rglob("*") if p.is_file()}
    old_files = set()
    if fs.exists(target):
        old_files = {path[len(target) + 1 :] for path in fs.find(target)}
    # Data shards go last so a reader that sees the new card also finds its shards.
    for name in sorted(new_files, key=lambda n: (n.startswith(DATA_DIR + "/"), n)):
        fs.put_file(str(local_dir / name), f"{target}/{name}")
    stale = sorted(old_files - new_files)
    if stale:
        fs.rm([f"{target}/{name}" for name in stale])


def _swap_local(local_dir: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    incoming = target.with_name(f".{target.name}.incoming-{uuid.uuid4().hex[:8]}")
    shutil.copytree(local_dir, incoming)
    retired = target.with_name(f".{target.name}.retired-{uuid.uuid4().hex[:8]}")
    if target.exists():
        target.rename(retired)
    incoming.rename(target)
    if retired.exists():
        shutil.rmtree(retired)
