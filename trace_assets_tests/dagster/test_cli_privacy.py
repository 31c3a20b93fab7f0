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


def _example_section(card: str) -> str:
    return card.split("## Example row", 1)[1].split("\n## ", 1)[0]


@pytest.mark.parametrize("planted", ["every other trial", "every trial"])
def test_the_cards_example_row_comes_from_a_trial_with_no_private_value(tmp_path, planted):
    """The card is the dataset's front page: with `--on-private keep` (the default) the e-mails stay
    in the rows, but the example row is one from a trial the scan found nothing in, or none."""
    traces, published = tmp_path / "traces", tmp_path / "published"
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, traces / SAMPLE_RUN)
    trials = sorted((traces / SAMPLE_RUN / "trace_jobs").iterdir())
    for trial in trials[:: 2 if planted == "every other trial" else 1]:  # the first trial among them
        stdout = trial / "verifier" / "test-stdout.txt"
        stdout.parent.mkdir(exist_ok=True)
        stdout.write_text(f"Author: Alice Smith <{EMAIL}>\n" + (stdout.read_text() if stdout.exists() else ""))
    done = run_cli(
        ["materialize", SAMPLE_RUN, "--traces-root", str(traces), "--publish-root", str(published)]
        + ["--on-secret", "redact", "--on-private", "keep"],  # the sample holds keys: redacted
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    folder = published / SAMPLE_RUN
    shards = sorted((folder / "data").rglob("*.parquet"))
    first = pq.read_table(shards[0]).slice(0, 1).to_pylist()[0]
    assert EMAIL in first["verifier_output"]  # kept: the first row is one the card must not show
    example = _example_section((folder / "README.md").read_text())
    assert EMAIL not in example and "@" not in example
    if planted == "every trial":
        assert "No example row is shown: the secret scan found a credential-shaped string or a private value in " \
            "every trial" in example  # fmt: skip
    else:
        index = int(example.split("`rows[", 1)[1].split("]", 1)[0])
        assert index > 0 and "the first from a trial where the secret scan found no" in example
        rows = [row for shard in shards for row in pq.read_table(shard).to_pylist()]
        shown = rows[index]
        assert EMAIL not in json.dumps(shown) and json.dumps(shown["trial_name"]) in example
        assert all(EMAIL in json.dumps(row) or "[REDACTED:" in json.dumps(row) for row in rows[:index])
