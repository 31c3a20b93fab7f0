"""`trace-assets materialize` to a Hub repo, typed as a user types it: the real CLI process, its token
from `HF_TOKEN` or from a login's token file, publishing the bundled sample to the Hub stand-in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trace_assets_tests.support.cli_processes import run_cli
from trace_assets_tests.support.helpers import SAMPLE_RUN, SAMPLE_TRACES
from trace_assets_tests.support.hub_server import STAND_IN_TOKEN, HubStandIn

REPO = "rl-org/first-day"


def _token_environment(tmp_path: Path, source: str) -> dict[str, str]:
    """HF_HOME is a fresh folder either way, so no login on this machine is what the CLI finds."""
    home = tmp_path / "hf_home"
    home.mkdir()
    if source == "HF_TOKEN":
        return {"HF_HOME": str(home), "HF_TOKEN": STAND_IN_TOKEN}
    (home / "token").write_text(STAND_IN_TOKEN)  # where `hf auth login` keeps it
    return {"HF_HOME": str(home)}


@pytest.mark.parametrize("source", ["HF_TOKEN", "token file"])
def test_the_cli_publishes_the_sample_to_the_hub(hub_server: HubStandIn, tmp_path: Path, source: str) -> None:
    environment = _token_environment(tmp_path, source)
    command = ["materialize", SAMPLE_RUN, "--traces-root", str(SAMPLE_TRACES)]
    command += ["--publish-root", f"hf://datasets/{REPO}", "--on-secret", "redact"]

    dry = run_cli([*command, "--dry-run"], tmp_path, **environment)
    assert dry.returncode == 0, dry.stderr
    [plan] = map(json.loads, dry.stdout.splitlines())
    assert plan["would_publish"]["to"] == f"hf://datasets/{REPO}@main/{SAMPLE_RUN}" and plan["rows"] == 28
    assert not [request for request in hub_server.requests if request.method in ("POST", "PUT")]  # no write

    dry_requests = len(hub_server.requests)
    done = run_cli(command, tmp_path, **environment)
    assert done.returncode == 0, done.stderr
    reads = [r for r in hub_server.requests[dry_requests:] if r.path.endswith(f"/{SAMPLE_RUN}/versions.json")]
    assert len(reads) == 1, reads  # the publish step's, before it publishes (the card's history too): none by the CLI
    [line] = map(json.loads, done.stdout.splitlines())
    assert line["run_id"] == SAMPLE_RUN and line["status"] == "published" and line["rows"] == 28
    assert REPO in line["published_to"]
    files = hub_server.files(REPO)
    assert {f"{SAMPLE_RUN}/{name}" for name in ("README.md", "coverage.json", "secret_scan.json")} <= set(files)
    assert any(f.startswith(f"{SAMPLE_RUN}/data/") and f.endswith(".parquet") for f in files)
    assert STAND_IN_TOKEN not in done.stdout + done.stderr
    for stored in (tmp_path / "dagster_home").rglob("*"):  # the run's logs, config and job snapshot
        assert not stored.is_file() or STAND_IN_TOKEN.encode() not in stored.read_bytes(), stored
