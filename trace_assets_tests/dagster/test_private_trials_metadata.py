"""The scan asset's metadata lists the trials holding private values, with their tokens and never a
value (a value written as Markdown or HTML neither), `status` counts them per category, and each trial's published row and session
files hold those very tokens (the order publishing meets values in may differ from the scan's:
test_privacy_scan shows redaction going on with the scan's numbering then)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import dagster as dg
import pyarrow.parquet as pq

from trace_assets.definitions import build_definitions, export_trace_run, trace_runs
from trace_assets.defs.resources import config_from_env
from trace_assets.defs.sweep import status_text
from trace_assets_tests.support.helpers import SAMPLE_RUN, SAMPLE_TRACES

# Values whose text would be a link, emphasis or an element if shown as it is.
URL = "http://10.0.3.{n}/[click](javascript:alert(1))"
EMAIL = "a__ops{n}__@corp-research.io"
LITERAL = "<img src=x onerror=alert(1)>"


def _traces(root: Path) -> Path:
    traces = root / "traces"
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, traces / SAMPLE_RUN)
    for i, trial in enumerate(sorted((traces / SAMPLE_RUN / "trace_jobs").iterdir())):
        n = 3 - i % 4  # the scan meets 3 first: numbering is the scan's, not the value's
        stdout = trial / "verifier" / "test-stdout.txt"
        if stdout.exists():
            stdout.write_text(
                stdout.read_text() + f"\nsent to {EMAIL.format(n=n)} via {URL.format(n=n)} by {LITERAL}\n"
            )
        for agent_file in sorted((trial / "agent").rglob("*")):
            if agent_file.suffix in (".json", ".txt"):
                text = agent_file.read_text()
                agent_file.write_text(text.replace("You are an AI assistant", f"You (conv{i}@corp-research.io) are"))
    return traces


def test_the_scan_metadata_lists_trials_with_their_tokens_and_no_value(tmp_path: Path) -> None:
    config = config_from_env(
        {},
        traces_root=str(_traces(tmp_path)),
        publish_root=str(tmp_path / "published"),
        staging_root=str(tmp_path / "staging"),
        on_secret="redact",
        on_private="redact",
        scrub_literals=LITERAL,
        max_rows_per_shard=3,  # rows scanned and redacted 3 at a time: tokens numbered across batches
    )
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(trace_runs.name, [SAMPLE_RUN])
        job = build_definitions(config).resolve_job_def(export_trace_run.name)
        assert job.execute_in_process(instance=instance, partition_key=SAMPLE_RUN, raise_on_error=False).success
        event = instance.get_latest_materialization_event(dg.AssetKey("secret_scan_report"))
        assert event is not None and event.asset_materialization is not None
        metadata = event.asset_materialization.metadata
        status = status_text(instance)

    table = metadata["private_trials"]
    assert isinstance(table, dg.TableMetadataValue)
    listed = [record.data for record in table.records]
    assert {"email", "internal_url", "operator"} <= {entry["category"] for entry in listed}
    assert "private_trials_omitted" not in metadata  # fewer trials than the cap
    shown = json.dumps({key: str(value.value) for key, value in metadata.items()})
    for n in range(4):
        for value in (URL.format(n=n), EMAIL.format(n=n), "10.0.3.", "javascript:", "corp-research"):
            assert value not in shown, value
    assert "<img" not in shown and "onerror" not in shown
    # `trace-assets status` says per category what was found and replaced, never a value.
    [found] = [line for line in status.splitlines() if "private values found: " in line]
    assert "email: " in found and "operator: " in found and "replaced: " in found and "replaced: none" not in found
    for value in ("10.0.3.", "javascript:", "corp-research", "<img", "onerror"):
        assert value not in status, value

    folder = tmp_path / "published" / SAMPLE_RUN
    published: dict[str, str] = {}  # per trial, its row and session files as published
    for shard in sorted((folder / "data").rglob("*.parquet")):
        for row in pq.read_table(shard, columns=["trial_name", "conversations", "verifier_output"]).to_pylist():
            published[row["trial_name"]] = json.dumps(row)
    for session in (folder / "sessions").rglob("*.jsonl"):
        trial = session.stem.split(".")[0]
        published[trial] = published.get(trial, "") + session.read_text()
    assert {entry["trial_name"] for entry in listed} <= set(published)
    for entry in listed:
        for token in entry["tokens"].split(", "):
            assert token in published[entry["trial_name"]], entry
    report = json.loads((folder / "secret_scan.json").read_text())["privacy"]
    assert {t["trial_name"] for t in report["trials"]} == {entry["trial_name"] for entry in listed}
    assert LITERAL not in json.dumps(report) and "javascript" not in json.dumps(report)
