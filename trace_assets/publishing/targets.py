"""`PublishTarget`: where a scope's dataset folder goes, chosen once from configuration.

A folder target (a local disk, or any fsspec store such as s3://) replaces `<root>/<scope>/` in
place, in an order that is safe at every point: the new version's shards go into a folder of their
own (`data/<version>/`, see `publishing.shards`), then the other files, then the card, which names
the shards, is flipped (one rename on a disk, one PUT on object storage), then the session files'
card (`sessions/README.md`, naming `sessions/<version>/`), and only then are the stale files
removed, a dropped sessions card before its files, the card last. On object storage the shards
go up `publish_concurrency` at a time, then the other files likewise, each phase whole before the
next; the cards one PUT each; the stale files in bulk deletes. Readers that load through the card see the old version or the new
one, whole, during a publish and after a kill at any point; the folder is never missing; what a
killed publish left is removed by the next. A Hub target makes one commit per scope (see
`publishing.hub`), to a repo per scope or a repo per sweep (`HubTarget`).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from glob import has_magic
from pathlib import Path
from typing import Any, Protocol

import fsspec
from fsspec.callbacks import Callback
from fsspec.implementations.local import LocalFileSystem

from trace_assets.core.defaults import DEFAULT_PUBLISH_CONCURRENCY
from trace_assets.core.scope import RunScope
from trace_assets.harbor.sessions import SESSIONS_DIR
from trace_assets.publishing.blocked_version import PreviousVersion
from trace_assets.publishing.card import CardSettings
from trace_assets.publishing.dataset_folder import CARD_FILE, COVERAGE_FILE, SCAN_REPORT_FILE, VERSIONS_FILE
from trace_assets.publishing.hub import (
    PUBLISH_ROOT_PREFIX,
    HeadFiles,
    HubPublishError,
    RepoIdTemplateError,
    SharedFiles,
    check_hub_access,
    commit_file,
    parse_publish_root,
    publish_run_folder,
    read_published_file,
    render_repo_id,
)
from trace_assets.publishing.root_card import (
    INDEX,
    ROOT_CARD,
    ROOT_PLOT,
    SCOPE_FILES,
    ScopeEntry,
    ScopeFiles,
    scope_keys,
    scopes_entries,
    update_folder_root_card,
    updated_root,
)
from trace_assets.publishing.sessions_card import SESSIONS_CARD
from trace_assets.publishing.shards import DATA_DIR
from trace_assets.publishing.versions import BLOCK, is_block, last_version, versions_json
from trace_assets.runtime.atomic_files import (
    TEMP_MARK,
    copy_atomically,
    files_below,
    fsync_parents,
    is_leftover,
    make_parents,
    remove_path,
    replaced_atomically,
    sync_tree,
    temp_sibling,
)
from trace_assets.runtime.machine_faults import short_path
from trace_assets.runtime.progress import FileTransfer, Progress, quiet, terminal

# Folders whose files are named by their content version (shards, session files): uploaded first,
# kept when already there, and their old versions removed only after the card names the new one.
VERSIONED_DIRS = (f"{DATA_DIR}/", f"{SESSIONS_DIR}/")
# Tries of a blocked scope's commit, which is outside the Hub commit pool and so may meet another's.
BLOCKED_COMMIT_ATTEMPTS = 5
# The cards, put last in this order, each once every file it names is there: the flips.
CARDS = (CARD_FILE, SESSIONS_CARD)


class PublishTarget(Protocol):
    def location(self, scope: RunScope) -> str:
        """Where the scope's dataset is (or would be) published, for messages and metadata."""
        ...

    def publish(self, local_dir: Path, scope: RunScope, progress: Progress = quiet) -> str:
        """Replace the scope's published dataset with `local_dir`'s files; returns where it went.
        `progress` gets the upload's lines: bytes and files done/total, rate, ETA."""
        ...

    def published_coverage(self, scope: RunScope) -> dict[str, Any] | None:
        """The published version's coverage.json, or None when nothing is published there."""
        ...

    def published_file(self, scope: RunScope, name: str) -> bytes | None:
        """A file of the published version (e.g. trials.parquet), or None when it has none."""
        ...

    def check_writable(self, scope: RunScope) -> None:
        """Before any work: raise OSError (or HubPublishError) if publishing the scope would fail for access."""
        ...

    def publish_blocked(self, scan_report: Path, scope: RunScope, versions: list[dict[str, Any]] | None = None) -> bool:
        """A blocked scope's published folder holds the scan report and, when it withdraws a version,
        that version's history with the block last (`versions.json`), nothing else; True when that
        removed its earlier version (the sweep view must not show it as published any more)."""
        ...

    def record_versions(self, scope: RunScope, versions: list[dict[str, Any]]) -> bool:
        """The published version's `versions.json` replaced alone, whole (a block that kept that
        version, recorded in its history); False where the target writes nothing for a block."""
        ...

    def publish_root_file(self, local_file: Path) -> str | None:
        """A file about every scope (the sweep view) beside their folders; where it went, or None if skipped."""
        ...


