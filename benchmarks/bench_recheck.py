"""A re-check request from the UI against the CLI's: the `recheck_scopes` job launched over GraphQL
(as the Launchpad launches it: queued, dequeued by the daemon, run in a run worker process) against
`trace-assets recheck`, for the same scope, alternating, on one Dagster home.

    .venv/bin/python benchmarks/bench_recheck.py [--repeats 5]

Shown per side, fastest and median: the CLI's whole command; the job from launch to the status
SUCCESS read over GraphQL (polled every 0.1 s: the queue, the run worker's start-up and the op,
about the time it holds one of `max_concurrent_runs`' slots), and the run's own start-to-end in the
instance (from its worker's start-up done).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dagster as dg
from dagster_graphql import DagsterGraphQLClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_daemon import BIN, Side, _env, _home, daemon_and_webserver  # noqa: E402
from trace_assets.cli.backfill_api import query  # noqa: E402
from trace_assets_tests.support.helpers import SAMPLE_RUN, SAMPLE_TRACES  # noqa: E402

SCOPE = "run-a"
WORKSPACE = "{ workspaceOrError { ... on Workspace { locationEntries { name locationOrLoadError { ... on RepositoryLocation { repositories { name } } } } } } }"  # noqa: E501


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-recheck-") as folder:
        work = Path(folder)
        home = _home(work, Side.DAEMON)
        shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, work / "traces" / SCOPE)
        env = _env(home, work / "traces", work)
        with dg.DagsterInstance.from_config(str(home)) as instance:
            instance.add_dynamic_partitions("trace_runs", [SCOPE])
        cli, launched, run_seconds = [], [], []
        with daemon_and_webserver(env, work, "ui") as base:
            client = DagsterGraphQLClient("127.0.0.1", port_number=int(base.rsplit(":", 1)[1]))
            [entry] = query(base, WORKSPACE)["workspaceOrError"]["locationEntries"]
            location, repository = entry["name"], entry["locationOrLoadError"]["repositories"][0]["name"]
            config = {"ops": {"request_recheck": {"config": {"scopes": [SCOPE]}}}}
            for _ in range(args.repeats):
                start = time.monotonic()
                subprocess.run([str(BIN / "trace-assets"), "recheck", SCOPE], env=env, check=True, capture_output=True)
                cli.append(time.monotonic() - start)

                start = time.monotonic()
                run_id = client.submit_job_execution("recheck_scopes", location, repository, run_config=config)
                while (status := client.get_run_status(run_id)) != dg.DagsterRunStatus.SUCCESS:
                    assert status not in (dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED), status
                    time.sleep(0.1)
                launched.append(time.monotonic() - start)
                with dg.DagsterInstance.from_config(str(home)) as instance:
                    record = instance.get_run_record_by_id(run_id)
                    assert record is not None and record.start_time and record.end_time
                    run_seconds.append(record.end_time - record.start_time)
    print(f"{'side':<44} {'fastest s':>10} {'median s':>10}")
    for name, values in (
        ("trace-assets recheck (whole command)", cli),
        ("recheck_scopes: launch to SUCCESS", launched),
        ("recheck_scopes: the run's start to end", run_seconds),
    ):
        print(f"{name:<44} {min(values):>10.2f} {statistics.median(values):>10.2f}")
    fastest, median = min(launched) / min(cli), statistics.median(launched) / statistics.median(cli)
    print(f"launch to SUCCESS against the CLI: {fastest:.2f}x fastest, {median:.2f}x median")


if __name__ == "__main__":
    main()
