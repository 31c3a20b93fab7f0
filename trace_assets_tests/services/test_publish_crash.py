"""kill -9 of the CLI's process group at several points of a publish, on a local and an S3 publish
root: a reader loading through the card then sees one whole version, the run folder is there, and
the next run finishes (its slot freed) and leaves no leftovers."""

from __future__ import annotations

import json
import shutil

import fsspec
import pyarrow.parquet as pq
import pytest
import yaml

from trace_assets_tests.support.cli_processes import cli_env, start_cli
from trace_assets_tests.support.helpers import SAMPLE_RUN, SAMPLE_TRACES

SESSIONS = 34  # the sample's session files, main and subagent, in either version


def _kill_points(operations: list[str]) -> tuple[list[int], int]:
    """From a recorded publish of 34 rows over 28 (new shards, the other files, the card, the
    sessions' card, stale files): before anything, mid shards, just before the card, between the
    two cards, mid clean-up; and the card's index."""
    card = next(i for i, path in enumerate(operations) if path.endswith("/README.md"))
    assert operations[card + 1].endswith("/sessions/README.md"), operations  # then the sessions' card
    assert 2 <= card < len(operations) - 2, operations  # new shards before them, stale ones after
    # the second operation is still among the new version's files (on S3 put concurrently): a kill
    # there lands mid-upload, some of them put, the card not yet
    assert "/data/" in operations[1] or "/sessions/" in operations[1], operations[:2]
    assert any("/sessions/" in path for path in operations[card + 2 :]), operations  # a new sessions version
    return [0, 1, card, card + 1, card + 2], card


def _card(fs, folder: str) -> dict:
    return yaml.safe_load(fs.cat_file(f"{folder}/README.md").decode().split("---\n")[1])


def _whole_version(fs, folder: str) -> int:
    """Rows a reader loading through the card gets; fails if the card's shards are not all there."""
    card = _card(fs, folder)
    pattern = card["configs"][0]["data_files"][0]["path"]
    shards = sorted(fs.glob(f"{folder}/{pattern}"))
    count = int(shards[0].rsplit("-of-", 1)[1].split(".")[0]) if shards else 0
    assert len(shards) == count > 0, shards
    rows = 0
    for shard in shards:
        with fs.open(shard, "rb") as file:
            rows += pq.ParquetFile(file).metadata.num_rows
    assert rows == card["dataset_info"]["splits"][0]["num_examples"]
    sessions_card = _card(fs, f"{folder}/sessions")  # the session files' own card: a whole version too
    pattern = sessions_card["configs"][0]["data_files"][0]["path"]
    assert len(fs.glob(f"{folder}/sessions/{pattern}")) == SESSIONS
    return rows


def _run(args, env, killed_at=None, timeout=300):
    process = start_cli(args, env, killed_at)
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


@pytest.mark.parametrize("root_kind", ["local", "s3"])
def test_a_publish_killed_anywhere_leaves_a_whole_version(tmp_path, root_kind, s3_endpoint, s3_bucket):
    traces = tmp_path / "traces"
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, traces / SAMPLE_RUN)
    if root_kind == "local":
        root, fs = str(tmp_path / "published"), fsspec.filesystem("file")
    else:
        root, fs = f"s3://{s3_bucket}/published", fsspec.filesystem("s3", endpoint_url=s3_endpoint)
    folder = f"{root}/{SAMPLE_RUN}".removeprefix("s3://")
    env = cli_env(
        tmp_path,
        AWS_ENDPOINT_URL_S3=s3_endpoint,
        TRACE_ASSETS_ON_SECRET="allow",
        TRACE_ASSETS_MAX_ROWS_PER_SHARD="10",
    )
    args = ["materialize", SAMPLE_RUN, "--traces-root", str(traces), "--publish-root", root]
    code, _, err = _run(args, env)
    assert code == 0, err
    assert _whole_version(fs, folder) == 28

    # A reference publish of the 34-row version, recording its operations; then back to 28 rows. Its
    # session files differ too (the sample's planted live keys redacted), so the sessions' card flips.
    newer = [*args, "--subagents", "--on-secret", "redact"]
    operations_log = tmp_path / "operations.log"
    code, _, err = _run(newer, {**env, "TRACE_ASSETS_TEST_OPERATIONS_LOG": str(operations_log)}, 10**6)
    assert code == 0, err
    kill_points, card_operation = _kill_points(operations_log.read_text().splitlines())
    code, _, err = _run([*args, "--allow-shrink"], env)
    assert code == 0, err

    for kill_at in kill_points:
        card_before = fs.cat_file(f"{folder}/README.md")
        code, _, _ = _run(newer, env, killed_at=kill_at)
        assert code == -9
        fs.invalidate_cache()
        rows = _whole_version(fs, folder)  # the folder is there, and its card's version whole
        if kill_at <= card_operation:
            assert fs.cat_file(f"{folder}/README.md") == card_before
        assert rows == (28 if kill_at <= card_operation else 34)
        # back to the 28-row version (a shrink: allowed), so the next kill interrupts a real change
        code, out, err = _run([*args, "--allow-shrink"], env)
        assert code == 0, err
        assert "freed the pool slots of run" in err  # the killed run's hub_commits slot
        assert json.loads(out.splitlines()[-1])["status"] == "published"
        fs.invalidate_cache()
        assert _whole_version(fs, folder) == 28
        leftovers = [p for p in fs.find(folder) if "/." in p]
        assert not leftovers
        assert len(fs.ls(f"{folder}/data")) == 1  # one version's folder
        names = [path.rsplit("/", 1)[1] for path in fs.ls(f"{folder}/sessions", refresh=True)]
        assert len(names) == 2 and "README.md" in names  # the sessions' card and one version's folder