class Unread(Enum):
    """Why a failed piece of work has no published version read before it (`kept_after_fault`)."""

    # a step before the publish, or a publish step whose read before it failed: what is published
    # now was there before
    NOT_PUBLISHING = "not publishing"
    OUTSIDE_THE_STEPS = "outside the steps"  # the CLI's faults (instance, staging lock): a publish may have run


def published_json(target: PublishTarget, scope: RunScope, name: str) -> Any:
    """A JSON file of the published version (e.g. versions.json), or None when it has none."""
    data = target.published_file(scope, name)
    return None if data is None else json.loads(data)


def read_published_versions(target: PublishTarget, scope: RunScope) -> Any:
    """The scope's published `versions.json`, None when nothing is published there: one read (a
    request on the Hub or object storage). A failed read raises, so a publish step reading it first
    fails as its own read of the file would have."""
    return published_json(target, scope, VERSIONS_FILE)


def kept_after_fault(
    target: PublishTarget, scope: RunScope, before: str | None | Unread, log: Callable[[str], None]
) -> str:
    """What a machine fault left published for the scope, from one read now and the version read
    before the work (`before`), or why there is none. Never raises: when the read fails (the publish
    root may be what failed) it is empty, and `log` gets the error."""
    try:
        now = published_version(read_published_versions(target, scope))
    except Exception as error:
        log(f"could not read the published version after the fault: {error!r}")
        return ""
    if before is Unread.OUTSIDE_THE_STEPS:
        return published_now(target.location(scope), now)
    return published_state(target.location(scope), now if before is Unread.NOT_PUBLISHING else before, now)


_STILL_PUBLISHED = (PreviousVersion.KEPT, PreviousVersion.LEFT)  # a block after which the version stays


def published_version(versions_json: object) -> str | None:
    """The version a published `versions.json` names last (its shards' content version); None when
    a block withdrew it since (the folder holds its scan report and history alone)."""
    versions = versions_json.get("versions") if isinstance(versions_json, dict) else None
    if not isinstance(versions, list) or not versions:
        return None
    last = versions[-1]
    if isinstance(last, dict) and is_block(last) and last[BLOCK].get("previous_version") not in _STILL_PUBLISHED:
        return None
    entry = last_version(versions)
    version = entry.get("version") if entry is not None else None
    return str(version) if version else None


def published_state(location: str, before: str | None, now: str | None) -> str:
    """What a failed run left at `location`, from the version its card named before the run and now."""
    if now == before:
        return f"the published version {now} is unchanged" if now else f"nothing is published at {short_path(location)}"
    if now is None:
        return f"no version is published at {short_path(location)} now"
    return f"version {now} is published; the next publish removes what this one left"


def published_now(location: str, now: str | None) -> str:
    """What is published at `location` after a fault that may have struck before or after a publish
    (the CLI's, outside the steps): the version now, with no claim that it changed or not."""
    return (
        f"version {now} is published at {short_path(location)}"
        if now
        else f"nothing is published at {short_path(location)}"
    )


