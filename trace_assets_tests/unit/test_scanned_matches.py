"""Publishing's redaction replaces what the scan found in each batch (`steps.scan.ScannedMatches`)
without running the finder again: the dataset folder is the one a redaction that reads every
batch makes, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from trace_assets.core.accounting import Coverage
from trace_assets.core.scope import RunScope
from trace_assets.publishing.card import CardContext
from trace_assets.publishing.dataset_folder import build_run_folder
from trace_assets.secret_scan.kinds import parse_pattern_specs
from trace_assets.secret_scan.policy import ScanPolicy
from trace_assets.secret_scan.privacy import PrivacyOptions
from trace_assets.secret_scan.scanner import ScanOptions
from trace_assets.steps import scan
from trace_assets.steps.scan import ScannedMatches, scan_run, secret_redactor
from trace_assets.steps.sessions import SCAN_BATCH_SESSIONS, staged_sessions
from trace_assets.steps.staging import RunStaging
from trace_assets.store.trace_store import TraceStore
from trace_assets_tests.support.generate_traces import generate_run
from trace_assets_tests.support.helpers import stage_rows

OPTIONS = ScanOptions(privacy=PrivacyOptions(literals=("ubuntu",)))
POLICY = ScanPolicy("redact", "redact", "redact")
POLICIES = [POLICY, ScanPolicy("redact", "redact", "keep")]  # every private category, or operator values only


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunStaging, Coverage]:
    root = tmp_path_factory.mktemp("traces")
    # 200 trials hold planted keys and stage past one rows batch of the scan (256 rows).
    generate_run(root, "gen-run", trials=200, seed=3, prompt_scale=0.02, episode_prompts=False)
    store = TraceStore(str(root))
    staging = RunStaging(tmp_path_factory.mktemp("staging"), RunScope("gen-run"))
    coverage, _ = stage_rows(store, staging, sessions=True, rows_per_part=1000)["last_episode_rows"]
    return staging, coverage


@pytest.fixture(scope="module")
def first_scan(staged: tuple[RunStaging, Coverage]) -> tuple[dict[str, Any], bytes]:
    """The scan of rows and session files, run once: its report and the record it wrote."""
    staging, _ = staged
    report = scan_run(staging.require_rows(), "gen-run", OPTIONS, staged_sessions(staging), None, staging.scan_matches)
    return report, staging.scan_matches.read_bytes()


@pytest.fixture
def scanned(staged: tuple[RunStaging, Coverage], first_scan: tuple[dict[str, Any], bytes]) -> dict[str, Any]:
    """The scan's report with its record back in the staging, as a test before may have changed it."""
    report, record = first_scan
    staged[0].scan_matches.write_bytes(record)
    return report


