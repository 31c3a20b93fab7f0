"""Daemon against CLI: the same generated runs materialized by `trace-assets materialize` and by a
backfill the real daemon launches (a run worker process per run, as the UI and sensor launch).

    .venv/bin/python benchmarks/bench_daemon.py [--trials 2000] [--repeats 2]
    .venv/bin/python benchmarks/bench_daemon.py --runs 20 --trials 500

One run (the default): issue 13's target is the daemon-launched run within 1.2x of the CLI's run,
each measured as the run's own start-to-end in its instance; the repeats alternate the two sides and
the fastest of each is shown. Also shown: the CLI's whole command, and the daemon side end to end,
from `backfill` to `--wait` returning (the backfill daemon's tick, the queue, the run worker's start,
the steps, the tick that marks the backfill done), and to the run's end.

A sweep (`--runs N`, N copies of one generated run, hard links): issue 21's backfill measure, the
daemon's wall time for all N against the CLI's time for all N (one after another, in one command)
divided by min(cores, the configured concurrency) (dagster.yaml: at most this many runs read the
store at once), target 1.5x. The daemon side's runs are also broken down (`_phases`).

Each side has its own Dagster home in each repeat; a daemon side's daemon and webserver are started before its
timing and stopped after it (up, the sensor's first tick done, which then stays out of it), so only
the side timed runs; each repeat has its own staging and publish folder, so no run finds another's
incremental cache.
"""

from __future__ import annotations

import argparse
import enum
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

if TYPE_CHECKING:
    import dagster as dg

PROJECT_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_DIR))

from benchmarks.bench_pipeline import DEFAULT_PROMPT_SCALE, TreeShape, ensure_tree, run_id_for  # noqa: E402

BIN = Path(sys.executable).parent
RUN_TARGET = 1.2  # issue 13 item 6: a daemon-launched run within 1.2x of the CLI's
SWEEP_TARGET = 1.5  # issue 21 item 6: a backfill within 1.5x of the CLI's time / min(cores, concurrency)
START_SECONDS = 180.0  # the daemon's and webserver's start-up on a loaded machine


class Side(enum.Enum):
    """Who materializes the runs: the CLI in its own process, or a backfill the daemon launches."""

    CLI = "cli"
    DAEMON = "daemon"


@dataclass(frozen=True)
class Timing:
    """One side's figures for one repeat: the command's wall time and its runs as the instance has them."""

    wall: float  # the command, from start to exit
    run_seconds: list[float]  # each run's own start-to-end
    first_queued: float  # seconds from the command's start to its first run's creation
    first_start: float  # ... to its first run's start (queue, launch, the run worker's own start)
    last_end: float  # ... to the last run's end
    phases: dict[str, float]  # seconds summed over the runs, see `_phases`
    events: float  # instance events written per run, on average


def store_concurrency() -> int:
    """How many runs dagster.yaml lets read the store at once: the run limit or the export runs' (all
    partitioned), the lower."""
    runs = yaml.safe_load((PROJECT_DIR / "dagster.yaml").read_text())["concurrency"]["runs"]
    store_limits = [
        limit["limit"]
        for limit in runs["tag_concurrency_limits"]
        if limit["key"] == "dagster/partition" and "value" not in limit
    ]
    return min([runs["max_concurrent_runs"], *store_limits])


def _home(work: Path, side: Side) -> Path:
    return fresh_home(work / side.value / "dagster_home")


def fresh_home(home: Path) -> Path:
    """A fresh Dagster home with its SQLite schemas made: the daemon and the webserver starting
    together on an empty one would both make them (two alembic heads, neither loads)."""
    import dagster as dg

    home.mkdir(parents=True)
    shutil.copyfile(PROJECT_DIR / "dagster.yaml", home / "dagster.yaml")
    with dg.DagsterInstance.from_config(str(home)) as instance:
        instance.get_runs(limit=1)
        instance.get_dynamic_partitions("trace_runs")
        instance.all_instigator_state()
        instance.event_log_storage.get_concurrency_keys()
    return home


def _env(home: Path, traces: Path, outputs: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACE_ASSETS_")}
    env.update(
        DAGSTER_HOME=str(home),
        TRACE_ASSETS_TRACES_ROOT=str(traces),
        TRACE_ASSETS_PUBLISH_ROOT=str(outputs / "published"),
        TRACE_ASSETS_STAGING_ROOT=str(outputs / "staging"),
        TRACE_ASSETS_SETTLE_SECONDS="100000",  # the sensor requests nothing
        TRACE_ASSETS_SENSOR_INTERVAL_SECONDS="100000",  # and ticks once, at start-up, before timing
        TRACE_ASSETS_ON_SECRET="allow",
    )
    return env


def _timed(command: list[str], env: dict[str, str], home: Path, log: Path) -> Timing:
    """Run a command and read back the Dagster runs it made (the runs created after it started)."""
    import dagster as dg

    started_at = time.time()  # the instance's clock: on this VM the monotonic clock can lag it by seconds
    with log.open("a") as stderr:
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=stderr)
    wall = time.time() - started_at
    with dg.DagsterInstance.from_config(str(home)) as instance:
        records = [
            record
            for record in instance.get_run_records()
            if record.create_timestamp.timestamp() >= started_at
            and record.dagster_run.tags.get("dagster/partition") is not None
        ]
        for record in records:
            assert record.dagster_run.status == dg.DagsterRunStatus.SUCCESS, record.dagster_run
        per_run = [_phases(instance, record) for record in records]
    return Timing(
        wall=wall,
        run_seconds=[float(r.end_time or 0) - float(r.start_time or 0) for r in records],
        first_queued=min(r.create_timestamp.timestamp() for r in records) - started_at,
        first_start=min(float(r.start_time or 0) for r in records) - started_at,
        last_end=max(float(r.end_time or 0) for r in records) - started_at,
        phases={name: sum(phases[name] for phases, _ in per_run) for name in PHASES},
        events=sum(events for _, events in per_run) / len(per_run),
    )