@dataclass(frozen=True)
class FolderTarget:
    root_url: str
    storage_options: dict[str, Any] = field(default_factory=dict)
    publish_concurrency: int = DEFAULT_PUBLISH_CONCURRENCY  # object-storage PUTs in flight
    card: CardSettings = field(default_factory=CardSettings)  # the root card's license, title, provenance

    def location(self, scope: RunScope) -> str:
        return scope.publish_url(self.root_url)

    def publish(self, local_dir: Path, scope: RunScope, progress: Progress = quiet) -> str:
        """The scope's folder, then, after its card is flipped and before its old shards go, the
        root card and its index (the sweep's card, see `publishing.root_card`)."""
        target = self.location(scope)
        this = ScopeFiles.of_folder(scope, local_dir)
        replace_folder(
            local_dir,
            target,
            self.storage_options,
            after_flip=lambda: update_folder_root_card(self.root_url, self.storage_options, this, self.card),
            progress=progress,
            concurrency=self.publish_concurrency,
        )
        return target

    def published_coverage(self, scope: RunScope) -> dict[str, Any] | None:
        return published_json(self, scope, COVERAGE_FILE)

    def published_file(self, scope: RunScope, name: str) -> bytes | None:
        fs, target = fsspec.core.url_to_fs(self.location(scope), **self.storage_options)
        try:
            with fs.open(f"{target.rstrip('/')}/{name}", "rb") as file:
                return bytes(file.read())
        except FileNotFoundError:
            return None

    def check_writable(self, scope: RunScope) -> None:
        fs, target = fsspec.core.url_to_fs(self.location(scope), **self.storage_options)
        if isinstance(fs, LocalFileSystem):
            existing = Path(target)
            while not existing.exists():
                existing = existing.parent
            if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
                raise PermissionError(f"publish root {self.root_url}: cannot write under {existing}")
            return
        probe = f"{target.rstrip('/')}/.write-probe{TEMP_MARK}{uuid.uuid4().hex[:8]}"  # inside the scope's folder
        fs.pipe_file(probe, b"")
        fs.rm_file(probe)

    def publish_blocked(self, scan_report: Path, scope: RunScope, versions: list[dict[str, Any]] | None = None) -> bool:
        with tempfile.TemporaryDirectory() as folder:
            _blocked_folder(Path(folder), scan_report, versions)
            this = ScopeFiles.of_folder(scope, Path(folder))
            replace_folder(
                Path(folder),
                self.location(scope),
                self.storage_options,
                after_flip=lambda: update_folder_root_card(self.root_url, self.storage_options, this, self.card),
                concurrency=self.publish_concurrency,
            )
        return True

    def record_versions(self, scope: RunScope, versions: list[dict[str, Any]]) -> bool:
        fs, folder = fsspec.core.url_to_fs(self.location(scope), **self.storage_options)
        path = f"{folder.rstrip('/')}/{VERSIONS_FILE}"
        if isinstance(fs, LocalFileSystem):
            with replaced_atomically(Path(path), durable=True) as temp:  # readers see the old history or the new
                temp.write_text(versions_json(versions))
        else:
            fs.pipe_file(path, versions_json(versions).encode())  # one PUT
        return True

    def publish_root_file(self, local_file: Path) -> str | None:
        fs, root = fsspec.core.url_to_fs(self.root_url, **self.storage_options)
        target = f"{root.rstrip('/')}/{local_file.name}"
        if isinstance(fs, LocalFileSystem):
            Path(root).mkdir(parents=True, exist_ok=True)
            copy_atomically(local_file, Path(target))  # a rename: readers see the old file or the new
        else:
            fs.put_file(str(local_file), target)  # one PUT
        return f"{self.root_url.rstrip('/')}/{local_file.name}"


@dataclass(frozen=True)
class HubSettings:
    """How to reach the Hub; the token goes to huggingface_hub and nowhere else."""

    token: str | None = field(default=None, repr=False)
    endpoint: str | None = None
    repo_id_template: str = ""  # one repo per scope, e.g. "{org}/traces-{run_id}" (see `hub.naming`)
    org: str = ""
    private: bool = True
    revision: str = "main"