def folder_bytes(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("policy", POLICIES, ids=["on_private redact", "on_private keep"])
def test_recorded_matches_publish_the_same_bytes(
    staged: tuple[RunStaging, Coverage], scanned: dict[str, Any], tmp_path: Path, policy: ScanPolicy
) -> None:
    staging, coverage = staged
    report = scanned
    record = ScannedMatches.read(staging.scan_matches, report, OPTIONS)
    assert record is not None and record.rows and record.sessions  # the planted keys were found
    assert sum(map(len, record.rows.values())) < report["rows_scanned"]  # batches without a match hold none
    built, counts = {}, {}
    for name, matched in (("recorded", record), ("found again", None)):
        redactor = secret_redactor(policy, report, OPTIONS, matched)
        assert redactor is not None and redactor.scanned is matched
        build_run_folder(
            tmp_path / name, staging.require_rows(), staging.statuses, coverage, report, 1000, redactor,
            sessions=staged_sessions(staging),
        )  # fmt: skip
        built[name], counts[name] = folder_bytes(tmp_path / name), redactor.counts
    assert counts["recorded"] == counts["found again"] != {}
    assert built["recorded"] == built["found again"]


def test_a_record_of_another_scan_is_ignored(staged: tuple[RunStaging, Coverage], scanned: dict[str, Any]) -> None:
    staging, _ = staged
    report = scanned
    assert ScannedMatches.read(staging.scan_matches, report, OPTIONS) is not None
    assert ScannedMatches.read(staging.scan_matches, {**report, "bytes_scanned": 1}, OPTIONS) is None
    other_kinds = ScanOptions(tuple(parse_pattern_specs("mine=sk-mine-[a-z]{12}")), privacy=OPTIONS.privacy)
    assert ScannedMatches.read(staging.scan_matches, report, other_kinds) is None
    assert ScannedMatches.read(staging.scan_matches, report, ScanOptions(allowlist=("0" * 16,))) is None
    other_literals = ScanOptions(privacy=PrivacyOptions(literals=("debian",)))  # another numbering
    assert ScannedMatches.read(staging.scan_matches, report, other_literals) is None
    record = json.loads(staging.scan_matches.read_text())
    staging.scan_matches.write_text(json.dumps({**record, "tokens": {"phone": ["0" * 32]}}))
    assert ScannedMatches.read(staging.scan_matches, report, OPTIONS) is None  # a category not ours
    staging.scan_matches.write_text("{not json")
    assert ScannedMatches.read(staging.scan_matches, report, OPTIONS) is None


def test_the_record_names_every_trial_with_a_finding_and_the_card_shows_none(
    staged: tuple[RunStaging, Coverage], scanned: dict[str, Any], tmp_path: Path
) -> None:
    """The card's example row comes from a trial the scan found nothing in; without the record
    (unreadable) the card shows none and says why."""
    staging, coverage = staged
    record = ScannedMatches.read(staging.scan_matches, scanned, OPTIONS)
    assert record is not None and record.flagged_trials is not None
    flagged = set(record.flagged_trials)
    in_report = {f["trial_name"] for f in scanned["findings"] if f["verdict"] in ("live", "unverified", "near_miss")}
    private = {t["trial_name"] for t in scanned["privacy"]["trials"]}
    assert in_report and in_report | private <= flagged
    published: dict[str, tuple[list[str], str]] = {}  # trial names in published order, the example

    def build(name: str, flags: frozenset[str] | None) -> None:
        build_run_folder(
            tmp_path / name, staging.require_rows(), staging.statuses, coverage, scanned, 1000,
            secret_redactor(POLICY, scanned, OPTIONS, record), card=CardContext(flagged_trials=flags),
        )  # fmt: skip
        shards = sorted((tmp_path / name / "data").rglob("*.parquet"))
        trials = [
            row["trial_name"] for shard in shards for row in pq.read_table(shard, columns=["trial_name"]).to_pylist()
        ]
        example = (tmp_path / name / "README.md").read_text().split("## Example row", 1)[1].split("\n## ")[0]
        published[name] = trials, example

    build("the record", frozenset(flagged))
    trials, example = published["the record"]
    clean = next(i for i, trial in enumerate(trials) if trial not in flagged)
    assert json.dumps(trials[clean]) in example
    # the first trials flagged too, as a run whose every trial holds a value until one does not
    more = frozenset(flagged | set(trials[:3]))
    build("first ones flagged", more)
    trials, example = published["first ones flagged"]
    clean = next(i for i, trial in enumerate(trials) if trial not in more)
    assert clean >= 3 and f"Row {clean:,}, as `rows[{clean}]` gives it" in example
    assert json.dumps(trials[clean]) in example
    build("every one flagged", frozenset(trials))
    assert (
        published["every one flagged"][1]
        .strip()
        .startswith(
            "No example row is shown: the secret scan found a credential-shaped string or a private value in every trial"
        )
    )
    build("no record", None)
    assert published["no record"][1].strip().startswith("No example row is shown: the secret scan's record of which")


def test_session_files_the_scan_did_not_read_are_found_again(staged: tuple[RunStaging, Coverage]) -> None:
    """A scan without session files (they were off) records none: publishing's redaction of session
    files runs the finder over every batch."""
    staging, _ = staged
    report = scan_run(staging.require_rows(), "gen-run", OPTIONS, None, None, staging.scan_matches)
    record = ScannedMatches.read(staging.scan_matches, report, OPTIONS)
    assert record is not None and record.sessions is None and record.rows
    redactor = secret_redactor(POLICY, report, OPTIONS, ScannedMatches.read(staging.scan_matches, report, OPTIONS))
    assert redactor is not None
    assert redactor.cut_as_scanned("sessions", SCAN_BATCH_SESSIONS) is redactor
    assert redactor.cut_as_scanned("rows", 256) is not redactor
    assert redactor.cut_as_scanned("rows", 100) is redactor  # batches cut otherwise than the scan's


def test_only_what_a_policy_can_replace_is_recorded_while_the_record_is_small(
    staged: tuple[RunStaging, Coverage], scanned: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    staging, _ = staged
    report = scanned
    record = ScannedMatches.read(staging.scan_matches, report, OPTIONS)
    assert record is not None and record.sessions is not None
    verdicts = {m.verdict for found in (record.rows, record.sessions) for ms in found.values() for m in ms}
    assert verdicts and verdicts <= scan.REPLACEABLE
    monkeypatch.setattr(scan, "MAX_RECORDED", 1)  # hostile text: matches past the cap
    report = scan_run(staging.require_rows(), "gen-run", OPTIONS, staged_sessions(staging), None, staging.scan_matches)
    record = ScannedMatches.read(staging.scan_matches, report, OPTIONS)
    assert record is not None and record.rows is None and record.sessions is None
    assert record.tokens is not None  # the numbering is kept all the same
    redactor = secret_redactor(POLICY, report, OPTIONS, ScannedMatches.read(staging.scan_matches, report, OPTIONS))
    assert redactor is not None and redactor.cut_as_scanned("rows", 256) is redactor  # the finder reads every batch


@pytest.mark.parametrize("workers", [1, 3])
def test_the_scan_in_threads_is_the_scan_in_turn(
    staged: tuple[RunStaging, Coverage],
    scanned: dict[str, Any],
    first_scan: tuple[dict[str, Any], bytes],
    monkeypatch: pytest.MonkeyPatch,
    workers: int,
) -> None:
    """Batches searched at once (two where the machine has two cores, as `first_scan` ran) are
    tallied in order: the report, each batch's record and the private values' numbering are
    those of one batch after another; and the session files' findings, read eight batches at a
    time, are recorded per batch as publishing redacts them."""
    staging, _ = staged
    record = ScannedMatches.read(staging.scan_matches, scanned, OPTIONS)
    assert record is not None and record.sessions and max(record.sessions) > 0  # not in a group's first batch
    monkeypatch.setattr(scan, "available_cores", lambda: workers)
    again = scan_run(staging.require_rows(), "gen-run", OPTIONS, staged_sessions(staging), None, staging.scan_matches)
    assert again == scanned
    assert staging.scan_matches.read_bytes() == first_scan[1]