PHASES = ("queued", "worker start", "code load", "steps", "in run, between steps")


WORKER_STARTED = "worker started"


def _phases(instance: dg.DagsterInstance, record: dg.RunRecord) -> tuple[dict[str, float], int]:
    """Where one run's time went, from its events: queued (created to dequeued), the run worker's
    start (to its "Started process" event: the launch, the process, Dagster's imports, the
    instance), the code location's load and the plan (to RUN_START), its steps' own time, and the
    rest of the run (between and around the steps); and how many events it wrote."""
    import dagster as dg

    events = instance.get_records_for_run(record.dagster_run.run_id, limit=100_000).records
    first: dict[dg.DagsterEventType | str, float] = {}
    steps = 0.0
    started: dict[str, float] = {}
    for event in events:
        kind = event.event_log_entry.dagster_event_type
        if kind is None:
            continue
        at = event.event_log_entry.timestamp
        first.setdefault(kind, at)
        message = event.event_log_entry.dagster_event.message if event.event_log_entry.dagster_event else None
        if kind == dg.DagsterEventType.ENGINE_EVENT and (message or "").startswith("Started process"):
            first.setdefault(WORKER_STARTED, at)
        step = event.event_log_entry.step_key
        if kind == dg.DagsterEventType.STEP_START and step:
            started[step] = at
        elif kind in (dg.DagsterEventType.STEP_SUCCESS, dg.DagsterEventType.STEP_FAILURE) and step in started:
            steps += at - started.pop(step)
    created = record.create_timestamp.timestamp()
    dequeued = first.get(dg.DagsterEventType.RUN_DEQUEUED, first.get(dg.DagsterEventType.RUN_STARTING, created))
    run_start = first.get(dg.DagsterEventType.RUN_START, dequeued)
    worker_started = first.get(WORKER_STARTED, dequeued)  # the CLI's in-process runs have no worker
    run_seconds = float(record.end_time or 0) - float(record.start_time or 0)
    phases = {
        "queued": dequeued - created,
        "worker start": worker_started - dequeued,
        "code load": run_start - worker_started,
        "steps": steps,
        "in run, between steps": run_seconds - steps,
    }
    return phases, len(events)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def daemon_and_webserver(env: dict[str, str], logs: Path, name: str) -> Iterator[str]:
    """`dagster-daemon run` and a `dagster-webserver` (the backfill's GraphQL API), as `make dev` runs them."""
    port = _free_port()
    commands = {
        f"{name}-daemon": [str(BIN / "dagster-daemon"), "run"],
        f"{name}-webserver": [str(BIN / "dagster-webserver"), "-h", "127.0.0.1", "-p", str(port)],
    }
    processes = [
        subprocess.Popen(
            [*command, "-w", str(PROJECT_DIR / "workspace.yaml")],
            cwd=PROJECT_DIR,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=(logs / f"{name}.log").open("w"),
            start_new_session=True,
        )
        for name, command in commands.items()
    ]
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_for(lambda: _answers(f"{base}/server_info"), "the webserver")
        _wait_for(
            lambda: "new_trace_runs_sensor - listed" in (logs / f"{name}-daemon.log").read_text(),
            "the sensor's first tick",
        )
        yield base
    finally:
        for process in processes:
            os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            process.wait(timeout=60)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _wait_for(ready: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.5)
    raise RuntimeError(f"{what} not up within {START_SECONDS:.0f}s")


