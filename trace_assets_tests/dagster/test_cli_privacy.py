"""`--on-private` and `--scrub-literal` as a user types them: private values found, kept or
replaced by stable tokens, and an operator's literal replaced in every mode, in rows and the report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from trace_assets_tests.support.cli_processes import run_cli
from trace_assets_tests.support.helpers import SAMPLE_RUN, SAMPLE_TRACES

EMAIL = "alice.smith@corp-research.io"
LITERAL = "zebra-lab-bucket-77"


def _traces(tmp_path: Path) -> Path:
    traces = tmp_path / "traces"
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, traces / SAMPLE_RUN)
    for stdout in (traces / SAMPLE_RUN / "trace_jobs").glob("*/verifier/test-stdout.txt"):
        stdout.write_text(stdout.read_text() + f"\nreport sent to {EMAIL}; results in s3://{LITERAL}/out\n")
    return traces


def _published_text(folder: Path) -> str:
    shards = sorted((folder / "data").rglob("*.parquet"))
    return "\n".join(json.dumps(pq.read_table(shard).to_pylist()) for shard in shards)


@pytest.mark.parametrize("on_private", ["keep", "redact"])
def test_private_values_follow_on_private_and_a_literal_is_always_replaced(tmp_path, on_private):
    traces, published = _traces(tmp_path), tmp_path / "published"
    flags = ["--on-secret", "redact", "--on-private", on_private, "--scrub-literal", LITERAL]
    done = run_cli(
        ["materialize", SAMPLE_RUN, "--traces-root", str(traces), "--publish-root", str(published), *flags], tmp_path
    )
    assert done.returncode == 0, done.stderr
    rows = _published_text(published / SAMPLE_RUN)
    report = (published / SAMPLE_RUN / "secret_scan.json").read_text()
    assert LITERAL not in rows and "[OPERATOR-1]" in rows
    assert (EMAIL in rows) == (on_private == "keep") and ("[EMAIL-1]" in rows) == (on_private == "redact")
    assert EMAIL not in report and LITERAL not in report  # counted, never named
    categories = json.loads(report)["privacy"]["categories"]
    assert categories["email"]["matches"] > 0 and categories["operator"]["matches"] > 0