def naming_fields(card: CardSettings) -> dict[str, str]:
    """The card's settings a repo id template's placeholders name (see `hub.naming.PLACEHOLDERS`)."""
    fields = ("model", "framework", "task_source", "license", "pretty_name")
    return {name: getattr(card, name) for name in fields}


@dataclass(frozen=True)
class HubTarget:
    """The Hub, in one of two layouts: a repo per scope, named from `repo_id_template` (its card the
    scope's own), or one repo per sweep (an `hf://datasets/<org>/<name>` root) holding scopes as
    folders, whose root card is the sweep's card (see `publishing.root_card`)."""

    settings: HubSettings
    shared_repo: str = ""  # set for `hf://datasets/<org>/<name>` publish roots
    shared_revision: str = "main"
    shared_path: str = ""
    card: CardSettings = field(default_factory=CardSettings)  # the root card's, and the template's fields

    def _place(self, scope: RunScope) -> tuple[str, str, str]:
        """(repo id, revision, path in repo) for the scope."""
        if self.settings.repo_id_template:
            repo_id = render_repo_id(
                self.settings.repo_id_template, scope.key, org=self.settings.org, fields=naming_fields(self.card)
            )
            return repo_id, self.settings.revision, ""
        return self.shared_repo, self.shared_revision, scope.hub_path(self.shared_path)

    def location(self, scope: RunScope) -> str:
        """The scope's `hf://` URL; the template itself for a scope it cannot name (for the message
        saying why, which publishing it raises)."""
        try:
            repo_id, revision, path = self._place(scope)
        except RepoIdTemplateError:
            return f"{PUBLISH_ROOT_PREFIX}{self.settings.repo_id_template}"
        return f"{PUBLISH_ROOT_PREFIX}{repo_id}@{revision}" + (f"/{path}" if path else "")

    def publish(self, local_dir: Path, scope: RunScope, progress: Progress = quiet) -> str:
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
            shared_files=None if self.settings.repo_id_template else self._root_card(local_dir, scope),
            progress=progress,
        ).commit_url

    def _root_card(self, local_dir: Path, scope: RunScope) -> SharedFiles:
        """The shared repo's root card and its index, written in the scope's own commit from the index
        at the head that commit is planned against, this scope's entry from `local_dir` (every scope
        folder at that head read only when there is no index)."""
        this = ScopeFiles.of_folder(scope, local_dir)
        prefix = self.shared_path
        card_path, index_path = _in_repo(prefix, ROOT_CARD), _in_repo(prefix, INDEX)

        def merge(existing: dict[str, str | None], head: HeadFiles) -> dict[str, str]:
            def every_scope() -> list[ScopeEntry]:
                scopes = [s for s in scope_keys(head.all_paths(), prefix) if s != scope]
                files = head.read([_in_repo(prefix, f"{s.key}/{name}") for s in scopes for name in SCOPE_FILES])
                return scopes_entries(scopes, lambda s, name: files.get(_in_repo(prefix, f"{s.key}/{name}")))

            index, card, plot = updated_root(existing[index_path], existing[card_path], this, self.card, every_scope)
            return {index_path: index, card_path: card, _in_repo(prefix, ROOT_PLOT): plot}

        return SharedFiles((index_path, card_path), merge)

    def published_coverage(self, scope: RunScope) -> dict[str, Any] | None:
        return published_json(self, scope, COVERAGE_FILE)

    def published_file(self, scope: RunScope, name: str) -> bytes | None:
        repo_id, revision, path = self._place(scope)
        return read_published_file(
            repo_id,
            "/".join(p for p in (path, name) if p),
            revision=revision,
            token=self.settings.token,
            endpoint=self.settings.endpoint,
        )

    def check_writable(self, scope: RunScope) -> None:
        repo_id, _, _ = self._place(scope)
        check_hub_access(repo_id, token=self.settings.token, endpoint=self.settings.endpoint)

    def publish_blocked(self, scan_report: Path, scope: RunScope, versions: list[dict[str, Any]] | None = None) -> bool:
        """In a repo per sweep, as in a folder: the scope's folder keeps its scan report (and the
        withdrawn version's history) and nothing else, and the root card lists it as blocked, in one
        commit. A repo per scope gets nothing: its report stays in the staging folder."""
        if self.settings.repo_id_template:
            return False
        repo_id, revision, path = self._place(scope)
        with tempfile.TemporaryDirectory() as folder:
            _blocked_folder(Path(folder), scan_report, versions)
            for attempt in range(BLOCKED_COMMIT_ATTEMPTS):
                try:
                    self._commit_blocked(Path(folder), scope, repo_id, revision, path)
                    break
                except HubPublishError as error:  # outside the Hub commit pool: another scope's commit
                    if error.status != 412 or attempt == BLOCKED_COMMIT_ATTEMPTS - 1:  # landed first
                        raise
        return True

    def _commit_blocked(self, folder: Path, scope: RunScope, repo_id: str, revision: str, path: str) -> None:
        publish_run_folder(
            folder,
            repo_id,
            token=self.settings.token,
            revision=revision,
            private=self.settings.private,
            path_in_repo=path,
            commit_message=f"Blocked by the secret scan: {scope.key} (its scan report and history only)",
            endpoint=self.settings.endpoint,
            shared_files=self._root_card(folder, scope),
            whole_folder=True,
        )

    def record_versions(self, scope: RunScope, versions: list[dict[str, Any]]) -> bool:
        """One commit of `versions.json` alone, in either layout (the kept version's repo or folder)."""
        repo_id, revision, path = self._place(scope)
        commit_file(
            repo_id,
            _in_repo(path, VERSIONS_FILE),
            versions_json(versions).encode(),
            token=self.settings.token,
            revision=revision,
            commit_message=f"Blocked by the secret scan: {scope.key} (the version before kept; its history says so)",
            endpoint=self.settings.endpoint,
        )
        return True

    def publish_root_file(self, local_file: Path) -> str | None:
        """Skipped: a commit per refresh would double the commits of a sweep and queue behind the
        `hub_commits` pool, and the repo's root belongs to its card; the UI and `status` show the view."""
        return None


