"""A publish root's worth of scopes for tests: two step scopes of one run and a run without steps."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from trace_assets.core.accounting import Coverage
from trace_assets.core.scope import RunScope
from trace_assets.harbor.options import ExportOptions
from trace_assets.publishing.card import CardContext, CardSettings
from trace_assets.publishing.dataset_folder import build_run_folder
from trace_assets.steps.sessions import staged_sessions
from trace_assets.steps.staging import RunStaging
from trace_assets.store.trace_store import TraceStore
from trace_assets_tests.support.generate_traces import generate_run
from trace_assets_tests.support.helpers import run_steps

# A sweep card as the seeds' would read: every provenance field set.
SWEEP_CARD = CardSettings(
    license="apache-2.0",
    pretty_name="Terminal-Bench 2 traces",
    framework="SkyRL",
    task_source="terminal-bench 2 (tasktrove)",
    model="Qwen/Qwen3-30B-A3B",
)


def build_scope_folders(
    tmp_path: Path,
    sessions: bool = False,
    options: Callable[[RunScope], ExportOptions] | None = None,
    card: Callable[[RunScope], CardContext] | None = None,
    runs: tuple[str, str] = ("stepped", "flat"),
) -> dict[RunScope, tuple[Path, int]]:
    """Two step scopes and one run without steps (`runs` names the two runs), each laid out as a
    dataset folder; with `sessions`, each with its session files; `options` and `card` per scope."""
    traces = tmp_path / "traces"
    stepped, flat = runs
    generate_run(traces, stepped, trials=8, seed=3, nested_steps=2)
    generate_run(traces, flat, trials=5, seed=4)
    store = TraceStore(str(traces), walk_workers=1)
    built = {}
    for scope in [*store.scopes(stepped), *store.scopes(flat)]:
        scope_options = options(scope) if options else None
        run_steps(store, scope.key, tmp_path / "staging", options=scope_options, sessions=sessions)
        staging = RunStaging(tmp_path / "staging", scope)
        coverage = Coverage.from_dict(json.loads(staging.coverage.read_text()))
        folder = tmp_path / "build" / scope.key
        build_run_folder(
            folder,
            staging.require_rows(),
            staging.statuses,
            coverage,
            {"verdict": "clean"},
            3,
            options=scope_options,
            sessions=staged_sessions(staging) if sessions else None,
            card=card(scope) if card else None,
            step=scope.step,
        )
        built[scope] = (folder, coverage.rows)
    return built
