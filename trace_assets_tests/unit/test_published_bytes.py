"""The bundled sample, published, is byte for byte what the version before the package layout
published (`data/published_sample/`, made by `trace-assets materialize rl-sample-run` then), plus
the deliberate additions since: the session files (`sessions/`), their card section and their own
card (`sessions/README.md`: `datasets` reads one card's configs with one builder, so the JSON Lines
are no config of the Parquet rows' card), and
the session counts in `coverage.json` (sessions not written, by reason, since), and the full card (issue 15: provenance, fields, usage,
rewards and turns, the `trials` config, `versions.json` and the two SVG plots), and each version's
mean reward and its count in `versions.json` (issue 24: a root card's table reads them from there)."""

from __future__ import annotations

import pyarrow.parquet as pq

from trace_assets.core.accounting import Coverage
from trace_assets.core.defaults import DEFAULT_ROWS_PER_SHARD
from trace_assets.core.scope import RunScope
from trace_assets.publishing.card import CardContext
from trace_assets.publishing.card_facts import gather_facts
from trace_assets.publishing.dataset_folder import build_run_folder
from trace_assets.secret_scan.scanner import ScanOptions
from trace_assets.steps.scan import scan_run
from trace_assets.steps.sessions import staged_sessions
from trace_assets.steps.staging import RunStaging
from trace_assets.store.trace_store import TraceStore
from trace_assets_tests.support.helpers import DATA, SAMPLE_RUN, SAMPLE_TRACES, stage_rows

GOLDEN = DATA / "published_sample"
# The per-trial fingerprints hash each object's modification time, which a fresh clone resets.
CLONE_DEPENDENT_COLUMNS = ["source_fingerprint"]
# Added to trials.parquet since (issue 11): entries not read, and lone surrogates replaced; 0 here.
ADDED_COLUMNS = ["skipped", "repaired"]


def publish_sample(out, staging, coverage, report, sessions):
    """As `published_shards` does, less the date and the location (which vary)."""
    rows = staging.require_rows()
    card = CardContext(facts=gather_facts(staging, rows), plots=True)
    build_run_folder(
        out,
        rows,
        staging.statuses,
        coverage,
        report,
        DEFAULT_ROWS_PER_SHARD,
        None,
        None,
        sessions,
        card,
        staging.scope.source_prefix,
    )


def test_sample_publishes_the_same_bytes_as_before(tmp_path):
    store = TraceStore(str(SAMPLE_TRACES))
    staging = RunStaging(tmp_path / "staging", RunScope(SAMPLE_RUN))
    coverage, _ = stage_rows(store, staging, batch_size=256, sessions=True)["last_episode_rows"]
    sessions = staged_sessions(staging)
    report = scan_run(staging.require_rows(), SAMPLE_RUN, ScanOptions(), sessions)
    out = tmp_path / "published"
    publish_sample(out, staging, coverage, report, sessions)

    published = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    golden = sorted(p.relative_to(GOLDEN).as_posix() for p in GOLDEN.rglob("*") if p.is_file())
    assert published == golden
    for name in golden:
        if name == "trials.parquet":
            ours, theirs = (pq.read_table(folder / name) for folder in (out, GOLDEN))
            assert ours.column_names == theirs.column_names + ADDED_COLUMNS
            assert all(set(ours[column].to_pylist()) == {0} for column in ADDED_COLUMNS)
            ours = ours.drop(ADDED_COLUMNS)
            assert ours.schema == theirs.schema
            assert ours.drop(CLONE_DEPENDENT_COLUMNS) == theirs.drop(CLONE_DEPENDENT_COLUMNS)
        else:
            assert (out / name).read_bytes() == (GOLDEN / name).read_bytes(), name
    assert Coverage.from_dict(coverage.as_dict()) == coverage
