"""A sweep of thousands of one-trial scopes into one publish root (issue 47, items 1 and 5).

    .venv/bin/python benchmarks/bench_sweep.py cli WORK [--runs 20] [--steps 100] [--s3]
    .venv/bin/python benchmarks/bench_sweep.py backfill WORK [--runs 20] [--steps 100] [--s3]
    .venv/bin/python benchmarks/bench_sweep.py publish WORK [--small 10] [--large 2000] [--pairs 11] [--s3]
    .venv/bin/python benchmarks/bench_sweep.py settled WORK [--repeats 3] [--code CHECKOUT]

`cli`: through the CLI, wall and CPU per scope at the 10th and the last, then `status`,
`sweep_coverage` and the sensor's tick over the settled sweep, the root card's and index's size,
the instance database's.

`--runs` generated runs of `--steps` one-trial step folders each (`generate_traces.py
--nested-steps`, no episode prompts) under WORK/traces, then one `trace-assets materialize RUN...
--scope step` of them all with a fresh Dagster home (the project's dagster.yaml) and publish folder.
A scope's wall and CPU are read as its JSON line arrives: the time since the line before, and the
process's own CPU (/proc/PID/stat) since then. "At the 10th": the mean over scopes 6-15; "at the
last": over the last 10. A WORK that already holds the materialized sweep is measured again without
materializing it (`--measure-only`, a folder sweep only), so the rest can be measured against later
code. A scope that fails (the generator gives some steps a trial that exports no row, which the
shrink guard refuses to publish) counts like any other.

`backfill`: the same sweep as one `trace-assets backfill RUN... --scope step --wait` that the real
daemon runs (`dagster-daemon` and `dagster-webserver` started for WORK's fresh Dagster home and up
before the clock starts, bench_daemon's; the project's dagster.yaml, so its queue and run limits),
the export sensor kept from requesting. A scope's figures come from the instance afterwards, its
runs in the order they ended: `wall` the time since the run before ended (the pace, as `cli`'s
wall), `run` its own start to end, and bench_daemon's phases of it (queued, worker start, code load,
steps, in run between steps); the runs' CPU is the daemon's run workers' and is not measured. The
whole sweep's wall is the backfill command's, to `--wait` returning; `failed` counts its failed runs.

`--s3` (`cli` and `backfill`): the traces root (generated locally, then uploaded) and the publish
root in a bucket of a moto server in its own process, the S3 stand-in, reached through botocore's
variables (AWS_ENDPOINT_URL_S3 and the fake keys); staging stays in WORK.

`publish`: a scope's `FolderTarget.publish` alone (its folder moved in, the index and the root card
and its plot written) into a root of `--small` scopes and into one of `--large`, alternating,
`--pairs` pairs after a warm-up: the medians and the median pair ratio. The roots hold copies of
one one-trial scope folder as steps of 20 runs, their index and card written once from the folders
(the path a root without an index takes); each pair publishes a fresh copy as a new step into each.
With `--s3` the roots are on a moto server (its own process) holding only their index and root card,
which is all a publish reads of a root that has an index.

`settled`: the export sensor over a WORK `cli` left, every scope made published and unchanged (a
copy of its instance where each partition gets a runless `published_shards` materialization): its
first tick without a cursor (which lists every scope once and reads the instance for each) and a
steady one, medians of `--repeats`; `--code` ticks another checkout's code on the same copy, for
a side-by-side figure.

Then (`cli` and `backfill`), each the median of `--repeats`: `trace-assets status` as a whole process; the
`refresh_sweep_coverage` job in process (its Parquet file and plot written to the root); the
export sensor's tick in process (`new_trace_runs_sensor`, settle 0): the first one, without a cursor,
which lists every scope once, and a steady one with the cursor it left, counting the listings the
tick asked the store for (the root's run folders, a run's step folders, a scope's objects).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import Any

PROJECT_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_DIR))

BIN = Path(sys.executable).parent
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
S3_BUCKET = "bench-sweep"


def run_ids(runs: int, steps: int) -> list[str]:
    return [f"sweep-{steps}x-run-{n:03d}" for n in range(runs)]


def generate(traces: Path, runs: int, steps: int) -> None:
    from trace_assets_tests.support.generate_traces import generate_run

    for n, run_id in enumerate(run_ids(runs, steps)):
        if not (traces / run_id / "manifest.json").exists():
            generate_run(
                traces, run_id, trials=steps, seed=n, prompt_scale=0.02, nested_steps=steps, episode_prompts=False
            )


def environment(work: Path, s3_url: str | None = None) -> dict[str, str]:
    """The sweep's settings: traces and publish roots in WORK, or with `s3_url` in the moto server's
    bucket (botocore's own variables pointing at it); staging stays in WORK."""
    from trace_assets_tests.support.s3_fixtures import FAKE_ACCESS_KEY, FAKE_SECRET_KEY, REGION

    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACE_ASSETS_", "AWS_"))}
    root = f"s3://{S3_BUCKET}" if s3_url else str(work)
    env.update(
        DAGSTER_HOME=str(work / "dagster_home"),
        TRACE_ASSETS_TRACES_ROOT=f"{root}/traces",
        TRACE_ASSETS_PUBLISH_ROOT=f"{root}/published",
        TRACE_ASSETS_STAGING_ROOT=str(work / "staging"),
        TRACE_ASSETS_ON_SECRET="allow",
        TRACE_ASSETS_SETTLE_SECONDS="0",
    )
    if s3_url:
        env.update(
            AWS_ACCESS_KEY_ID=FAKE_ACCESS_KEY,
            AWS_SECRET_ACCESS_KEY=FAKE_SECRET_KEY,
            AWS_DEFAULT_REGION=REGION,
            AWS_ENDPOINT_URL_S3=s3_url,
        )
    return env


def upload_traces(work: Path, s3_url: str) -> None:
    """WORK/traces copied to the traces root in the moto server's bucket."""
    from trace_assets_tests.support.s3_fixtures import make_s3fs, upload_tree

    upload_tree(work / "traces", make_s3fs(s3_url), f"s3://{S3_BUCKET}/traces")


def _cpu(pid: int) -> float:
    """The process's user and system seconds, and its reaped children's."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / CLOCK_TICKS


def materialize(work: Path, runs: list[str], env: dict[str, str]) -> None:
    """One CLI process for the whole sweep; a line per scope to WORK/scopes.jsonl: its wall and CPU."""
    home = work / "dagster_home"
    home.mkdir(parents=True)
    shutil.copyfile(PROJECT_DIR / "dagster.yaml", home / "dagster.yaml")
    command = [str(BIN / "trace-assets"), "materialize", *runs, "--scope", "step"]
    with (work / "materialize.log").open("w") as log, (work / "scopes.jsonl").open("w") as out:
        started = time.monotonic()
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=log, text=True)
        assert process.stdout is not None
        last_wall, last_cpu = started, 0.0
        for line in process.stdout:
            now, cpu = time.monotonic(), _cpu(process.pid)
            try:
                scope = json.loads(line)
            except ValueError:
                continue
            record = {
                "scope": scope.get("scope") or scope.get("run_id"),
                "wall": now - last_wall,
                "cpu": cpu - last_cpu,
            }
            out.write(json.dumps(record) + "\n")
            out.flush()
            last_wall, last_cpu = now, cpu
        process.wait()
    (work / "materialized").write_text(f"{time.monotonic() - started:.1f}\n")


def backfill(work: Path, runs: list[str], env: dict[str, str]) -> None:
    """The sweep as one `trace-assets backfill --wait` the real daemon runs (the project's
    dagster.yaml: its queue and limits), the daemon and webserver up before the command's clock
    starts; then a line per scope to WORK/scopes.jsonl from the instance, in the order the runs
    ended: `wall` the time since the run before ended (the command's start for the first), `run`
    its start to end, and where a run's time went (bench_daemon's phases: queued, worker start, code
    load, steps, in run between steps)."""
    import dagster as dg

    from benchmarks.bench_daemon import _phases, daemon_and_webserver, fresh_home

    home = fresh_home(work / "dagster_home")
    # the sensor ticks once, at start-up, and requests nothing: every run is the backfill's
    quiet = {**env, "TRACE_ASSETS_SETTLE_SECONDS": "100000", "TRACE_ASSETS_SENSOR_INTERVAL_SECONDS": "100000"}
    command = [str(BIN / "trace-assets"), "backfill", *runs, "--scope", "step", "--wait"]
    with daemon_and_webserver(quiet, work, "backfill") as base, (work / "backfill.log").open("w") as log:
        started = time.time()  # the instance's clock
        with (work / "backfill.jsonl").open("w") as out:
            subprocess.run([*command, "--webserver", base], env=quiet, stdout=out, stderr=log)  # exit 1: a scope failed
        (work / "materialized").write_text(f"{time.time() - started:.1f}\n")
    with dg.DagsterInstance.from_config(str(home)) as instance:
        records = [r for r in instance.get_run_records() if r.dagster_run.tags.get("dagster/backfill")]
        records.sort(key=lambda r: float(r.end_time or 0))
        with (work / "scopes.jsonl").open("w") as out:
            last_end = started
            for record in records:
                end = float(record.end_time or 0)
                phases, _ = _phases(instance, record)
                line = {
                    "scope": record.dagster_run.tags.get("dagster/partition"),
                    "status": record.dagster_run.status.value,
                    "wall": end - last_end,
                    "run": end - float(record.start_time or 0),
                    **{name.replace(" ", "_").replace(",", ""): seconds for name, seconds in phases.items()},
                }
                out.write(json.dumps(line) + "\n")
                last_end = end


def timed(call: Any, repeats: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def measure(work: Path, repeats: int, s3_url: str | None) -> dict[str, Any]:
    env = environment(work, s3_url)
    os.environ.update(env)
    import dagster as dg

    from trace_assets.definitions import build_definitions
    from trace_assets.defs.resources import config_from_env
    from trace_assets.publishing.root_card import INDEX, ROOT_CARD

    figures: dict[str, Any] = {}
    figures["status_s"], _ = timed(
        lambda: subprocess.run([str(BIN / "trace-assets"), "status"], env=env, check=True, capture_output=True),
        repeats,
    )
    defs = build_definitions(config_from_env(env))
    with dg.DagsterInstance.from_config(str(work / "dagster_home")) as instance:
        job = defs.resolve_job_def("refresh_sweep_coverage")
        figures["sweep_coverage_s"], _ = timed(lambda: job.execute_in_process(instance=instance), repeats)
        figures.update(sensor_ticks(defs, instance, 1, repeats))
    figures["root_card_kB"] = published_size(work, ROOT_CARD, s3_url) / 1e3
    figures["index_kB"] = published_size(work, INDEX, s3_url) / 1e3
    figures["instance_MB"] = sum(f.stat().st_size for f in (work / "dagster_home").rglob("*.db")) / 1e6
    return figures


def published_size(work: Path, name: str, s3_url: str | None) -> int:
    """The bytes of a file at the publish root's top."""
    if not s3_url:
        return (work / "published" / name).stat().st_size
    import boto3

    from trace_assets_tests.support.s3_fixtures import REGION

    client = boto3.client("s3", endpoint_url=s3_url, region_name=REGION)
    return int(client.head_object(Bucket=S3_BUCKET, Key=f"published/{name}")["ContentLength"])


def sensor_ticks(defs: Any, instance: Any, first_repeats: int, repeats: int) -> dict[str, Any]:
    """The export sensor's first tick (no cursor; the median of `first_repeats`) and a steady one
    with the cursor it left (of `repeats`), in process, with the listings each asked the store for."""
    from trace_assets.store.trace_store import TraceStore
    from trace_assets_tests.support.sensor_ticks import evaluated_tick

    figures: dict[str, Any] = {}
    listings: Counter[str] = Counter()
    for name in ("run_folders", "scopes", "iter_run"):  # the root's runs, a run's step folders, a scope's objects
        original = getattr(TraceStore, name)

        def counted(*args: Any, _original: Any = original, _name: str = name, **kwargs: Any) -> Any:
            listings[_name] += 1
            return _original(*args, **kwargs)

        setattr(TraceStore, name, counted)

    def tick(cursor: str | None) -> Any:
        return evaluated_tick(defs, instance, cursor)

    figures["first_tick_s"], first = timed(lambda: tick(None), first_repeats)
    figures["first_tick_listings"] = {k: v / first_repeats for k, v in listings.items()}
    figures["first_tick_requests"] = len(first.run_requests or [])
    listings.clear()
    figures["steady_tick_s"], steady = timed(lambda: tick(first.cursor), repeats)
    figures["steady_tick_listings"] = {k: v / repeats for k, v in listings.items()}
    figures["steady_tick_requests"] = len(steady.run_requests or [])
    return figures


def settled(work: Path, repeats: int) -> dict[str, Any]:
    """The sensor over a settled sweep: WORK's instance copied to WORK/settled_home once, where every
    partition gets a runless `published_shards` materialization (as a report from outside a run
    would), so every scope is published and unchanged; then `sensor_ticks` there."""
    import dagster as dg

    from trace_assets.definitions import build_definitions
    from trace_assets.defs.partitions import TRACE_RUNS
    from trace_assets.defs.resources import config_from_env

    home = work / "settled_home"
    env = {**environment(work), "DAGSTER_HOME": str(home)}
    if not home.exists():
        shutil.copytree(work / "dagster_home", home)
        with dg.DagsterInstance.from_config(str(home)) as instance:
            for key in instance.get_dynamic_partitions(TRACE_RUNS):
                instance.report_runless_asset_event(
                    dg.AssetMaterialization(asset_key="published_shards", partition=key)
                )
    os.environ.update(env)
    defs = build_definitions(config_from_env(env))
    with dg.DagsterInstance.from_config(str(home)) as instance:
        return {
            "partitions": len(instance.get_dynamic_partitions(TRACE_RUNS)),
            **sensor_ticks(defs, instance, repeats, repeats),
        }


def per_scope(work: Path) -> dict[str, float]:
    """Each of a scope's figures (`materialize`'s or `backfill`'s) at the 10th and the last, and
    how many of the backfill's runs failed."""
    records = [json.loads(line) for line in (work / "scopes.jsonl").read_text().splitlines()]
    early, late = records[5:15], records[-10:]
    mean = lambda rs, key: statistics.mean(r[key] for r in rs)  # noqa: E731
    figures: dict[str, float] = {"scopes": len(records)}
    if "status" in records[0]:
        figures["failed"] = sum(r["status"] != "SUCCESS" for r in records)
    for key in (key for key, value in records[0].items() if isinstance(value, float)):
        figures[f"{key}_10th_s"] = mean(early, key)
        figures[f"{key}_last_s"] = mean(late, key)
    figures["wall_last_over_10th"] = mean(late, "wall") / mean(early, "wall")
    figures["materialize_s"] = float((work / "materialized").read_text())
    return figures


def one_scope(work: Path) -> Path:
    """A one-trial scope's dataset folder, built once."""
    from trace_assets.core.accounting import Coverage
    from trace_assets.core.scope import RunScope
    from trace_assets.publishing.dataset_folder import build_run_folder
    from trace_assets.steps.staging import RunStaging
    from trace_assets.store.trace_store import TraceStore
    from trace_assets_tests.support.generate_traces import generate_run
    from trace_assets_tests.support.helpers import run_steps

    folder = work / "one"
    if not folder.exists():
        generate_run(work / "one-traces", "r", trials=1, seed=5, prompt_scale=0.02, episode_prompts=False)
        run_steps(TraceStore(str(work / "one-traces"), walk_workers=1), "r", work / "one-staging")
        staging = RunStaging(work / "one-staging", RunScope("r"))
        coverage = Coverage.from_dict(json.loads(staging.coverage.read_text()))
        build_run_folder(folder, staging.require_rows(), staging.statuses, coverage, {"verdict": "clean"}, 3)
    return folder


def _file_of(root: Path, scope: Any, name: str) -> bytes | None:
    path = root / scope.key / name
    return path.read_bytes() if path.is_file() else None


def moto(stack: ExitStack) -> str:
    """A moto server in a process of its own, stopped with `stack`, holding the benchmark's bucket."""
    import boto3

    from benchmarks.bench_s3_publish import moto_server
    from trace_assets_tests.support.s3_fixtures import FAKE_ACCESS_KEY, FAKE_SECRET_KEY, REGION

    os.environ.update(AWS_ACCESS_KEY_ID=FAKE_ACCESS_KEY, AWS_SECRET_ACCESS_KEY=FAKE_SECRET_KEY)
    server, url = moto_server()
    stack.callback(server.kill)
    boto3.client("s3", endpoint_url=url, region_name=REGION).create_bucket(Bucket=S3_BUCKET)
    return url


def on_s3(root: Path, name: str, url: str) -> Any:
    """A FolderTarget on the moto server whose root holds `root`'s index and card."""
    import boto3

    from trace_assets.defs.resources import ObjectStorage
    from trace_assets.publishing import root_card
    from trace_assets.publishing.targets import FolderTarget
    from trace_assets.store.s3_options import storage_options
    from trace_assets_tests.support.s3_fixtures import REGION

    client = boto3.client("s3", endpoint_url=url, region_name=REGION)
    for file in (root_card.INDEX, root_card.ROOT_CARD):
        client.put_object(Bucket=S3_BUCKET, Key=f"{name}/{file}", Body=(root / file).read_bytes())
    return FolderTarget(
        f"s3://{S3_BUCKET}/{name}", storage_options(ObjectStorage(endpoint_url=url, region_name=REGION), "s3://")
    )


def publish_pairs(work: Path, small: int, large: int, pairs: int, s3_url: str | None) -> dict[str, Any]:
    from trace_assets.core.scope import RunScope
    from trace_assets.publishing import root_card
    from trace_assets.publishing.targets import FolderTarget

    source = one_scope(work)
    roots = {}
    for n in (small, large):
        root = work / f"root-{n}"
        if not (root / root_card.INDEX).exists():
            scopes = [RunScope(f"run-{i % 20:02d}", f"step-{i // 20 + 1}") for i in range(n)]
            for scope in scopes:
                shutil.copytree(source, root / scope.key)
            entries = root_card.scopes_entries(scopes, partial(_file_of, root))
            (root / root_card.INDEX).write_text(root_card.index_text(entries))
            (root / root_card.ROOT_CARD).write_text(root_card.root_card(entries))
        roots[n] = FolderTarget(str(root))
    if s3_url:
        roots = {n: on_s3(work / f"root-{n}", f"root-{n}", s3_url) for n in roots}
    times: dict[int, list[float]] = {n: [] for n in roots}
    for pair in range(pairs + 1):  # the first warms up
        scope = RunScope("new-run", f"step-{pair + 1}")
        for n, target in roots.items():
            shutil.rmtree(work / "copy", ignore_errors=True)
            shutil.copytree(source, work / "copy")
            started = time.perf_counter()
            target.publish(work / "copy", scope)
            if pair:
                times[n].append(time.perf_counter() - started)
    if not s3_url:
        for n in roots:
            shutil.rmtree(work / f"root-{n}" / "new-run")  # the roots stay at their size (their index entries stay)
    ratios = [b / a for a, b in zip(times[small], times[large])]
    return {
        f"publish_at_{small}_ms": statistics.median(times[small]) * 1000,
        f"publish_at_{large}_ms": statistics.median(times[large]) * 1000,
        "ratio_median": statistics.median(ratios),
        "ratio_range": [min(ratios), max(ratios)],
        f"index_kB_at_{large}": (work / f"root-{large}" / root_card.INDEX).stat().st_size / 1e3,
        f"card_kB_at_{large}": (work / f"root-{large}" / root_card.ROOT_CARD).stat().st_size / 1e3,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    modes = parser.add_subparsers(dest="mode", required=True)
    sweep = argparse.ArgumentParser(add_help=False)
    sweep.add_argument("work", type=Path)
    sweep.add_argument("--runs", type=int, default=20)
    sweep.add_argument("--steps", type=int, default=100)
    sweep.add_argument("--repeats", type=int, default=3)
    sweep.add_argument("--s3", action="store_true", help="the traces and publish roots on a moto server")
    cli = modes.add_parser("cli", parents=[sweep])
    cli.add_argument("--measure-only", action="store_true", help="the sweep is materialized in WORK already")
    modes.add_parser("backfill", parents=[sweep])
    publish = modes.add_parser("publish")
    publish.add_argument("work", type=Path)
    publish.add_argument("--small", type=int, default=10)
    publish.add_argument("--large", type=int, default=2000)
    publish.add_argument("--pairs", type=int, default=11)
    publish.add_argument("--s3", action="store_true", help="the roots on a moto server")
    ticks = modes.add_parser("settled")
    ticks.add_argument("work", type=Path, help="a WORK `cli` materialized (its instance, traces and partitions)")
    ticks.add_argument("--repeats", type=int, default=3)
    ticks.add_argument("--code", type=Path, help="the checkout whose trace_assets ticks (default: this one)")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.mode == "settled":
        if args.code:
            sys.path.insert(0, str(args.code.resolve()))
        figures = settled(args.work, args.repeats)
    elif args.mode == "publish":
        with ExitStack() as stack:
            url = moto(stack) if args.s3 else None
            figures = publish_pairs(args.work, args.small, args.large, args.pairs, url)
    else:
        measure_only = args.mode == "cli" and args.measure_only
        if measure_only and args.s3:
            parser.error("--measure-only measures a folder: the moto server's objects went with its process")
        with ExitStack() as stack:
            url = moto(stack) if args.s3 else None
            if not measure_only:
                generate(args.work / "traces", args.runs, args.steps)
                if url:
                    upload_traces(args.work, url)
                through = materialize if args.mode == "cli" else backfill
                through(args.work, run_ids(args.runs, args.steps), environment(args.work, url))
            figures = {**per_scope(args.work), **measure(args.work, args.repeats, url)}
    print(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
