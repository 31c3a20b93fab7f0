"""Two CLIs on one scope at once, on a fresh and on an initialised Dagster home: both end
correctly, and the published folder loads and equals a clean run's."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from trace_assets_tests.support.cli_processes import cli_env, run_cli, start_cli
from trace_assets_tests.support.helpers import SAMPLE_RUN, SAMPLE_TRACES, load_published

PUBLISHED_AT = re.compile(rb"\d{4}-\d\d-\d\d \d\d:\d\d UTC")


def comparable(path: Path, folder: Path) -> bytes:
    """A published file with what differs between two publishes of the same bytes masked:
    the folder the card's usage snippet names, and the minute in its version history."""
    return PUBLISHED_AT.sub(b"<published>", path.read_bytes().replace(str(folder).encode(), b"<folder>"))


@pytest.mark.parametrize("home", ["fresh", "initialised"])
def test_two_clis_on_one_scope(tmp_path, home):
    traces = tmp_path / "traces"
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, traces / SAMPLE_RUN)
    args = ["materialize", SAMPLE_RUN, "--traces-root", str(traces), "--publish-root", str(tmp_path / "published")]
    if home == "initialised":
        assert run_cli(["runs", "--traces-root", str(traces)], tmp_path).returncode == 0
    env = cli_env(tmp_path, TRACE_ASSETS_ON_SECRET="allow")
    processes = [start_cli(args, env) for _ in range(2)]
    outcomes = [process.communicate(timeout=600) for process in processes]
    for process, (out, err) in zip(processes, outcomes):
        assert process.returncode == 0, err
        assert json.loads(out)["status"] == "published"
    assert any("waiting for rl-sample-run" in err for _, err in outcomes)  # one waited, saying for whom

    clean = tmp_path / "clean"
    clean.mkdir()
    done = run_cli([*args[:-1], str(clean / "published")], clean, TRACE_ASSETS_ON_SECRET="allow")
    assert done.returncode == 0, done.stderr
    ours, theirs = tmp_path / "published" / SAMPLE_RUN, clean / "published" / SAMPLE_RUN
    files = sorted(p.relative_to(ours).as_posix() for p in ours.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(theirs).as_posix() for p in theirs.rglob("*") if p.is_file())
    for name in files:
        if name != "trials.parquet":  # holds source fingerprints of the copies' modification times
            assert comparable(ours / name, ours) == comparable(theirs / name, theirs), name
    assert load_published(ours, tmp_path / "hf_cache").num_rows == 28
