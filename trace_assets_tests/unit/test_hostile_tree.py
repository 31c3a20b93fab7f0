"""Hostile trial folders on a local root: the run succeeds, every folder has its reason, nothing
from outside the root reaches staging or the published folder, the good trials are exported."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from trace_assets.core.defaults import DEFAULT_ROWS_PER_SHARD
from trace_assets.core.scope import RunScope
from trace_assets.harbor.options import ExportOptions
from trace_assets.publishing.dataset_folder import build_run_folder
from trace_assets.secret_scan.scanner import ScanOptions
from trace_assets.steps.rows import export_rows
from trace_assets.steps.scan import scan_run
from trace_assets.steps.sessions import staged_sessions
from trace_assets.steps.staging import RunStaging
from trace_assets.store.trace_store import TraceStore
from trace_assets_tests.support.helpers import run_steps
from trace_assets_tests.support.hostile_tree import MARKER, RUN_ID, expected_statuses, write_hostile_run


def _outside_markers() -> list[bytes]:
    """Bytes that only a read outside the root could bring in."""
    environ = [f"{name}={value}".encode() for name, value in os.environ.items() if len(value) >= 8][:20]
    return [MARKER.encode(), b"root:x:0:0", *environ]


def _texts(folder: Path) -> list[tuple[Path, bytes]]:
    """Every file's bytes, and for Parquet files also their values as text (pages are compressed)."""
    out = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        out.append((path, path.read_bytes()))
        if path.suffix == ".parquet":
            out.append((path, repr(pq.read_table(path).to_pylist()).encode("utf-8", "backslashreplace")))
    return out


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    (base / "outside").mkdir()
    write_hostile_run(base / "traces", base / "outside")
    staging_root = base / "staging"
    store = TraceStore(str(base / "traces"))
    rows, coverage, statuses = run_steps(store, RUN_ID, staging_root, batch_size=4, sessions=True)
    staging = RunStaging(staging_root, RunScope(RUN_ID))
    sessions = staged_sessions(staging)
    report = scan_run(staging.require_rows(), RUN_ID, ScanOptions(), sessions)
    rows_parts = staging.require_rows()
    build_run_folder(
        base / "published", rows_parts, staging.statuses, coverage, report, DEFAULT_ROWS_PER_SHARD, None, None, sessions
    )
    return base, rows, coverage, statuses


def test_every_hostile_folder_has_its_reason(hostile_run):
    base, rows, coverage, statuses = hostile_run
    expected = expected_statuses(base / "outside")
    got = {s["trial_dir"]: (s["reason"], s["skipped"]) for s in statuses}
    assert got == expected, {d: (got.get(d), e) for d, e in expected.items() if got.get(d) != e}
    for status in statuses:
        assert status["status"] == ("exported" if status["reason"] is None else "excluded")
        if status["reason"] is not None or status["skipped"]:
            assert status["detail"], status
    assert coverage.accounted and coverage.trial_dirs == len(expected)
    exported = sorted(d for d, (reason, _) in expected.items() if reason is None)
    assert sorted(r["trial_name"] for r in rows) == exported


def test_details_name_the_file_and_the_problem(hostile_run):
    _, _, _, statuses = hostile_run
    detail = {s["trial_dir"]: s["detail"] for s in statuses}
    assert detail["environ-stderr__l1"] == "verifier/test-stderr.txt is a symbolic link, not followed"
    assert detail["linked-trial__l7"] == "the trial folder itself is a symbolic link, not followed"
    assert detail["fifo-stdout__f1"] == "verifier/test-stdout.txt is a FIFO, socket or device, not opened"
    assert detail["bad-\\xff-name__u2"] == "the trial folder itself has a name that is not UTF-8"
    assert "nested too deeply" in detail["deep-message__d2"]
    assert "nested too deeply" in detail["deep-tool-call__d1"]
    assert "agent/notes.txt (link)" in detail["harmless-link__l9"]
    assert detail["surrogate-message__s2"] == "1 lone surrogate(s) replaced with U+FFFD"


def test_odd_values_are_kept_as_decided(hostile_run):
    _, rows, _, statuses = hostile_run
    by_trial = {r["trial_name"]: r for r in rows}
    assert by_trial["reward-401-digits__n1"]["result"] == "9" * 401  # out of float range: kept as text
    assert by_trial["reward-5000-digits__n2"]["result"] == "7" * 5000
    assert "a\ufffdb" in by_trial["surrogate-message__s2"]["conversations"][1]["content"]
    repaired = {s["trial_dir"]: s["repaired"] for s in statuses if s["repaired"]}
    assert repaired == {"surrogate-result__s1": 1, "surrogate-message__s2": 1}


def test_no_byte_from_outside_the_root_is_staged_or_published(hostile_run):
    base, _, _, _ = hostile_run
    markers = _outside_markers()
    for folder in (base / "staging", base / "published"):
        for path, data in _texts(folder):
            for marker in markers:
                assert marker not in data, (path, marker[:40])


def test_a_link_swapped_in_after_the_listing_is_not_read(tmp_path):
    """The read itself refuses links (O_NOFOLLOW, folder by folder), not only the listing."""
    (tmp_path / "outside").mkdir()
    write_hostile_run(tmp_path / "traces", tmp_path / "outside")
    store = TraceStore(str(tmp_path / "traces"))
    staging = RunStaging(tmp_path / "staging", RunScope(RUN_ID))
    run_steps(store, RUN_ID, tmp_path / "staging")
    trial = tmp_path / "traces" / RUN_ID / "trace_jobs" / "good__a1" / "agent"
    (trial / "trajectory.json").unlink()
    (trial / "trajectory.json").symlink_to(tmp_path / "outside" / "trajectory.json")
    (tmp_path / "staging" / RUN_ID / "trials.parquet").unlink()  # no cache: read again
    export_rows(store, staging, ExportOptions(), 8, lambda _: None)
    good = next(s for s in pq.read_table(staging.statuses).to_pylist() if s["trial_dir"] == "good__a1")
    assert good["reason"] == "unsafe_link" and "agent/trajectory.json" in good["detail"]
