"""A scope's context: everything the steps read from the settings, built once per scope.

Steps take a `ScopeContext` instead of a dozen arguments passed field by field; the Dagster assets
build one from their resources at each step, `--dry-run` one for the whole scope.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from trace_assets.orchestration.options import (
    card_settings,
    export_options,
    scan_options,
    scan_policy,
    shrink_override_hint,
)
from trace_assets.steps.sessions import SessionWriter, staged_sessions

if TYPE_CHECKING:
    from trace_assets.core.scope import RunScope
    from trace_assets.harbor.options import ExportOptions
    from trace_assets.publishing.card import CardSettings
    from trace_assets.publishing.targets import PublishTarget
    from trace_assets.runtime.progress import Progress
    from trace_assets.secret_scan.policy import ScanPolicy
    from trace_assets.secret_scan.scanner import ScanOptions
    from trace_assets.settings import PipelineSettings
    from trace_assets.steps.staging import RunStaging
    from trace_assets.store.trace_store import TraceStore


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


def scope_context(
    settings: PipelineSettings,
    staging: RunStaging,
    store: TraceStore,
    target: Callable[[], PublishTarget],
    progress: Progress,
) -> ScopeContext:
    """The one place the steps' options are read from the settings."""
    return ScopeContext(
        staging=staging,
        store=store,
        make_target=target,
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
        publish_folder=None
        if "://" in settings.publish_root
        else Path(staging.scope.publish_url(settings.publish_root)),
    )