def publishes_to_hub(publish_root: str, repo_id_template: str) -> bool:
    """A repo template is set or the root is `hf://datasets/...`: `choose_target` picks the Hub."""
    return bool(repo_id_template) or publish_root.startswith(PUBLISH_ROOT_PREFIX)


def choose_target(
    publish_root: str,
    storage_options: dict[str, Any],
    hub: HubSettings,
    publish_concurrency: int = DEFAULT_PUBLISH_CONCURRENCY,
    card: CardSettings | None = None,
) -> PublishTarget:
    """The Hub's repo per scope when a repo template is set, its repo per sweep when the root is
    `hf://datasets/...`, else a folder; `card`: the root card's settings (and the template's fields)."""
    card = card or CardSettings()
    if hub.repo_id_template:
        return HubTarget(hub, card=card)
    if publishes_to_hub(publish_root, hub.repo_id_template):
        root = parse_publish_root(publish_root)
        return HubTarget(hub, root.repo_id, root.revision, root.path_in_repo, card)
    return FolderTarget(publish_root, storage_options, publish_concurrency, card)


def _blocked_folder(folder: Path, scan_report: Path, versions: list[dict[str, Any]] | None) -> None:
    """What a blocked scope's published folder holds: the scan report, and a withdrawn version's history."""
    shutil.copyfile(scan_report, folder / SCAN_REPORT_FILE)
    if versions:
        (folder / VERSIONS_FILE).write_text(versions_json(versions))


def _in_repo(prefix: str, path: str) -> str:
    return "/".join(part for part in (prefix, path) if part)


