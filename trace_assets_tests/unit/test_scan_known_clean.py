"""The session scan leaves out texts its trial's rows already hold (`steps.scan.CandidateRecorder`):
the report is the one a scan of every text makes, on a generated run and on crafted stores."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trace_assets.core.scope import RunScope
from trace_assets.harbor.options import ExportOptions
from trace_assets.secret_scan.kinds import parse_pattern_specs
from trace_assets.secret_scan.scanner import ScanOptions, SecretScanner
from trace_assets.steps import sessions as staged
from trace_assets.steps.scan import CandidateRecorder, scan_run
from trace_assets.steps.sessions import scan_sessions, staged_sessions
from trace_assets.steps.staged_rows import RowParts, iter_rows
from trace_assets.steps.staging import RunStaging
from trace_assets.store.trace_store import TraceStore
from trace_assets_tests.support.generate_traces import generate_run
from trace_assets_tests.support.helpers import stage_rows

PEM_BEGIN = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA" + "q" * 40
PEM_END = "Zm9vYmFy" * 5 + "\n-----END RSA PRIVATE KEY-----"
CLEAN = "ls -la\ntotal 0"


def full_scan(rows: RowParts, run_id: str, options: ScanOptions, sessions: Path) -> dict:
    """Every text of the rows and the session files, none left out."""
    scanner = SecretScanner(run_id, options)
    for table in iter_rows(rows, 256):
        scanner.scan(pl.DataFrame(table))
    sessions_scanned = scan_sessions(scanner, sessions)
    return {**scanner.report(), "sessions_scanned": sessions_scanned}


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> RunStaging:
    root = tmp_path_factory.mktemp("traces")
    generate_run(root, "gen-run", trials=80, seed=0, prompt_scale=0.05, episode_prompts=False)
    store = TraceStore(str(root))
    staging = RunStaging(tmp_path_factory.mktemp("staging"), RunScope("gen-run"))
    stage_rows(store, staging, ExportOptions(subagents="merged"), sessions=True)
    return staging


def test_generated_run_report_equals_a_scan_of_every_text(generated: RunStaging) -> None:
    folder = staged_sessions(generated)
    options = ScanOptions()
    report = scan_run(generated.require_rows(), "gen-run", options, folder)
    assert report == full_scan(generated.require_rows(), "gen-run", options, folder)
    assert any(kind["matches"] for kind in report["kinds"].values())
    in_rows = pq.read_table(staged.store_path(folder), columns=["in_rows"]).column("in_rows").to_pylist()
    assert sum(sum(flags) for flags in in_rows) > 0  # texts were left out


def test_a_kind_without_literals_scans_every_text(generated: RunStaging) -> None:
    options = ScanOptions(tuple(parse_pattern_specs(r"mine=total \d")))
    assert not CandidateRecorder(options).skips
    folder = staged_sessions(generated)
    report = scan_run(generated.require_rows(), "gen-run", options, folder)
    assert report == full_scan(generated.require_rows(), "gen-run", options, folder)


def write_store(folder: Path, texts: list[str], in_rows: list[bool]) -> None:
    """One staged session file of `texts` (a skeleton slot for each)."""
    skeleton = "".join('{"c": \x00}\n' for _ in texts)
    record = {
        "trial_dir": "t",
        "path": "sessions/00/t.jsonl",
        "trial_name": "t",
        "task": "task",
        "skeleton": skeleton,
        "texts": texts,
        "in_rows": in_rows,
    }
    folder.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist([record], schema=staged.STORE_SCHEMA), staged.store_path(folder))
    (folder.parent / staged.MANIFEST).write_text(json.dumps({"t": [record["path"]]}))


def scanned(folder: Path, rows_seen: list[str], left_out: bool) -> dict:
    """The report of the session file alone, after a row scan whose prefilter saw `rows_seen`."""
    options = ScanOptions()
    finder = CandidateRecorder(options)
    scanner = SecretScanner("r", options, finder)
    finder.candidates(pl.DataFrame({"text": rows_seen}, schema={"text": pl.String}))
    scan_sessions(scanner, folder, candidates=finder.seen if left_out else None)
    return scanner.report()


def test_a_left_out_text_keeps_its_place_between_two_halves_of_a_key(tmp_path: Path) -> None:
    """A clean text between the two halves of a PEM block stays between them: left out or read, the
    halves are joined across it the same way (a key split over two observations, a turn between)."""
    folder = tmp_path / "sessions"
    write_store(folder, [PEM_BEGIN, CLEAN, PEM_END], [False, True, False])
    report = scanned(folder, [CLEAN], left_out=True)
    assert report == scanned(folder, [CLEAN], left_out=False)
    assert report["pem"]["truncated"] == 0  # joined across the text between them
    write_store(folder, [PEM_BEGIN, PEM_END], [False, False])
    assert scanned(folder, [], left_out=True)["pem"]["truncated"] == 0


def test_a_text_the_rows_hold_with_a_secret_is_still_read(tmp_path: Path) -> None:
    secret = "export GITHUB_TOKEN=ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tV9xZ1bC3dE5"
    folder = tmp_path / "sessions"
    write_store(folder, [secret, CLEAN], [True, True])
    report = scanned(folder, [secret, CLEAN], left_out=True)
    assert report == scanned(folder, [secret, CLEAN], left_out=False)
    assert report["kinds"]["github_token"]["matches"] == 1
    assert report["bytes_scanned"] == len(secret) + len(CLEAN)