def sweep_runs(traces: Path, trials: int, runs: int) -> list[str]:
    """`runs` run ids of `trials` trials each: the generated run itself, or that many hard-linked copies."""
    shape = TreeShape(DEFAULT_PROMPT_SCALE, episode_prompts=True)
    ensure_tree(traces, trials, shape)
    base = run_id_for(trials, shape)
    if runs == 1:
        return [base]
    run_ids = [f"{base}-copy-{i:02d}" for i in range(1, runs + 1)]
    for run_id in run_ids:
        if not (traces / run_id).exists():
            shutil.copytree(traces / base / "trace_jobs", traces / run_id / "trace_jobs", copy_function=os.link)
    return run_ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000, help="trials per run")
    parser.add_argument("--runs", type=int, default=1, help="runs in the sweep (1: the single-run comparison)")
    parser.add_argument("--repeats", type=int, default=2, help="each side this many times, alternating")
    parser.add_argument("--traces", type=Path, help="where the generated runs are kept (default: a temp folder)")
    args = parser.parse_args()
    sides = [Side.CLI, Side.DAEMON]
    with tempfile.TemporaryDirectory(prefix="bench-daemon-") as temp:
        work = Path(temp)
        traces = args.traces or work / "traces"
        run_ids = sweep_runs(traces, args.trials, args.runs)
        logs = work / "logs"
        logs.mkdir()
        results: dict[Side, list[Timing]] = {side: [] for side in sides}
        for repeat in range(args.repeats):
            for side in sides if repeat % 2 == 0 else sides[::-1]:
                home = _home(work / f"repeat-{repeat}", side)  # fresh: the sensor ticks once at start-up
                env = _env(home, traces, work / side.value / f"repeat-{repeat}")
                log = logs / f"{side.value}.log"
                if side is Side.CLI:
                    timing = _timed([str(BIN / "trace-assets"), "materialize", *run_ids], env, home, log)
                else:  # each daemon side's services up only while it is timed, so idle ones cost nothing
                    with daemon_and_webserver(env, logs, f"{side.value}-{repeat}") as base:
                        command = [str(BIN / "trace-assets"), "backfill", *run_ids, "--wait", "--webserver", base]
                        timing = _timed(command, env, home, log)
                results[side].append(timing)
                print(
                    f"repeat {repeat} {side.value:>6}: command {timing.wall:6.1f} s, runs "
                    + ", ".join(f"{s:.1f}" for s in timing.run_seconds)
                    + f" s; after the command's start: first run queued {timing.first_queued:.1f} s,"
                    + f" started {timing.first_start:.1f} s, last run ended {timing.last_end:.1f} s",
                    flush=True,
                )
                print(
                    "  summed over its runs: "
                    + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in timing.phases.items())
                    + f"; {timing.events:.0f} events a run",
                    flush=True,
                )
    if args.runs == 1:
        _report_run(args.trials, results)
    else:
        _report_sweep(args.runs, args.trials, results)


def _report_run(trials: int, results: dict[Side, list[Timing]]) -> None:
    cli = min(results[Side.CLI], key=lambda t: t.run_seconds[0])
    cli_wall = min(t.wall for t in results[Side.CLI])
    print(f"fastest of {len(results[Side.CLI])}, {trials} trials:")
    for side in (side for side in results if side is not Side.CLI):
        daemon = min(results[side], key=lambda t: t.run_seconds[0])
        daemon_wall = min(t.wall for t in results[side])
        daemon_done = min(t.last_end for t in results[side])
        print(
            f"  {side.value}: run start-to-end: CLI {cli.run_seconds[0]:.1f} s, {daemon.run_seconds[0]:.1f} s", end=""
        )
        print(f" = {daemon.run_seconds[0] / cli.run_seconds[0]:.2f}x (target {RUN_TARGET}x)")
        print(f"    CLI command {cli_wall:.1f} s; backfill to its run's end {daemon_done:.1f} s", end="")
        print(
            f" = {daemon_done / cli_wall:.2f}x, to --wait returning {daemon_wall:.1f} s = {daemon_wall / cli_wall:.2f}x"
        )


def _report_sweep(runs: int, trials: int, results: dict[Side, list[Timing]]) -> None:
    concurrency = store_concurrency()
    cores = os.cpu_count() or 1
    parallel = min(cores, concurrency)
    cli_wall = min(t.wall for t in results[Side.CLI])
    cli_runs = min(sum(t.run_seconds) for t in results[Side.CLI])
    budget = cli_wall / parallel
    print(
        f"fastest of {len(results[Side.CLI])}, {runs} runs x {trials} trials, {concurrency} runs at once, {cores} cores:"
    )
    print(f"  CLI: {cli_wall:.1f} s for all, one after another (runs' own time {cli_runs:.1f} s)")
    print(f"  CLI / min({cores} cores, {concurrency} runs) = {budget:.1f} s")
    for side in (side for side in results if side is not Side.CLI):
        wall = min(t.wall for t in results[side])
        done = min(t.last_end for t in results[side])
        span = min(t.last_end - t.first_queued for t in results[side])
        own = min(sum(t.run_seconds) for t in results[side])
        print(f"  {side.value}: backfill to --wait returning {wall:.1f} s = {wall / budget:.2f}x", end="")
        print(f" (target {SWEEP_TARGET}x); to the last run's end {done:.1f} s = {done / budget:.2f}x")
        print(f"    first run queued to last run ended (no backfill tick) {span:.1f} s = {span / budget:.2f}x")
        print(f"    runs' own time summed {own:.1f} s = {own / cli_runs:.2f}x the CLI's")


if __name__ == "__main__":
    main()
