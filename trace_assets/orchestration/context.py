"""A scope's context: everything the steps read from the settings, built once per scope, and the
parts it is built of (staging, trace store, publish target), built from the settings (`RunParts`).

Steps take a `ScopeContext` instead of a dozen arguments passed field by field; the Dagster assets
build one from their resource at each step, `--dry-run` one for the whole scope. The Dagster
resources and the CLI hold settings only; what a run reads and writes through is built here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from trace_assets.core.scope import RunScope, ScopeUnit
from trace_assets.orchestration.options import (
    card_settings,
    export_options,
    scan_options,
    scan_policy,
    shrink_override_hint,
)
from trace_assets.publishing.hub.naming import check_repo_id_template
from trace_assets.publishing.targets import HubSettings, PublishTarget, choose_target, naming_fields, publishes_to_hub
from trace_assets.settings import ConfigError, HubRepoSettings, PipelineSettings, env_name, variables
from trace_assets.steps.sessions import SessionWriter, staged_sessions
from trace_assets.steps.staging import RunStaging
from trace_assets.steps.staging_mirror import StagingMirror, staging_scratch
from trace_assets.store.s3_options import S3Access, storage_options
from trace_assets.store.trace_store import TraceStore

if TYPE_CHECKING:
    from trace_assets.harbor.options import ExportOptions
    from trace_assets.publishing.card import CardSettings
    from trace_assets.runtime.progress import Progress
    from trace_assets.secret_scan.policy import ScanPolicy
    from trace_assets.secret_scan.scanner import ScanOptions


@dataclass(frozen=True)
class ScopeContext:
    """One scope's staging, trace store, publish target and the options every step reads."""

    staging: RunStaging
    store: TraceStore
    make_target: Callable[[], PublishTarget]  # called once, by the first step that publishes or plans to
    options: ExportOptions
    scan_options: ScanOptions
    policy: ScanPolicy
    card: CardSettings
    card_plots: bool
    batch_size: int
    max_rows_per_shard: int
    sessions: bool
    session_harness: str
    shrink_threshold: float | None  # None: allow_shrink
    shrink_override: str  # what a refused smaller version's message tells the operator to set
    progress: Progress
    publish_folder: Path | None = None  # the scope's folder under a local publish root (its free space)

    @property
    def scope(self) -> RunScope:
        return self.staging.scope

    @cached_property
    def target(self) -> PublishTarget:
        return self.make_target()

    def sessions_folder(self) -> Path | None:
        return staged_sessions(self.staging) if self.sessions else None

    def session_writer(self) -> SessionWriter | None:
        """A new writer for one export (it holds that export's state)."""
        return SessionWriter(staged_sessions(self.staging), self.session_harness) if self.sessions else None


@dataclass(frozen=True)
class RunParts:
    """What runs read and write through, each built from the settings when asked: a scope's staging
    and context, the trace store, the publish target. The assets, checks, sensor and CLI all build
    them here, from `trace_config`'s settings, its object storage and its Hub."""

    settings: PipelineSettings
    storage: S3Access
    hub: HubSettings

    def scope_context(self, scope: RunScope, progress: Progress, target: PublishTarget | None = None) -> ScopeContext:
        """The steps' context for `scope`, its staging not yet locked and its publish target built
        when first used (or `target`): the one place the steps' options are read from the settings."""
        settings, staging = self.settings, self.staging(scope)
        return ScopeContext(
            staging=staging,
            store=self.store(),
            make_target=self.publish_target if target is None else lambda: target,
            options=export_options(settings),
            scan_options=scan_options(settings),
            policy=scan_policy(settings),
            card=card_settings(settings),
            card_plots=settings.card_plots,
            batch_size=settings.batch_size,
            max_rows_per_shard=settings.max_rows_per_shard,
            sessions=settings.sessions,
            session_harness=settings.session_harness,
            shrink_threshold=None if settings.allow_shrink else settings.shrink_threshold,
            shrink_override=shrink_override_hint(),
            progress=progress,
            publish_folder=None if "://" in settings.publish_root else Path(scope.publish_url(settings.publish_root)),
        )

    def staging(self, scope: RunScope) -> RunStaging:
        """Local staging, or a scratch folder mirrored to the staging URL (see `staging_mirror`)."""
        root = self.settings.staging_root
        if "://" not in root:
            return RunStaging(Path(root), scope)
        mirror = StagingMirror(root, storage_options(self.storage, root), self.settings.staging_lease_seconds)
        return RunStaging(staging_scratch(root), scope, mirror)

    def store(self) -> TraceStore:
        settings = self.settings
        return TraceStore(
            settings.traces_root,
            storage_options(self.storage, settings.traces_root),
            settings.max_concurrency,
            batch_bytes=settings.batch_bytes,
            fetch_ahead=settings.fetch_ahead,
        )

    def scopes(self, run_id: str) -> list[RunScope]:
        """The run's scopes under `scope_unit`: its step folders, or the run as one."""
        return self.store().scopes(run_id, ScopeUnit(self.settings.scope_unit))

    def publish_target(self) -> PublishTarget:
        settings, card = self.settings, card_settings(self.settings)
        self._check_hub_names(card)
        options = storage_options(self.storage, settings.publish_root)
        return choose_target(settings.publish_root, options, self.hub, settings.publish_concurrency, card)

    def publishes_to_hub(self) -> bool:
        """Checked where the definitions are built, so `dagster dev` and `dg check defs` refuse a
        repo id template no scope's repo could be named from."""
        self._check_hub_names(card_settings(self.settings))
        return publishes_to_hub(self.settings.publish_root, self.hub.repo_id_template)

    def _check_hub_names(self, card: CardSettings) -> None:
        """A repo id template no scope's repo could be named from is refused at start (see `hub.naming`)."""
        template = self.hub.repo_id_template
        if not template:
            return
        try:
            steps = self.settings.scope_unit == ScopeUnit.STEP
            check_repo_id_template(template, self.hub.org, naming_fields(card), steps=steps, variables=variables())
        except ValueError as error:
            why = str(error).removeprefix(f"repo id template {template!r}").lstrip(": ")
            raise ConfigError(f"{env_name(HubRepoSettings, 'repo_id_template')}={template!r}: {why}") from None
