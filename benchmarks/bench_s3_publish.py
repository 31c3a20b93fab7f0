"""Wall time of publishing a new version to S3 with latency added to every request, against none
(issue 26 item 1).

    .venv/bin/python benchmarks/bench_s3_publish.py [--trials 300] [--latencies 0,50] [--concurrency 1,32] [--repeats 3]

One generated run (with its session files) is built once into a dataset folder, locally; a second
build is the same files under other version folders (new shard and session versions, as a new
version of a run has). A moto server (its own process) holds the publish root; every measurement
is `FolderTarget.publish` of one build over the other (so each uploads every shard and session
file, flips the cards, updates the root card and removes the old version's files) through a
FaultProxy adding the given milliseconds before each request, as a distant region does. Each
latency is measured at each `publish_concurrency` (1: one request after another, as before), side
by side, interleaved; the ratio is the wall time against the same concurrency at 0 ms.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_pipeline import (  # noqa: E402
    DEFAULT_PROMPT_SCALE,
    MAX_ROWS_PER_SHARD,
    S3_CREDENTIALS,
    S3_REGION,
    TreeShape,
    ensure_tree,
    run_id_for,
    table,
)

TARGET = {50: 1.3}  # latency ms -> largest wall-time ratio against 0 ms, at the default concurrency
BUCKET = "bench-publish"


def build_folder(traces_root: Path, run_id: str, work: Path) -> Path:
    """The run's dataset folder as `published_shards` lays it out (local steps, session files on)."""
    from trace_assets.core.scope import RunScope
    from trace_assets.publishing.dataset_folder import build_run_folder
    from trace_assets.secret_scan.scanner import ScanOptions
    from trace_assets.steps.scan import scan_run
    from trace_assets.steps.sessions import staged_sessions
    from trace_assets.steps.staging import RunStaging
    from trace_assets.store.trace_store import TraceStore
    from trace_assets_tests.support.helpers import stage_rows

    store = TraceStore(str(traces_root))
    staging = RunStaging(work / "staging", RunScope(run_id))
    staged = stage_rows(store, staging, batch_size=256, sessions=True, rows_per_part=MAX_ROWS_PER_SHARD)
    coverage, _ = staged["last_episode_rows"]
    sessions = staged_sessions(staging)
    report = scan_run(staging.require_rows(), run_id, ScanOptions(), sessions)
    build = work / "build-a"
    build_run_folder(
        build, staging.require_rows(), staging.statuses, coverage, report, MAX_ROWS_PER_SHARD, None, None, sessions
    )
    return build


def other_version(build: Path, out: Path) -> Path:
    """The same files under other version folders: `data/<v>` and `sessions/<v>` renamed, the cards
    naming them. A stand-in for the next version of a run (the publish reads no file's content)."""
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(build, out)
    for versioned in ("data", "sessions"):
        for folder in [p for p in (out / versioned).iterdir() if p.is_dir()]:
            renamed = folder.with_name(f"{folder.name[:-4]}beef")
            folder.rename(renamed)
            for card in (out / "README.md", out / "sessions" / "README.md"):
                if card.exists():
                    card.write_text(card.read_text().replace(folder.name, renamed.name))
    return out


