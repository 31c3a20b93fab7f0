"""The incremental cache cannot serve stale rows: a file re-synced with its old size and mtime
(`cp -p`, `rsync -a`, `tar x`) is read again, as the local fingerprint holds inode and ctime."""

from __future__ import annotations

import shutil
import subprocess

from trace_assets.store.trace_store import TraceStore
from trace_assets_tests.support.bad_input import USER, result_json, trajectory
from trace_assets_tests.support.helpers import run_steps

AGENT = {"step_id": 2, "source": "agent", "message": "OLD ANSWER"}


def test_cp_p_with_same_size_and_mtime_publishes_the_new_content(tmp_path):
    trial = tmp_path / "traces" / "run" / "trace_jobs" / "task__1"
    (trial / "agent").mkdir(parents=True)
    (trial / "result.json").write_bytes(result_json("task__1"))
    old = trajectory([USER, AGENT])
    (trial / "agent" / "trajectory.json").write_bytes(old)
    store = TraceStore(str(tmp_path / "traces"))
    rows, _, _ = run_steps(store, "run", tmp_path / "staging")
    assert "OLD ANSWER" in rows[0]["conversations"][1]["content"]

    new = old.replace(b"OLD ANSWER", b"NEW ANSWER")
    assert len(new) == len(old)
    (tmp_path / "synced").mkdir()
    (tmp_path / "synced" / "trajectory.json").write_bytes(new)
    shutil.copystat(trial / "agent" / "trajectory.json", tmp_path / "synced" / "trajectory.json")
    subprocess.run(
        ["cp", "-p", tmp_path / "synced" / "trajectory.json", trial / "agent" / "trajectory.json"], check=True
    )

    rows, _, _ = run_steps(store, "run", tmp_path / "staging")
    assert "NEW ANSWER" in rows[0]["conversations"][1]["content"]