def replace_folder(
    local_dir: Path,
    target_url: str,
    storage_options: dict[str, Any] | None = None,
    after_flip: Callable[[], None] | None = None,
    progress: Progress = quiet,
    concurrency: int = DEFAULT_PUBLISH_CONCURRENCY,
) -> None:
    """Make `target_url` hold exactly the files of `local_dir`, in the order the module describes;
    `after_flip` runs once the card is flipped, while the old shards are still there. `progress`
    gets the copy's bytes and files done/total, rate and ETA. On object storage each phase's files
    go `concurrency` at a time (fsspec's `put`), and the stale files in bulk deletes (`rm`)."""
    fs, target = fsspec.core.url_to_fs(target_url, **_pooled(target_url, storage_options or {}, concurrency))
    target = target.rstrip("/")
    local = isinstance(fs, LocalFileSystem)
    sizes = files_below(local_dir)
    new_files = sorted(sizes)
    # One listing with sizes: no request per file to tell whether a versioned file is there already
    # (on object storage a prefix holding nothing lists as nothing: no request to ask first).
    listed = fs.find(target, detail=True) if not local or fs.exists(target) else {}
    old_files = {path[len(target) + 1 :]: path for path in listed}
    old_sizes = {path[len(target) + 1 :]: info.get("size") for path, info in listed.items()}

    cards = [n for n in CARDS if n in new_files]  # last, the flips: from then on readers load the new version
    shards = [n for n in new_files if n.startswith(VERSIONED_DIRS) and n not in cards]
    # Shards are named by their content: one already there with the same size is this one.
    changed = [n for n in shards if old_sizes.get(n, -1) != sizes[n]]
    versioned = set(shards)
    rest = [n for n in new_files if n not in versioned and n not in cards]
    transfer = FileTransfer("upload", [sizes[n] for n in changed + rest + cards], progress, bar=terminal())
    if local:
        moved = _new_folders(Path(target), changed)  # a version folder not there yet goes in whole: one rename
        for folder, names in moved.items():
            move_into_place(local_dir / folder, Path(target, folder))
            transfer.advance(len(names), sum(sizes[name] for name in names))
        gone = {n for names in moved.values() for n in names}  # once, not per name: quadratic in the files
        changed = [name for name in changed if name not in gone]
        for name in changed + rest + cards:
            copy_atomically(local_dir / name, Path(target, name))  # a rename: the old file or the new
            transfer.advance(1, sizes[name])
    else:
        for phase in (changed, rest):  # each phase whole before the next starts
            _put_all(fs, local_dir, target, phase, sizes=sizes, transfer=transfer, concurrency=concurrency)
        for name in cards:  # one PUT each, in order: the old object or the new
            fs.put_file(str(local_dir / name), f"{target}/{name}")
            transfer.advance(1, sizes[name])
    transfer.finish()
    if after_flip is not None:
        after_flip()
    stale = set(old_files) - set(new_files)
    if local:
        for name in sorted(stale, key=_removal_order):
            fs.rm_file(old_files[name])
        _remove_empty_folders(Path(target))  # old versions' folders, and any a file no longer fills
        _remove_old_swap_leftovers(Path(target))
    else:
        for group in _removal_groups(stale):
            _remove_all(fs, [old_files[name] for name in group])


def _pooled(url: str, storage_options: dict[str, Any], concurrency: int) -> dict[str, Any]:
    """botocore keeps 10 connections by default, which would cap the PUTs in flight at 10."""
    options = dict(storage_options)
    if url.startswith(("s3://", "s3a://")):
        config = dict(options.get("config_kwargs") or {})
        config["max_pool_connections"] = max(config.get("max_pool_connections", 0), concurrency)
        options["config_kwargs"] = config
    return options


class _TransferCallback(Callback):
    """fsspec's progress callback for a bulk `put`, feeding a `FileTransfer`: each file's bytes as
    they go (the child callbacks), each file done when its PUT returns (the parent's updates)."""

    def __init__(self, transfer: FileTransfer):
        super().__init__()
        self.transfer = transfer

    def relative_update(self, inc: int | None = 1) -> None:
        self.transfer.advance(inc or 0, 0)

    def branched(self, path_1: str, path_2: str, **kwargs: Any) -> Callback:
        return _BytesCallback(self.transfer)


class _BytesCallback(Callback):
    def __init__(self, transfer: FileTransfer):
        super().__init__()
        self.transfer = transfer

    def relative_update(self, inc: int | None = 1) -> None:
        self.transfer.advance(0, inc or 0)