def moto_server() -> tuple[subprocess.Popen, str]:
    """moto in a process of its own, so it takes no GIL from the publish being measured."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    moto = Path(sys.executable).with_name("moto_server")
    server = subprocess.Popen(
        [str(moto), "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            urllib.request.urlopen(f"{url}/moto-api/", timeout=1)
            return server, url
        except OSError:
            time.sleep(0.1)
    server.kill()
    raise RuntimeError("moto_server did not start")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--latencies", default="0,50", help="milliseconds added per request; 0 first")
    parser.add_argument("--concurrency", default="1,32", help="publish_concurrency values, side by side")
    parser.add_argument("--repeats", type=int, default=3, help="publishes per setting, the fastest counts")
    parser.add_argument("--work-dir", help="keep the generated tree here (default: a temp dir, removed)")
    args = parser.parse_args(argv)
    latencies = sorted({0, *(int(ms) for ms in args.latencies.split(","))})
    concurrencies = [int(c) for c in args.concurrency.split(",")]

    import boto3

    from trace_assets.core.defaults import DEFAULT_PUBLISH_CONCURRENCY
    from trace_assets.core.scope import RunScope
    from trace_assets.defs.resources import ObjectStorage
    from trace_assets.publishing.targets import FolderTarget
    from trace_assets.store.s3_options import storage_options
    from trace_assets_tests.support.fault_proxy import FaultProxy

    for leaked in ("AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_PROFILE"):
        os.environ.pop(leaked, None)
    os.environ.update(S3_CREDENTIALS)
    work = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="bench-s3-publish-"))
    shape = TreeShape(DEFAULT_PROMPT_SCALE, False)
    started = time.perf_counter()
    ensure_tree(work / "traces", args.trials, shape)
    run_id = run_id_for(args.trials, shape)
    print("building the dataset folder ...", file=sys.stderr, flush=True)
    builds = [build_folder(work / "traces", run_id, work), None]
    builds[1] = other_version(builds[0], work / "build-b")
    files = sum(1 for p in builds[0].rglob("*") if p.is_file())
    size = sum(p.stat().st_size for p in builds[0].rglob("*") if p.is_file())
    scope = RunScope(run_id)
    results: dict[tuple[int, int], float] = {}
    requests: dict[tuple[int, int], dict[str, int]] = {}
    server, url = moto_server()
    try:
        boto3.client("s3", endpoint_url=url, region_name=S3_REGION).create_bucket(Bucket=BUCKET)
        with FaultProxy(url) as proxy:
            options = storage_options(ObjectStorage(endpoint_url=proxy.url, region_name=S3_REGION), "s3://")
            turn = 0
            FolderTarget(f"s3://{BUCKET}/published", options).publish(builds[turn], scope)  # the old version
            for _ in range(args.repeats):  # interleaved, so drifting load hits every setting alike
                for ms in latencies:
                    for concurrency in concurrencies:
                        turn = 1 - turn
                        proxy.latency = ms / 1000
                        proxy.reset_stats()
                        print(f"{ms} ms, concurrency {concurrency}", file=sys.stderr, flush=True)
                        target = FolderTarget(f"s3://{BUCKET}/published", options, concurrency)
                        began = time.perf_counter()
                        target.publish(builds[turn], scope)
                        wall = time.perf_counter() - began
                        if wall < results.get((ms, concurrency), float("inf")):
                            results[(ms, concurrency)] = wall
                        requests[(ms, concurrency)] = proxy.stats
    finally:
        server.terminate()
        server.wait()
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)

    rows: list[list[Any]] = []
    passed = True
    for ms in latencies:
        row: list[Any] = [ms]
        for concurrency in concurrencies:
            wall = results[(ms, concurrency)]
            row += [f"{wall:.2f}", f"{wall / results[(0, concurrency)]:.2f}x"]
        target_ratio = TARGET.get(ms)
        if target_ratio is not None and DEFAULT_PUBLISH_CONCURRENCY in concurrencies:
            ratio = results[(ms, DEFAULT_PUBLISH_CONCURRENCY)] / results[(0, DEFAULT_PUBLISH_CONCURRENCY)]
            passed &= ratio <= target_ratio
            row.append(f"<= {target_ratio}x {'PASS' if ratio <= target_ratio else 'FAIL'}")
        else:
            row.append("")
        rows.append(row)
    headers = ["latency ms"]
    for concurrency in concurrencies:
        headers += [f"wall s, concurrency {concurrency}", "ratio"]
    headers.append(f"target (concurrency {DEFAULT_PUBLISH_CONCURRENCY})")
    last = requests[(latencies[-1], concurrencies[-1])]
    print(
        f"{args.trials} trials: {files:,} files, {size / 2**20:.1f} MiB a version; fastest of {args.repeats}; "
        f"requests per publish: {last['requests']} ({last['put']} PUT, {last['list']} LIST, {last['head']} HEAD, "
        f"{last['get']} GET, {last['other']} other); load average {os.getloadavg()[0]:.2f}; "
        f"took {time.perf_counter() - started:.0f}s"
    )
    print(table(headers, rows))
    return 0 if passed else 2


if __name__ == "__main__":
    sys.exit(main())
