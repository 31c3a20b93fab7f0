"""A scope's staging lock tidies the folder once a hold: the outermost one (the CLI's, around a
whole run) discards staged files that do not read back; the steps' holds inside it need not."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from trace_assets.core.scope import RunScope
from trace_assets.steps.staging import RunStaging


def test_the_outermost_hold_discards_an_unreadable_staged_file_and_a_nested_one_reads_none(tmp_path: Path):
    staging = RunStaging(tmp_path / "staging", RunScope("run-a"))
    staging.folder.mkdir(parents=True)
    staging.scored.write_bytes(b"PAR1 truncated")
    lines: list[str] = []
    with staging.locked(lines.append):
        assert not staging.scored.exists()
        assert lines == [f"discarded unreadable staged file {staging.scored}; it will be rebuilt"]
        pq.write_table(pa.table({"trial_dir": ["t"]}), staging.scored)
        staging.listing.write_bytes(b"PAR1 truncated")  # only a hand edit could, while the lock is held
        with staging.locked(lines.append):
            assert staging.listing.exists() and len(lines) == 1  # the step's hold reads no footer again
    with staging.locked(lines.append):  # the next run's outermost hold
        assert not staging.listing.exists() and staging.scored.exists()