def _put_all(
    fs: Any,
    local_dir: Path,
    target: str,
    names: list[str],
    *,
    sizes: dict[str, int],
    transfer: FileTransfer,
    concurrency: int,
) -> None:
    """One PUT per file, `concurrency` in flight, given as lists of paths so nothing is expanded."""
    if not names:
        return
    lpaths = [str(local_dir / name) for name in names]
    rpaths = [f"{target}/{name}" for name in names]
    if not getattr(fs, "async_impl", False):  # a synchronous file system: one after another
        for lpath, rpath, name in zip(lpaths, rpaths, names):
            fs.put_file(lpath, rpath)
            transfer.advance(1, sizes[name])
        return
    fs.put(lpaths, rpaths, batch_size=concurrency, callback=_TransferCallback(transfer))


def _removal_groups(stale: set[str]) -> list[list[str]]:
    """Stale files in the order `_removal_order` gives, cut where that order matters: a sessions
    card the new version drops alone and first, the card alone and last, all else between."""
    first = [name for name in stale if name == SESSIONS_CARD]
    last = [name for name in stale if name == CARD_FILE]
    between = sorted(stale - {SESSIONS_CARD, CARD_FILE})
    return [group for group in (first, between, last) if group]


def _remove_all(fs: Any, paths: list[str]) -> None:
    """Bulk deletes (s3fs: DeleteObjects, 1000 keys a request). A path with glob characters (a
    publish root's own name could hold them) goes alone: `rm` would expand it as a pattern."""
    literal = [path for path in paths if not has_magic(path)]
    if literal:
        fs.rm(literal)
    for path in paths:
        if has_magic(path):
            fs.rm_file(path)


def _removal_order(name: str) -> tuple[bool, bool, str]:
    """A sessions card the new version drops goes before the files it names; the card goes last."""
    return (name == CARD_FILE, name != SESSIONS_CARD, name)


def _new_folders(target: Path, names: list[str]) -> dict[str, list[str]]:
    """The files to put (below a versioned folder, e.g. `data/<version>/...`) by the shallowest
    folder of theirs below the top one that the target lacks, which can go in whole; files whose
    folder is already there are left to be put one by one."""
    missing: dict[str, bool] = {}
    moved: dict[str, list[str]] = {}
    for name in names:
        parts = name.split("/")
        for depth in range(2, len(parts)):
            folder = "/".join(parts[:depth])
            if folder not in missing:
                missing[folder] = not Path(target, folder).exists()
            if missing[folder]:
                moved.setdefault(folder, []).append(name)
                break
    return moved


def move_into_place(source: Path, destination: Path) -> None:
    """A folder the target lacks appears there whole, with everything in it: one rename on the
    same file system, else a copy into a hidden temp sibling renamed into place (a killed copy's
    temp is a leftover the next publish removes). The local build folder loses it. Every file and
    folder in it is on disk before the rename (`sync_tree`), the folders holding the new name after it."""
    created = make_parents(destination)
    if source.stat().st_dev == destination.parent.stat().st_dev:
        sync_tree(source)
        try:
            os.rename(source, destination)
            fsync_parents(destination, created)
            return
        except OSError as err:
            if err.errno != errno.EXDEV:  # a bind mount of the same device
                raise
    temp = temp_sibling(destination)
    try:
        shutil.copytree(source, temp)
        sync_tree(temp)
        os.rename(temp, destination)
    except BaseException:
        remove_path(temp)
        raise
    fsync_parents(destination, created)


def _remove_empty_folders(folder: Path) -> None:
    """Empty folders below `folder` (never `folder` itself: the scope's folder is never missing),
    the deepest first, so a folder holding only emptied ones goes too. A link is never removed
    nor followed."""
    if not folder.is_dir() or folder.is_symlink():
        return
    removed: set[str] = set()
    for path, folders, files in os.walk(folder, topdown=False):
        if path != str(folder) and not files and all(os.path.join(path, name) in removed for name in folders):
            os.rmdir(path)
            removed.add(path)


def _remove_old_swap_leftovers(target: Path) -> None:
    """Earlier versions swapped whole folders through `.<run>.incoming-*` / `.retired-*` siblings."""
    for path in target.parent.glob(f".{target.name}.*"):
        if is_leftover(path.name):
            remove_path(path)
