"""Issue 20: every config every published card declares loads with `datasets.load_dataset(path,
name=...)`, with the rows the card and coverage.json state: a scope folder (rows, subagent kinds,
trials, sessions) and a shared root of scopes, each published through a real folder target."""

from __future__ import annotations

import json

from trace_assets.core.accounting import Coverage
from trace_assets.core.scope import RunScope
from trace_assets.harbor.options import ExportOptions
from trace_assets.publishing.card import CardContext
from trace_assets.publishing.card_facts import gather_facts
from trace_assets.publishing.dataset_folder import build_run_folder
from trace_assets.publishing.root_card import card_header
from trace_assets.publishing.targets import FolderTarget
from trace_assets.secret_scan.policy import ScanPolicy
from trace_assets.secret_scan.scanner import ScanOptions
from trace_assets.steps.scan import scan_run, secret_redactor
from trace_assets.steps.sessions import staged_sessions
from trace_assets.steps.staging import RunStaging
from trace_assets.store.trace_store import TraceStore
from trace_assets_tests.support.declared_configs import card_sessions_rows, check_root_folder, check_scope_folder
from trace_assets_tests.support.helpers import SAMPLE_RUN, SAMPLE_TRACES, run_steps
from trace_assets_tests.support.scopes import build_scope_folders


def _sessions_loaded(loaded: dict[str, dict[str, int]]) -> int:
    """Rows loaded from configs holding session files, wherever a card declares them."""
    return sum(
        rows
        for card, configs in loaded.items()
        for name, rows in configs.items()
        if card.endswith("sessions/README.md") or name.endswith("sessions")
    )


def test_every_config_of_a_published_scope_folder_loads(tmp_path):
    scope = RunScope(SAMPLE_RUN)
    options = ExportOptions(subagents="separate")
    _, coverage, _ = run_steps(
        TraceStore(str(SAMPLE_TRACES)), SAMPLE_RUN, tmp_path / "staging", options=options, sessions=True
    )
    staging = RunStaging(tmp_path / "staging", scope)
    target = FolderTarget(str(tmp_path / "published"))
    report = scan_run(staging.require_rows(), SAMPLE_RUN, ScanOptions(), staged_sessions(staging))
    build = tmp_path / "build"
    card = CardContext(facts=gather_facts(staging, staging.require_rows()), location=target.location(scope))
    build_run_folder(
        build,
        staging.require_rows(),
        staging.statuses,
        coverage,
        report,
        10,
        None,
        options,
        staged_sessions(staging),
        card,
    )
    target.publish(build, scope)

    loaded = check_scope_folder(tmp_path / "published" / SAMPLE_RUN, tmp_path / "cache")

    main = loaded["README.md"]
    assert main["default"] + sum(n for name, n in main.items() if name.startswith("summarization")) == coverage.rows
    assert {"trials", "summarization-1-summary"} <= set(main)
    assert _sessions_loaded(loaded) == coverage.sessions == 34  # one row per session file, subagents' too
    card = (tmp_path / "published" / SAMPLE_RUN / "README.md").read_text()
    assert card_sessions_rows(card, tmp_path / "as-the-card-says") == 34  # the call the card prints


def test_every_config_of_a_shared_root_loads_scope_by_scope(tmp_path):
    root = tmp_path / "published"
    target = FolderTarget(str(root))
    built = build_scope_folders(
        tmp_path, sessions=True, card=lambda scope: CardContext(location=target.location(scope))
    )
    for scope, (folder, _) in built.items():
        target.publish(folder, scope)

    loaded = check_root_folder(root, built, tmp_path / "cache")

    for scope in built:
        run_rows = sum(rows for other, (_, rows) in built.items() if other.run_id == scope.run_id)
        assert loaded["README.md"][RunScope(scope.run_id).config_name] == run_rows  # a config per run
        sessions = json.loads((root / scope.key / "coverage.json").read_text())["sessions"]
        scope_cards = {card: configs for card, configs in loaded.items() if card.startswith(f"{scope.key}/")}
        assert sessions > 0 and _sessions_loaded(scope_cards) == sessions


def test_the_sessions_card_follows_every_publish_of_the_scope(tmp_path):
    """Other session files (the sample's planted keys redacted): their card names the new version and
    the old one goes; a version without sessions takes their card and files away. Every config loads."""
    scope = RunScope(SAMPLE_RUN)
    run_steps(TraceStore(str(SAMPLE_TRACES)), SAMPLE_RUN, tmp_path / "staging", sessions=True)
    staging = RunStaging(tmp_path / "staging", scope)
    coverage = Coverage.from_dict(json.loads(staging.coverage.read_text()))
    report = scan_run(staging.require_rows(), SAMPLE_RUN, ScanOptions(), staged_sessions(staging))
    redactor = secret_redactor(ScanPolicy("redact", "redact"), report, ScanOptions())
    target = FolderTarget(str(tmp_path / "published"))
    sessions = tmp_path / "published" / SAMPLE_RUN / "sessions"

    def publish(name, redact, with_sessions=True):
        build = tmp_path / name
        folder = staged_sessions(staging) if with_sessions else None
        build_run_folder(build, staging.require_rows(), staging.statuses, coverage, report, 10, redact, None, folder)
        target.publish(build, scope)
        return check_scope_folder(tmp_path / "published" / SAMPLE_RUN, tmp_path / "cache" / name)

    def declared_version():
        [config] = card_header((sessions / "README.md").read_text())["configs"]
        return config["data_files"][0]["path"].split("/")[0]

    assert publish("as-read", None)["sessions/README.md"] == {"default": 34}
    first = declared_version()
    assert publish("redacted", redactor)["sessions/README.md"] == {"default": 34}
    assert declared_version() != first and {p.name for p in sessions.iterdir()} == {"README.md", declared_version()}
    assert "[REDACTED:" in "".join(p.read_text() for p in sessions.rglob("*.jsonl"))

    assert set(publish("without", None, with_sessions=False)) == {"README.md"}
    assert not sessions.exists()
