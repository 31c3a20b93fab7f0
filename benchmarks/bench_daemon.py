"""Daemon against CLI: one generated run materialized by `trace-assets materialize` and by a backfill
the real daemon launches (a run worker process, as the UI and sensor launch), side by side.

    .venv/bin/python benchmarks/bench_daemon.py [--trials 2000]

Each side gets its own Dagster home, staging and publish folder. The daemon is started first and
its start-up is not timed; the daemon side is timed from `backfill` to `--wait` returning (queue,
launch, run worker start, the steps) and also as the run's own start-to-end in the instance.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_DIR))

from benchmarks.bench_pipeline import DEFAULT_PROMPT_SCALE, TreeShape, ensure_tree, run_id_for  # noqa: E402

BIN = Path(sys.executable).parent


def _env(work: Path, side: str, traces: Path) -> dict[str, str]:
    home = work / side / "dagster_home"
    home.mkdir(parents=True)
    shutil.copyfile(PROJECT_DIR / "dagster.yaml", home / "dagster.yaml")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACE_ASSETS_")}
    env.update(
        DAGSTER_HOME=str(home),
        TRACE_ASSETS_TRACES_ROOT=str(traces),
        TRACE_ASSETS_PUBLISH_ROOT=str(work / side / "published"),
        TRACE_ASSETS_STAGING_ROOT=str(work / side / "staging"),
        TRACE_ASSETS_SETTLE_SECONDS="100000",  # the sensor stays out of it
        TRACE_ASSETS_ON_SECRET="allow",
    )
    return env


def _timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def _run_seconds(env: dict[str, str]) -> float:
    import dagster as dg

    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        run = instance.get_runs(limit=1)[0]
        stats = instance.get_run_stats(run.run_id)
        assert run.status == dg.DagsterRunStatus.SUCCESS, run.status
        return float(stats.end_time or 0) - float(stats.start_time or 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    args = parser.parse_args()
    shape = TreeShape(DEFAULT_PROMPT_SCALE, episode_prompts=True)
    with tempfile.TemporaryDirectory(prefix="bench-daemon-") as temp:
        work = Path(temp)
        ensure_tree(work / "traces", args.trials, shape)
        run_id = run_id_for(args.trials, shape)
        cli_env = _env(work, "cli", work / "traces")
        cli_seconds = _timed([str(BIN / "trace-assets"), "materialize", run_id], cli_env)
        daemon_env = _env(work, "daemon", work / "traces")
        daemon = subprocess.Popen(
            [str(BIN / "dagster-daemon"), "run", "-w", str(PROJECT_DIR / "workspace.yaml")],
            cwd=PROJECT_DIR,
            env=daemon_env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            time.sleep(10)  # the daemon's own start-up, not part of a run
            daemon_seconds = _timed([str(BIN / "trace-assets"), "backfill", run_id, "--wait"], daemon_env)
        finally:
            os.killpg(daemon.pid, signal.SIGTERM)
            daemon.wait(timeout=60)
        run_seconds = _run_seconds(daemon_env)
    print(f"{'trials':>8} {'cli s':>8} {'daemon s':>9} {'daemon run s':>13} {'daemon/cli':>11} {'run/cli':>8}")
    print(
        f"{args.trials:>8} {cli_seconds:>8.1f} {daemon_seconds:>9.1f} {run_seconds:>13.1f} "
        f"{daemon_seconds / cli_seconds:>11.2f} {run_seconds / cli_seconds:>8.2f}"
    )


if __name__ == "__main__":
    main()
