"""Throughput, memory and S3 round trips of the pipeline's steps, measured against Harbor's exporter.

    .venv/bin/python benchmarks/bench_pipeline.py [--quick] [--sizes 400,2000,1000,10000] [--json out.json]
    .venv/bin/python benchmarks/bench_pipeline.py --large-trajectories 8:100   (peak RSS, 100 MB trajectories)
    .venv/bin/python benchmarks/bench_pipeline.py --whole-process [--trials 400] (start-up: the CLI against Harbor)

Every local measurement is a whole child process (start-up included, so it cancels out of the
marginal cost) on a tree from trace_assets_tests/support/generate_traces.py, with a fresh staging folder so no
step reuses an earlier materialization. Ours runs listing -> scored -> rows -> secret scan ->
shards; Harbor runs `export_traces(episodes="last", ...)` in its own interpreter on the same
trace_jobs/ folder. Sizes come in pairs (small, big): the marginal cost per trial is
(time(big) - time(small)) / (big - small), and peak RSS should barely grow from small to big.
The S3 part serves a tree from moto through a counting FaultProxy and checks that the steps
list once and fetch only the objects the rows are made from.

Child modes (used by the parent, runnable by hand):
    bench_pipeline.py _run TRACES_ROOT RUN_ID STAGING_ROOT --steps all|listing|after-listing [--endpoint URL] --result FILE
    <harbor python> bench_pipeline.py _harbor TRACE_JOBS_DIR --result FILE
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# Only the standard library at module level: Harbor's interpreter imports this file for `_harbor`.
PROJECT_DIR = Path(__file__).resolve().parent.parent
# bench_compare.py --sessions runs this file against another checkout's code: BENCH_CODE_DIR names it.
sys.path.insert(0, os.environ.get("BENCH_CODE_DIR") or str(PROJECT_DIR))

DEFAULT_HARBOR_PYTHON = Path("/tmp/harbor-venv/bin/python")
DEFAULT_SIZES = (400, 2000)
QUICK_SIZES = (100, 400)
DEFAULT_S3_TRIALS = 400
QUICK_S3_TRIALS = 40
DEFAULT_PROMPT_SCALE = 0.02  # episode prompts are never read by either tool; this only saves disk
SEED = 0
BATCH_SIZE = 256  # TraceAssetsConfig's defaults
MAX_CONCURRENCY = 64
MAX_ROWS_PER_SHARD = 2000

HARBOR_SPEEDUP_TARGET = 5.0  # marginal throughput with the defaults (session files on), issue 21
MEMORY_GROWTH_TARGET = 1.5
FETCH_OVERHEAD_TARGET = 1.2
S3_PAGE_SIZE = 1000  # keys per ListObjectsV2 page

S3_BUCKET = "bench-traces"
S3_REGION = "us-east-1"
S3_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": S3_REGION}
# Keeps Harbor (litellm, datasets) off the network: without it litellm retries a download at import.
HARBOR_OFFLINE_ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}


# --------------------------------------------------------------------------- child: our steps


def run_steps_child(args: argparse.Namespace) -> None:
    """Run the steps on one run and write what happened, with in-process seconds per step."""
    from trace_assets.core.scope import RunScope
    from trace_assets.harbor.options import ExportOptions
    from trace_assets.publishing.dataset_folder import build_run_folder
    from trace_assets.secret_scan.scanner import ScanOptions
    from trace_assets.steps.listing import build_listing
    from trace_assets.steps.rows import export_rows
    from trace_assets.steps.scan import scan_run
    from trace_assets.steps.scoring import score_trials
    from trace_assets.steps.staging import RunStaging
    from trace_assets.store.trace_store import TraceStore

    options: dict[str, Any] = {}
    if args.endpoint:
        from trace_assets.defs.resources import ObjectStorage
        from trace_assets.store.s3_options import storage_options

        options = storage_options(ObjectStorage(endpoint_url=args.endpoint, region_name=S3_REGION), args.traces_root)
    store = TraceStore(args.traces_root, options, MAX_CONCURRENCY, fetch_ahead=args.fetch_ahead)
    staging = RunStaging(Path(args.staging_root), RunScope(args.run_id))
    seconds: dict[str, float] = {}
    peak_rss_after: dict[str, float] = {}  # says which step sets the process's peak
    result: dict[str, Any] = {"seconds": seconds, "peak_rss_mib_after": peak_rss_after}

    def timed(name: str, step):
        started = time.perf_counter()
        value = step()
        seconds[name] = time.perf_counter() - started
        peak_rss_after[name] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return value

    if args.steps in ("all", "listing"):
        listing = timed("listing", lambda: build_listing(store, staging))
        result.update(trial_dirs=listing.trial_dirs, objects=listing.objects, listed_bytes=listing.bytes)
    if args.steps in ("all", "after-listing"):
        sessions_folder = None
        if args.sessions:  # as the definitions' default: session files staged, scanned and published
            from trace_assets.steps.sessions import SessionWriter, staged_sessions

            sessions_folder = staged_sessions(staging)
        timed("scored", lambda: score_trials(store, staging, BATCH_SIZE, lambda _: None))
        coverage, _ = timed(
            "rows",
            lambda: export_rows(
                store,
                staging,
                ExportOptions(),
                BATCH_SIZE,
                lambda _: None,
                MAX_ROWS_PER_SHARD,
                SessionWriter(sessions_folder) if sessions_folder else None,
            ),
        )
        report = timed("scan", lambda: scan_run(staging.require_rows(), args.run_id, ScanOptions(), sessions_folder))
        build = staging.folder / "publish"
        shards = timed(
            "shards",
            lambda: build_run_folder(
                build,
                staging.require_rows(),
                staging.statuses,
                coverage,
                report,
                MAX_ROWS_PER_SHARD,
                None,
                None,
                sessions_folder,
            ),
        )
        if args.publish:  # into a local folder target beside the staging folder
            from trace_assets.publishing.targets import FolderTarget

            root = Path(args.staging_root).parent / f"{Path(args.staging_root).name}-published"
            timed("publish", lambda: FolderTarget(str(root)).publish(build, RunScope(args.run_id)))
        result.update(
            trial_dirs=coverage.trial_dirs, rows=coverage.rows, exported=coverage.exported,
            verdict=report["verdict"], shards=len(shards.files),
        )  # fmt: skip
    Path(args.result).write_text(json.dumps(result))


# --------------------------------------------------------------------------- child: Harbor


def run_harbor_child(args: argparse.Namespace) -> None:
    """Harbor's own last-episode export of a trace_jobs/ folder, into an in-memory Dataset."""
    from harbor.utils.traces_utils import export_traces

    started = time.perf_counter()
    dataset = export_traces(
        args.trace_jobs,
        episodes="last",
        include_instruction=True,
        include_verifier_output=True,
        export_subagents=False,
        use_rich_progress=False,
    )
    seconds = {"export_traces": time.perf_counter() - started}
    Path(args.result).write_text(
        json.dumps({"seconds": seconds, "rows": len(dataset), "python": platform.python_version()})
    )


# --------------------------------------------------------------------------- measuring children


@dataclass
class Measurement:
    wall_seconds: float
    cpu_seconds: float  # user + system: less sensitive than wall time to other work on the machine
    peak_rss_mib: float
    report: dict[str, Any]


class ChildFailed(RuntimeError):
    pass


def measure(command: list[str], env: dict[str, str] | None = None, result_file: bool = True) -> Measurement:
    """Run a child to the end; its wall time, its own peak RSS (from wait4) and the report it wrote
    (to `--result FILE`, or, with `result_file=False`, as the last JSON line on stdout: the CLI's)."""
    with tempfile.TemporaryDirectory(prefix="bench-child-") as folder:
        result_path = Path(folder) / "result.json"
        stdout_path, stderr_path = Path(folder) / "stdout.txt", Path(folder) / "stderr.txt"
        with open(stdout_path, "wb") as stdout, open(stderr_path, "wb") as stderr:
            started = time.perf_counter()
            child = subprocess.Popen(
                [*command, "--result", str(result_path)] if result_file else command, stdout=stdout, stderr=stderr,
                env={**os.environ, **(env or {})},
            )  # fmt: skip
            _, status, usage = os.wait4(child.pid, 0)
            wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        lines = stdout_path.read_text().splitlines()
        if child.returncode != 0 or not (result_path.exists() if result_file else lines):
            tail = stderr_path.read_text(errors="replace")[-3000:]
            raise ChildFailed(f"{' '.join(command[:3])} ... exited with {child.returncode}:\n{tail}")
        cpu = usage.ru_utime + usage.ru_stime
        report = json.loads(result_path.read_text() if result_file else lines[-1])
        return Measurement(wall, cpu, usage.ru_maxrss / 1024, report)


def ours_command(
    traces_root: str, run_id: str, staging_root: Path, steps: str = "all", endpoint: str | None = None
) -> list[str]:
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "_run",
        traces_root,
        run_id,
        str(staging_root),
        "--steps",
        steps,
    ]
    return command + (["--endpoint", endpoint] if endpoint else [])


def harbor_command(harbor_python: str, trace_jobs: Path) -> list[str]:
    return [harbor_python, str(Path(__file__).resolve()), "_harbor", str(trace_jobs)]


# --------------------------------------------------------------------------- trees


@dataclass(frozen=True)
class TreeShape:
    prompt_scale: float
    episode_prompts: bool  # agent/episode-N/ folders, as terminus-2 writes them


def run_id_for(trials: int, shape: TreeShape, seed: int = SEED) -> str:
    run_id = f"bench-{trials}" if shape.episode_prompts else f"bench-{trials}-no-episodes"
    return run_id if seed == SEED else f"{run_id}-seed-{seed}"


def ensure_tree(traces_root: Path, trials: int, shape: TreeShape, seed: int = SEED) -> dict[str, Any]:
    """A generated run of `trials` trials under traces_root, reused when an earlier one matches."""
    from trace_assets_tests.support.generate_traces import generate_run

    run_id = run_id_for(trials, shape, seed)
    manifest_path = traces_root / run_id / "manifest.json"
    wanted = (seed, shape.prompt_scale, shape.episode_prompts, trials)
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        found = (manifest["seed"], manifest["prompt_scale"], manifest["episode_prompts"], manifest["n_trials"])
        if found == wanted or (not shape.episode_prompts and (found[0], *found[2:]) == (wanted[0], *wanted[2:])):
            return manifest  # without episode prompts the prompt scale changes nothing
    shutil.rmtree(traces_root / run_id, ignore_errors=True)
    print(f"generating {trials} trials ({shape}) ...", file=sys.stderr, flush=True)
    return generate_run(
        traces_root, run_id, trials, seed=seed, prompt_scale=shape.prompt_scale, episode_prompts=shape.episode_prompts
    )


def warm_tree(trace_jobs: Path) -> None:
    """Bring a tree's folders, inodes and the files either tool reads into the page cache.

    This machine's memory manager pages out files left idle for about a minute; without
    warming, each measured run would also measure the disk, by chance more for one tool.
    """
    for folder, _subfolders, files in os.walk(trace_jobs):
        for name in files:
            os.stat(os.path.join(folder, name))
        if "/episode-" not in folder + "/":
            for name in files:
                with open(os.path.join(folder, name), "rb") as file:
                    while file.read(1 << 20):
                        pass


# --------------------------------------------------------------------------- local comparison


@dataclass
class SizeResult:
    trials: int
    files: int
    ours: list[Measurement] = field(default_factory=list)
    harbor: list[Measurement] = field(default_factory=list)
    listing_floor: list[float] = field(default_factory=list)  # wall seconds of find_listing_floor


def find_listing_floor(trace_jobs: Path, processes: int) -> float:
    """Wall seconds for GNU find to print every object's size and modification time, the run's
    top-level folders split over `processes` finds: the least any tool pays for the listing."""
    names = sorted(entry.name for entry in os.scandir(trace_jobs))
    groups = [names[i::processes] for i in range(processes)]
    started = time.perf_counter()
    finds = [
        subprocess.Popen(
            ["find", *group, "-type", "f", "-printf", "%s %T@\n"], cwd=trace_jobs, stdout=subprocess.DEVNULL
        )
        for group in groups
        if group
    ]
    if any(find.wait() != 0 for find in finds):
        raise ChildFailed(f"find over {trace_jobs} failed")
    return time.perf_counter() - started


def best_run(runs: list[Measurement]) -> Measurement:
    """The fastest repeat: other work on a shared machine only ever adds time."""
    return min(runs, key=lambda run: run.wall_seconds)


def best_cpu(runs: list[Measurement]) -> float:
    return min(run.cpu_seconds for run in runs)


def peak_rss(runs: list[Measurement]) -> float:
    return max(run.peak_rss_mib for run in runs)


def per_trial_ms(small: float, big: float, trials: tuple[int, int]) -> float:
    return 1000 * (big - small) / (trials[1] - trials[0])


def run_local(
    work: Path, sizes: list[int], shape: TreeShape, repeats: int, harbor_python: str | None, sessions: bool = False
) -> dict[int, SizeResult]:
    """Each size `repeats` times per tool, interleaved so drift on the machine hits both alike;
    every measured run starts on a warm page cache."""
    traces_root = work / "traces"
    results = {}
    for trials in sizes:
        manifest = ensure_tree(traces_root, trials, shape)
        results[trials] = SizeResult(trials, manifest["counts"]["files"])
    for repeat in range(repeats):
        for trials, result in results.items():
            run_id = run_id_for(trials, shape)
            trace_jobs = traces_root / run_id / "trace_jobs"
            print(f"[{repeat + 1}/{repeats}] {trials} trials: ours", file=sys.stderr, flush=True)
            staging = Path(tempfile.mkdtemp(prefix="staging-", dir=work))
            try:
                warm_tree(trace_jobs)
                command = ours_command(str(traces_root), run_id, staging)
                result.ours.append(measure(command + (["--sessions", "--publish"] if sessions else [])))
            finally:
                shutil.rmtree(staging)
            warm_tree(trace_jobs)
            result.listing_floor.append(find_listing_floor(trace_jobs, len(os.sched_getaffinity(0))))
            if harbor_python:
                print(f"[{repeat + 1}/{repeats}] {trials} trials: harbor", file=sys.stderr, flush=True)
                warm_tree(trace_jobs)
                result.harbor.append(measure(harbor_command(harbor_python, trace_jobs), HARBOR_OFFLINE_ENV))
    return results


# --------------------------------------------------------------------------- whole processes: start-up included


WHOLE_PROCESS_TRIALS = 400
WHOLE_PROCESS_TARGET = 0.5  # ours / Harbor, issue 15 item 6


def cli_command(traces_root: Path, run_id: str, publish_root: Path, on_secret: str = "allow") -> list[str]:
    """What an operator types, `trace-assets materialize` (Dagster's job on the local instance), as
    `python -P -m trace_assets.cli` so PYTHONPATH picks the checkout (without -P, `-m` would put
    the working directory, this checkout, first); `on_secret` "default" leaves it out."""
    command = [
        sys.executable, "-P", "-m", "trace_assets.cli", "materialize", run_id,
        "--traces-root", str(traces_root), "--publish-root", str(publish_root),
    ]  # fmt: skip
    return command if on_secret == "default" else [*command, "--on-secret", on_secret]


@contextmanager
def checkouts(revisions: dict[str, str | None], work: Path) -> Iterator[dict[str, Path]]:
    """Each side's code: a git worktree of its revision in `work`, or this checkout for None."""
    folders = {}
    git = ["git", "-C", str(PROJECT_DIR), "worktree"]
    try:
        for side, revision in revisions.items():
            folders[side] = PROJECT_DIR
            if revision:
                folders[side] = work / f"checkout-{len(folders)}"
                subprocess.run([*git, "add", "-q", "--detach", str(folders[side]), revision], check=True)
        yield folders
    finally:
        for folder in folders.values():
            if folder != PROJECT_DIR:
                subprocess.run([*git, "remove", "--force", str(folder)], check=False)


def import_command(python: str, module: str) -> list[str]:
    """A process that only imports `module` and prints an empty report: the imports' share of a run."""
    return [python, "-c", f"import {module}; print('{{}}')"]


HARBOR_MODULE = "harbor.utils.traces_utils"
OUR_MODULE = "trace_assets.definitions"


@contextmanager
def work_folder(work_dir: str | None, prefix: str) -> Iterator[Path]:
    """The benchmark's work folder: `--work-dir`'s, kept (its generated trees are reused next
    time); else a temporary one, removed however the benchmark ends."""
    if work_dir:
        Path(work_dir).mkdir(parents=True, exist_ok=True)
        yield Path(work_dir)
        return
    work = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def whole_process(args: argparse.Namespace) -> int:
    """`trace-assets materialize` of one run against Harbor's whole `export_traces` of the same
    tree, alternating, each on a warm page cache, fastest of the repeats; beside them what the
    fixed part is made of (each side's imports alone, our steps without Dagster)."""
    harbor_python = pick_harbor_python(args)
    if not harbor_python:
        print("--whole-process needs Harbor (--harbor-python)", file=sys.stderr)
        return 1
    trials, repeats = args.trials or WHOLE_PROCESS_TRIALS, args.repeats or 5
    with work_folder(args.work_dir, "bench-whole-") as work:
        shape = TreeShape(args.prompt_scale, not args.no_episode_prompts)
        traces_root = work / "traces"
        manifest = ensure_tree(traces_root, trials, shape)
        run_id = run_id_for(trials, shape)
        trace_jobs = traces_root / run_id / "trace_jobs"
        home = work / "dagster_home"  # one instance, as an operator has; its creation is not timed
        home.mkdir(exist_ok=True)
        shutil.copyfile(PROJECT_DIR / "dagster.yaml", home / "dagster.yaml")
        info = machine()
        sides: dict[str, list[Measurement]] = {}
        ours_side = f"ours at {args.head or 'this checkout'}: trace-assets materialize"
        revisions = {ours_side: args.head} | (
            {f"ours at {args.base}: trace-assets materialize": args.base} if args.base else {}
        )

        def run(side: str, command: list[str], env: dict[str, str] | None = None, result_file: bool = True) -> None:
            warm_tree(trace_jobs)
            sides.setdefault(side, []).append(measure(command, env, result_file))

        try:
            with checkouts(revisions, work) as code:
                for repeat in range(repeats + 1):  # the first round warms the instance and the interpreters' caches
                    print(f"[{repeat}/{repeats}] {trials} trials", file=sys.stderr, flush=True)
                    folder = Path(tempfile.mkdtemp(prefix="round-", dir=work))
                    for number, (side, checkout) in enumerate(code.items()):  # each its own staging, publish root
                        staging, published = folder / f"staging-{number}", folder / f"published-{number}"
                        env = {
                            "DAGSTER_HOME": str(home),
                            "TRACE_ASSETS_STAGING_ROOT": str(staging),
                            "PYTHONPATH": str(checkout),
                        }
                        run(side, cli_command(traces_root, run_id, published), env, False)
                    run("harbor: export_traces", harbor_command(harbor_python, trace_jobs), HARBOR_OFFLINE_ENV)
                    run("ours: steps without Dagster", ours_command(str(traces_root), run_id, folder / "steps"))
                    run(
                        f"ours: import {OUR_MODULE}",
                        import_command(sys.executable, OUR_MODULE),
                        {"PYTHONPATH": str(code[ours_side])},
                        False,
                    )
                    run(
                        f"harbor: import {HARBOR_MODULE}",
                        import_command(harbor_python, HARBOR_MODULE),
                        HARBOR_OFFLINE_ENV,
                        False,
                    )
                    shutil.rmtree(folder)
                    if repeat == 0:
                        sides.clear()
        except ChildFailed as failure:
            print(f"benchmark child failed: {failure}", file=sys.stderr)
            return 1
    harbor = best_run(sides["harbor: export_traces"]).wall_seconds
    rows = [
        [side, f"{best_run(runs).wall_seconds:.2f}", f"{best_cpu(runs):.2f}", f"{peak_rss(runs):.0f}",
         f"{best_run(runs).wall_seconds / harbor:.2f}x"]
        for side, runs in sides.items()
    ]  # fmt: skip
    ours = best_run(sides[ours_side])
    ratio = ours.wall_seconds / harbor
    harbor_export = best_run(sides["harbor: export_traces"]).report["seconds"]["export_traces"]
    steps = best_run(sides["ours: steps without Dagster"]).report["seconds"]
    print(
        f"Machine: {info['nproc']} CPUs, load average {info['load_average_1min']} at start, "
        f"{os.getloadavg()[0]:.2f} at end; {trials} trials ({manifest['counts']['files']:,} files, {shape}); "
        f"whole processes alternating, each on a warm page cache, fastest of {repeats} after a warm-up round\n\n"
        + table(["process", "wall s", "cpu s", "peak RSS MiB", "/ Harbor's whole"], rows)
        + f"\n\nHarbor's export_traces call alone: {harbor_export:.2f} s; our steps in-process without Dagster: "
        + ", ".join(f"{step} {seconds:.2f}" for step, seconds in steps.items())
        + f"\nours / Harbor, whole process: {ratio:.2f}x (target <= {WHOLE_PROCESS_TARGET}x: "
        + ("PASS" if ratio <= WHOLE_PROCESS_TARGET else "FAIL")
        + f"); ours published {ours.report['rows']} rows"
    )
    return 0 if ratio <= WHOLE_PROCESS_TARGET else 2


# --------------------------------------------------------------------------- full size: silences on stderr


FULL_SIZE_TRIALS = 22047  # the one real run measured: 154,311 objects in 22,047 trial folders
FULL_SIZE_SEED = 77
FULL_SIZE_WALL_TARGET = 0.33  # ours / Harbor's whole export_traces, issue 21
FULL_SIZE_RSS_TARGET_MIB = 1024
FULL_SIZE_SILENCE_TARGET = 10.0  # seconds without a line on the CLI's stderr


@dataclass
class Streamed:
    """A child run with its stderr lines timestamped as they arrived."""

    measurement: Measurement
    returncode: int
    lines: list[tuple[float, str]]  # (seconds since start, line)

    def longest_silence(self) -> tuple[float, str]:
        """The longest gap between two lines (start and exit count as lines), and the line it followed."""
        marks = [(0.0, "(start)"), *self.lines, (self.measurement.wall_seconds, "(exit)")]
        gap, after = max(
            ((later[0] - earlier[0], earlier[1]) for earlier, later in zip(marks, marks[1:])), key=lambda g: g[0]
        )
        return gap, after


def measure_streamed(command: list[str], env: dict[str, str] | None = None) -> Streamed:
    """Run a child to the end, timestamping each stderr line as it arrives (a thread reads them);
    its wall time and own peak RSS as `measure` takes them, and its last JSON line on stdout, if any."""
    import threading

    lines: list[tuple[float, str]] = []
    with tempfile.TemporaryDirectory(prefix="bench-child-") as folder:
        stdout_path = Path(folder) / "stdout.txt"
        with open(stdout_path, "wb") as stdout:
            started = time.perf_counter()
            child = subprocess.Popen(command, stdout=stdout, stderr=subprocess.PIPE, env={**os.environ, **(env or {})})

            def read() -> None:
                assert child.stderr is not None
                for raw in iter(child.stderr.readline, b""):
                    lines.append((time.perf_counter() - started, raw.decode(errors="replace").rstrip()))

            reader = threading.Thread(target=read, daemon=True)
            reader.start()
            _, status, usage = os.wait4(child.pid, 0)
            wall = time.perf_counter() - started
            reader.join()
        out = stdout_path.read_text().splitlines()
    report: dict[str, Any] = {}
    if out:
        try:
            report = json.loads(out[-1])
        except json.JSONDecodeError:
            report = {}
    measurement = Measurement(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, report)
    return Streamed(measurement, os.waitstatus_to_exitcode(status), lines)


def full_size(args: argparse.Namespace) -> int:
    """The real run's shape, whole processes side by side: Harbor's whole `export_traces`, and
    `trace-assets materialize` with the defaults and with `--on-secret redact` (each with a fresh
    DAGSTER_HOME, staging folder and publish folder), alternating, each on a warm page cache.
    Reports wall time, CPU, peak RSS and the longest silence on the CLI's stderr."""
    harbor_python = pick_harbor_python(args)
    trials, repeats = args.trials or FULL_SIZE_TRIALS, args.repeats or 1
    seed = FULL_SIZE_SEED if args.seed is None else args.seed
    with work_folder(args.work_dir, "bench-full-") as work:
        shape = TreeShape(args.prompt_scale, not args.no_episode_prompts)
        traces_root = work / "traces"
        manifest = ensure_tree(traces_root, trials, shape, seed)
        run_id = run_id_for(trials, shape, seed)
        trace_jobs = traces_root / run_id / "trace_jobs"
        info = machine()
        revisions = {"this checkout": args.head} | ({args.base: args.base} if args.base else {})
        sides: dict[str, list[Streamed]] = {}
        logs = work / "stderr"
        logs.mkdir(exist_ok=True)
        with checkouts(revisions, work) as code:
            for repeat in range(repeats):
                rounds: list[tuple[str, list[str], dict[str, str] | None, Path | None]] = []
                if harbor_python:
                    rounds.append(("harbor: export_traces", harbor_command(harbor_python, trace_jobs), None, None))
                folder = Path(tempfile.mkdtemp(prefix="round-", dir=work))
                for label, checkout in code.items():
                    for on_secret in args.on_secret.split(","):
                        side = f"ours ({label}): materialize, on_secret {on_secret}"
                        number = len(rounds)
                        home = folder / f"dagster_home-{number}"
                        home.mkdir()
                        shutil.copyfile(PROJECT_DIR / "dagster.yaml", home / "dagster.yaml")
                        env = {
                            "DAGSTER_HOME": str(home),
                            "TRACE_ASSETS_STAGING_ROOT": str(folder / f"staging-{number}"),
                            "PYTHONPATH": str(checkout),
                        }
                        command = cli_command(traces_root, run_id, folder / f"published-{number}", on_secret)
                        rounds.append((side, command, env, home))
                for side, command, env, _ in rounds:
                    print(f"[{repeat + 1}/{repeats}] {side}", file=sys.stderr, flush=True)
                    warm_tree(trace_jobs)
                    if command[2] == "_harbor":
                        with tempfile.TemporaryDirectory(prefix="bench-harbor-") as result_folder:
                            result = Path(result_folder) / "result.json"
                            run = measure_streamed([*command, "--result", str(result)], HARBOR_OFFLINE_ENV)
                            run.measurement.report = json.loads(result.read_text()) if result.exists() else {}
                    else:
                        run = measure_streamed(command, env)
                    if run.returncode != 0 and not run.measurement.report:
                        tail = "\n".join(line for _, line in run.lines[-30:])
                        print(f"benchmark child failed ({run.returncode}):\n{tail}", file=sys.stderr)
                        return 1
                    sides.setdefault(side, []).append(run)
                    log = logs / f"{len(sides)}-{repeat}.txt"
                    log.write_text("".join(f"{at:8.2f} {line}\n" for at, line in run.lines))
                    gap, after = run.longest_silence()
                    print(
                        f"  wall {run.measurement.wall_seconds:.1f} s, peak RSS {run.measurement.peak_rss_mib:.0f} MiB, "
                        f"longest silence {gap:.1f} s after {after[:100]!r} (load {os.getloadavg()[0]:.2f}; {log})",
                        file=sys.stderr,
                        flush=True,
                    )
                shutil.rmtree(folder)
    harbor_runs = sides.get("harbor: export_traces")
    harbor = min(r.measurement.wall_seconds for r in harbor_runs) if harbor_runs else math.nan
    rows, passed = [], True
    for side, runs in sides.items():
        best = min(runs, key=lambda r: r.measurement.wall_seconds)
        gap, after = max(r.longest_silence() for r in runs)
        ratio = best.measurement.wall_seconds / harbor
        rows.append([
            side, f"{best.measurement.wall_seconds:.1f}", f"{best.measurement.cpu_seconds:.1f}",
            f"{max(r.measurement.peak_rss_mib for r in runs):.0f}", f"{gap:.1f}", f"{ratio:.2f}x",
            str(best.measurement.report.get("status", best.measurement.report.get("rows", ""))),
        ])  # fmt: skip
        if side.startswith("ours (this checkout)"):
            passed &= ratio <= FULL_SIZE_WALL_TARGET and gap <= FULL_SIZE_SILENCE_TARGET
            passed &= max(r.measurement.peak_rss_mib for r in runs) <= FULL_SIZE_RSS_TARGET_MIB
    print(
        f"Machine: {info['nproc']} CPUs, load average {info['load_average_1min']} at start, "
        f"{os.getloadavg()[0]:.2f} at end; {trials} trials, seed {seed} ({manifest['counts']['files']:,} files, "
        f"{shape}); whole processes alternating, each on a warm page cache with a fresh Dagster home, staging and "
        f"publish folder, fastest of {repeats}\n\n"
        + table(["process", "wall s", "cpu s", "peak RSS MiB", "longest silence s", "/ Harbor", "result"], rows)
        + f"\n\ntargets (this checkout): wall <= {FULL_SIZE_WALL_TARGET}x Harbor's, peak RSS <= "
        f"{FULL_SIZE_RSS_TARGET_MIB} MiB, silence <= {FULL_SIZE_SILENCE_TARGET:.0f} s: {'PASS' if passed else 'FAIL'}"
    )
    return 0 if passed else 2


# --------------------------------------------------------------------------- S3


def needed_bytes(trace_jobs: Path) -> tuple[int, int]:
    """(objects, bytes) the steps must read: every result.json, plus needed_files of trials it scores.

    Walks the generated tree itself (one folder per trial) rather than trusting the listing under test.
    """
    from trace_assets.harbor.result import TrialSummary, parse_trial_result
    from trace_assets.harbor.trial_files import needed_files

    objects = total_bytes = 0
    for trial in sorted(trace_jobs.iterdir()):
        sizes = {p.relative_to(trial).as_posix(): p.stat().st_size for p in trial.rglob("*") if p.is_file()}
        if "result.json" not in sizes:
            continue
        keys = ["result.json"]
        parsed = parse_trial_result((trial / "result.json").read_bytes(), trial.name)
        if isinstance(parsed, TrialSummary):
            keys += needed_files(sizes.keys(), include_subagents=False)
        objects += len(keys)
        total_bytes += sum(sizes[key] for key in keys)
    return objects, total_bytes


@dataclass(frozen=True)
class RunOnMoto:
    url: str  # the moto server's endpoint
    traces_root: str  # s3://bucket/traces, holding the run
    uploaded_objects: int
    upload_seconds: float


@contextmanager
def run_on_moto(trace_jobs: Path, run_id: str) -> Iterator[RunOnMoto]:
    """A moto S3 server on 127.0.0.1 holding the run's trace_jobs/ under s3://bench-traces/traces,
    with this process's AWS variables set to its test credentials; stopped on exit."""
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    from trace_assets_tests.support.s3_fixtures import make_s3fs, upload_tree

    for leaked in ("AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_PROFILE"):
        os.environ.pop(leaked, None)
    os.environ.update(S3_CREDENTIALS)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's access log, one line per request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        url = f"http://{host}:{port}"
        boto3.client("s3", endpoint_url=url, region_name=S3_REGION).create_bucket(Bucket=S3_BUCKET)
        traces_root = f"s3://{S3_BUCKET}/traces"
        print(f"uploading {trace_jobs} to moto ...", file=sys.stderr, flush=True)
        started = time.perf_counter()
        uploaded = upload_tree(trace_jobs, make_s3fs(url), f"{traces_root}/{run_id}/trace_jobs")
        yield RunOnMoto(url, traces_root, len(uploaded), time.perf_counter() - started)
    finally:
        server.stop()


def run_s3(work: Path, trials: int, shape: TreeShape) -> dict[str, Any]:
    """Upload a run to moto, then run the steps through a counting proxy: listing first, then the rest."""
    from trace_assets_tests.support.fault_proxy import FaultProxy

    ensure_tree(work / "traces", trials, shape)
    run_id = run_id_for(trials, shape)
    trace_jobs = work / "traces" / run_id / "trace_jobs"
    staging = work / "staging-s3"
    shutil.rmtree(staging, ignore_errors=True)
    with run_on_moto(trace_jobs, run_id) as moto, FaultProxy(moto.url) as proxy:
        print(f"S3 {trials} trials: listing", file=sys.stderr, flush=True)
        listing = measure(ours_command(moto.traces_root, run_id, staging, "listing", proxy.url))
        listing_requests = proxy.stats
        proxy.reset_stats()
        print(f"S3 {trials} trials: scored, rows, scan, shards", file=sys.stderr, flush=True)
        rest = measure(ours_command(moto.traces_root, run_id, staging, "after-listing", proxy.url))
        fetch_requests = proxy.stats
    shutil.rmtree(staging, ignore_errors=True)
    needed_objects, needed = needed_bytes(trace_jobs)
    step_seconds = {**listing.report["seconds"], **rest.report["seconds"]}
    return {
        "trials": trials,
        "objects": listing.report["objects"],
        "uploaded_objects": moto.uploaded_objects,
        "upload_seconds": moto.upload_seconds,
        "step_seconds": step_seconds,
        "trials_per_second": trials / sum(step_seconds.values()),
        "wall_seconds": listing.wall_seconds + rest.wall_seconds,
        "rows": rest.report["rows"],
        "listing_requests": listing_requests,
        "fetch_requests": fetch_requests,
        "listed_bytes": listing.report["listed_bytes"],
        "list_xml_bytes": listing_requests["response_body_bytes"],
        "fetched_bytes": fetch_requests["response_body_bytes"],
        "needed_objects": needed_objects,
        "needed_bytes": needed,
    }


# --------------------------------------------------------------------------- report


@dataclass
class Check:
    name: str
    target: str
    measured: str
    passed: bool


def table(headers: list[str], rows: list[list[Any]]) -> str:
    cells = [headers, *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [
        "  ".join(
            cell.ljust(width) if i == 0 else cell.rjust(width) for i, (cell, width) in enumerate(zip(row, widths))
        )
        for row in cells
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    names = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    return names[0] if names else platform.processor() or "unknown"


def machine() -> dict[str, Any]:
    return {
        "nproc": len(os.sched_getaffinity(0)),
        "cpu": cpu_model(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average_1min": round(os.getloadavg()[0], 2),  # other work on the machine skews absolute figures
    }


def size_pairs(sizes: list[int]) -> list[tuple[int, int]]:
    return [(sizes[i], sizes[i + 1]) for i in range(0, len(sizes), 2)]


def local_report(results: dict[int, SizeResult], sizes: list[int]) -> tuple[str, list[dict[str, Any]], list[Check]]:
    rows = []
    for trials in sizes:
        result = results[trials]
        for tool, runs in (("ours", result.ours), ("harbor", result.harbor)):
            if not runs:
                continue
            best = best_run(runs)
            rows.append([
                f"{trials}", f"{result.files}", tool, f"{best.wall_seconds:.2f}", f"{best_cpu(runs):.2f}",
                f"{trials / best.wall_seconds:.0f}", f"{peak_rss(runs):.0f}", f"{best.report['rows']}",
            ])  # fmt: skip
    text = ["Local folder, whole processes (fastest of the repeats; peak RSS: largest of the repeats):"]
    text.append(table(["trials", "files", "tool", "wall s", "cpu s", "trials/s", "peak RSS MiB", "rows"], rows))
    steps = ("listing", "scored", "rows", "scan", "shards")
    step_rows = []
    for trials in sizes:
        report = best_run(results[trials].ours).report
        step_rows.append([
            f"{trials}", *(f"{report['seconds'][step]:.2f}" for step in steps),
            " ".join(f"{report['peak_rss_mib_after'][step]:.0f}" for step in steps),
        ])  # fmt: skip
    text.append("\nOur steps in the fastest run: in-process seconds, and the process's peak RSS (MiB) after each step:")
    text.append(table(["trials", *steps, "peak RSS after each"], step_rows))

    checks = []
    pairs = []
    marginal_rows = []
    for small, big in size_pairs(sizes):
        ours_small, ours_big = results[small].ours, results[big].ours
        pair: dict[str, Any] = {
            "small": small,
            "big": big,
            "ours_ms_per_trial": per_trial_ms(
                best_run(ours_small).wall_seconds, best_run(ours_big).wall_seconds, (small, big)
            ),
            "ours_cpu_ms_per_trial": per_trial_ms(best_cpu(ours_small), best_cpu(ours_big), (small, big)),
            "ours_rss_growth": peak_rss(ours_big) / peak_rss(ours_small),
        }
        checks.append(Check(
            f"peak RSS {big} vs {small} trials (ours)", f"<= {MEMORY_GROWTH_TARGET:.1f}x",
            f"{pair['ours_rss_growth']:.2f}x", pair["ours_rss_growth"] <= MEMORY_GROWTH_TARGET,
        ))  # fmt: skip
        row = [
            f"{small} -> {big}",
            f"{pair['ours_ms_per_trial']:.3f}",
            "-",
            "-",
            f"{pair['ours_cpu_ms_per_trial']:.3f}",
        ]
        row += ["-", "-"]
        harbor_small, harbor_big = results[small].harbor, results[big].harbor
        if harbor_small and harbor_big:
            pair["harbor_ms_per_trial"] = per_trial_ms(
                best_run(harbor_small).wall_seconds, best_run(harbor_big).wall_seconds, (small, big)
            )
            pair["harbor_cpu_ms_per_trial"] = per_trial_ms(best_cpu(harbor_small), best_cpu(harbor_big), (small, big))
            pair["speedup"] = pair["harbor_ms_per_trial"] / pair["ours_ms_per_trial"]
            pair["cpu_speedup"] = pair["harbor_cpu_ms_per_trial"] / pair["ours_cpu_ms_per_trial"]
            pair["harbor_rss_growth"] = peak_rss(harbor_big) / peak_rss(harbor_small)
            checks.append(Check(
                f"marginal wall per trial {small}->{big}, harbor/ours", f">= {HARBOR_SPEEDUP_TARGET:.0f}x",
                f"{pair['speedup']:.1f}x", pair["speedup"] >= HARBOR_SPEEDUP_TARGET,
            ))  # fmt: skip
            row[2:4] = [f"{pair['harbor_ms_per_trial']:.3f}", f"{pair['speedup']:.1f}x"]
            row[5:7] = [f"{pair['harbor_cpu_ms_per_trial']:.3f}", f"{pair['cpu_speedup']:.1f}x"]
        marginal_rows.append(row)
        pairs.append(pair)
    text.append("\nMarginal cost per trial, (big - small) / (big trials - small trials), wall and CPU:")
    text.append(table(
        ["sizes", "ours wall ms", "harbor wall ms", "harbor/ours", "ours cpu ms", "harbor cpu ms", "harbor/ours cpu"],
        marginal_rows,
    ))  # fmt: skip
    text.append(
        f"\nListing floor: GNU find printing every object's size and mtime, in {len(os.sched_getaffinity(0))} "
        "processes at once (the least any exporter pays to list the tree), marginal cost per trial:"
    )
    for pair in pairs:
        small, big = pair["small"], pair["big"]
        floor = per_trial_ms(min(results[small].listing_floor), min(results[big].listing_floor), (small, big))
        pair["listing_floor_ms_per_trial"] = floor
        line = f"  {small} -> {big}: {floor:.3f} ms"
        if "harbor_ms_per_trial" in pair:
            budget = pair["harbor_ms_per_trial"] / HARBOR_SPEEDUP_TARGET
            pair["speedup_target_budget_ms_per_trial"] = budget
            line += (
                f"; {HARBOR_SPEEDUP_TARGET:.0f}x Harbor's throughput leaves {budget:.3f} ms a trial for everything, "
                f"{floor / budget:.0%} of it taken by this floor"
            )
        text.append(line)
    return "\n".join(text), pairs, checks


def s3_report(s3: dict[str, Any]) -> tuple[str, list[Check]]:
    listing, fetch = s3["listing_requests"], s3["fetch_requests"]
    request_rows = [
        [phase, *(stats[kind] for kind in ("list", "get", "head", "put", "other")), f"{stats['response_body_bytes']:,}"]
        for phase, stats in (("listing", listing), ("scored..shards", fetch))
    ]
    seconds = s3["step_seconds"]
    overhead = s3["fetched_bytes"] / s3["needed_bytes"]
    share_of_listed = s3["fetched_bytes"] / s3["listed_bytes"] if s3["listed_bytes"] else math.nan
    text = [
        f"S3 (moto via counting proxy), {s3['trials']} trials, {s3['uploaded_objects']:,} objects uploaded "
        f"({s3['uploaded_objects'] / s3['upload_seconds']:.0f} objects/s), {s3['objects']:,} listed:",
        f"  {s3['trials_per_second']:.0f} trials/s over the steps in-process ("
        + ", ".join(f"{step} {value:.2f}s" for step, value in seconds.items())
        + f"); {s3['wall_seconds']:.1f}s wall in two child processes; {s3['rows']} rows",
        table(["phase", "LIST", "GET", "HEAD", "PUT", "other", "response bytes"], request_rows),
        f"  bytes listed (sum of object sizes): {s3['listed_bytes']:,}; LIST XML: {s3['list_xml_bytes']:,}",
        f"  bytes fetched (GET bodies): {s3['fetched_bytes']:,} in {fetch['get']} GETs; "
        f"needed: {s3['needed_bytes']:,} in {s3['needed_objects']} objects "
        f"({overhead:.3f}x needed, {share_of_listed:.1%} of listed)",
    ]
    # The limit counts what was uploaded, so a listing that misses objects cannot pass by listing fewer.
    list_limit = math.ceil(s3["uploaded_objects"] / S3_PAGE_SIZE) + 1
    lists = listing["list"] + fetch["list"]
    list_target = f"<= ceil({s3['uploaded_objects']}/{S3_PAGE_SIZE})+1 = {list_limit}"
    checks = [
        Check("S3 listing sees every uploaded object", f"= {s3['uploaded_objects']}", f"{s3['objects']}",
              s3["objects"] == s3["uploaded_objects"]),
        Check("S3 LIST requests per run", list_target, f"{lists}", lists <= list_limit),
        Check("S3 bytes fetched vs needed (all needed read)", f"<= {FETCH_OVERHEAD_TARGET:.1f}x", f"{overhead:.3f}x",
              1.0 <= overhead <= FETCH_OVERHEAD_TARGET),
    ]  # fmt: skip
    return "\n".join(text), checks


# --------------------------------------------------------------------------- main


def pick_harbor_python(args: argparse.Namespace) -> str | None:
    import importlib.util

    if args.no_harbor:
        return None
    if args.harbor_python:
        return args.harbor_python
    if DEFAULT_HARBOR_PYTHON.exists():
        return str(DEFAULT_HARBOR_PYTHON)
    return sys.executable if importlib.util.find_spec("harbor") else None


def parse_sizes(text: str) -> list[int]:
    sizes = [int(part) for part in text.split(",") if part.strip()]
    if not sizes or len(sizes) % 2 or any(small >= big for small, big in size_pairs(sizes)):
        raise argparse.ArgumentTypeError("give pairs of sizes, small then big: 400,2000 or 400,2000,1000,10000")
    return sizes


LARGE_RSS_TARGET_MIB = 1024  # with the default batch_bytes


def large_trajectories(args: argparse.Namespace) -> int:
    """Peak RSS of our steps on trials whose trajectories are very large: memory follows bytes in
    flight (TraceStore.batch_bytes), not trials per batch."""
    from trace_assets_tests.support.generate_traces import generate_run, inflate_trajectories

    trials, megabytes = (float(part) for part in args.large_trajectories.split(":"))
    run_id = f"large-{int(trials)}x{megabytes:g}mb"
    with work_folder(args.work_dir, "bench-large-") as work:
        if not (work / run_id / "manifest.json").exists():
            generate_run(work, run_id, int(trials), seed=SEED, episode_prompts=False)
            inflate_trajectories(work / run_id, megabytes)
        with tempfile.TemporaryDirectory(prefix="bench-large-staging-") as staging:
            run = measure(ours_command(str(work), run_id, Path(staging)))
    peak = run.peak_rss_mib
    verdict = "PASS" if peak <= LARGE_RSS_TARGET_MIB else "FAIL"
    print(
        f"{int(trials)} trials with {megabytes:g} MB trajectories ({run.report['listed_bytes'] / 1e6:.0f} MB listed): "
        f"wall {run.wall_seconds:.1f}s, peak RSS {peak:.0f} MiB (target <= {LARGE_RSS_TARGET_MIB}: {verdict}); "
        f"after each step: {run.report['peak_rss_mib_after']}"
    )
    return 0 if verdict == "PASS" else 2


def benchmark(args: argparse.Namespace) -> int:
    sizes = args.sizes or list(QUICK_SIZES if args.quick else DEFAULT_SIZES)
    repeats = args.repeats or (2 if args.quick else 3)
    s3_trials = args.s3_trials if args.s3_trials is not None else (QUICK_S3_TRIALS if args.quick else DEFAULT_S3_TRIALS)
    harbor_python = pick_harbor_python(args)
    with work_folder(args.work_dir, "bench-pipeline-") as work:
        info = machine()
        started = time.perf_counter()
        shape = TreeShape(args.prompt_scale, not args.no_episode_prompts)
        try:
            results = run_local(work, sizes, shape, repeats, harbor_python, args.sessions)
            s3 = run_s3(work, s3_trials, shape) if s3_trials else None
        except ChildFailed as failure:
            print(f"benchmark child failed: {failure}", file=sys.stderr)
            return 1

    load_at_end = round(os.getloadavg()[0], 2)
    harbor_version = next((r.harbor[0].report["python"] for r in results.values() if r.harbor), None)
    header = [
        f"Machine: {info['nproc']} CPUs ({info['cpu']}), {info['memory_gib']} GiB, {info['platform']}, "
        f"load average {info['load_average_1min']} at start, {load_at_end} at end",
        f"Python {info['python']} (ours), "
        + (f"{harbor_version} (Harbor, {harbor_python})" if harbor_version else "Harbor not run"),
        f"Trees: trace_assets_tests/support/generate_traces.py seed={SEED}, "
        + (
            f"prompt_scale={args.prompt_scale} (shrinks episode prompts only; trajectories full size)"
            if shape.episode_prompts
            else "without episode prompt folders"
        )
        + f"; fastest of {repeats} repeat(s), each on a warm page cache; shards built unredacted (on_secret=allow)"
        + ("; session files staged, scanned and published to a folder" if args.sessions else ""),
    ]
    local_text, marginal, checks = local_report(results, sizes)
    sections = ["\n".join(header), local_text]
    if s3 is not None:
        s3_text, s3_checks = s3_report(s3)
        sections.append(s3_text)
        checks += s3_checks
    verdicts = [[check.name, check.target, check.measured, "PASS" if check.passed else "FAIL"] for check in checks]
    sections.append("Targets:\n" + table(["check", "target", "measured", ""], verdicts))
    sections.append(f"Benchmark took {time.perf_counter() - started:.0f}s.")
    print("\n\n".join(sections))

    if args.json:
        document = {
            "machine": {**info, "load_average_1min_end": load_at_end, "harbor_python": harbor_version},
            "config": {
                "sizes": sizes,
                "repeats": repeats,
                "prompt_scale": args.prompt_scale,
                "seed": SEED,
                "s3_trials": s3_trials,
                "episode_prompts": shape.episode_prompts,
            },  # fmt: skip
            "local": {
                str(trials): {
                    "files": result.files,
                    "ours": [asdict(run) for run in result.ours],
                    "harbor": [asdict(run) for run in result.harbor],
                    "listing_floor_seconds": result.listing_floor,
                }
                for trials, result in results.items()
            },
            "marginal": marginal,
            "s3": s3,
            "checks": [asdict(check) for check in checks],
        }
        Path(args.json).write_text(json.dumps(document, indent=2) + "\n")
    return 0 if all(check.passed for check in checks) else 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="mode")

    run = commands.add_parser("_run", help="child: run our steps on one run")
    run.add_argument("traces_root")
    run.add_argument("run_id")
    run.add_argument("staging_root")
    run.add_argument("--steps", choices=("all", "listing", "after-listing"), default="all")
    run.add_argument("--endpoint", help="S3 endpoint URL for s3:// traces roots")
    run.add_argument("--fetch-ahead", type=int, default=1, help="batches fetched while one is parsed (0: none)")
    run.add_argument("--sessions", action="store_true", help="also stage, scan and publish session files")
    run.add_argument("--publish", action="store_true", help="also publish into a local folder target")
    run.add_argument("--result", required=True)

    harbor = commands.add_parser("_harbor", help="child: run Harbor's export_traces on one trace_jobs/ folder")
    harbor.add_argument("trace_jobs")
    harbor.add_argument("--result", required=True)

    parser.add_argument(
        "--sizes", type=parse_sizes, help="pairs small,big[,small,big]; default 400,2000 (quick: 100,400)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="a ~1 minute smoke run: small sizes, two repeats, a small S3 run"
    )
    parser.add_argument(
        "--repeats", type=int, help="measurements per size and tool, the fastest counts (default 3, quick 2)"
    )
    parser.add_argument(
        "--prompt-scale", type=float, default=DEFAULT_PROMPT_SCALE, help="generator's episode-prompt share"
    )
    parser.add_argument(
        "--no-episode-prompts", action="store_true",
        help="trees without agent/episode-N/ folders: about 7 objects a trial, as in the one real run measured",
    )  # fmt: skip
    parser.add_argument(
        "--s3-trials",
        type=int,
        help=f"trials in the S3 run, 0 to skip (default {DEFAULT_S3_TRIALS}, quick {QUICK_S3_TRIALS})",
    )
    parser.add_argument(
        "--harbor-python", help=f"interpreter with Harbor installed (default {DEFAULT_HARBOR_PYTHON} if present)"
    )
    parser.add_argument("--no-harbor", action="store_true", help="skip the Harbor comparison")
    parser.add_argument(
        "--work-dir", help="keep generated trees here and reuse them next time (default: a temp dir, removed)"
    )
    parser.add_argument(
        "--sessions", action="store_true",
        help="our side as the definitions' default: session files staged, scanned and published to a folder too",
    )  # fmt: skip
    parser.add_argument("--json", help="also write the results as JSON to this file")
    parser.add_argument(
        "--large-trajectories", metavar="TRIALS:MB", help="instead: peak RSS of a run of TRIALS trajectories of MB each"
    )
    parser.add_argument(
        "--whole-process", action="store_true",
        help=f"instead: `trace-assets materialize` against Harbor's whole export, start-up included "
        f"(--trials, default {WHOLE_PROCESS_TRIALS}; --repeats, default 5)",
    )  # fmt: skip
    parser.add_argument(
        "--full-size", action="store_true",
        help=f"instead: the real run's shape ({FULL_SIZE_TRIALS} trials, seed {FULL_SIZE_SEED}; use "
        "--no-episode-prompts), Harbor's whole export and `trace-assets materialize` per --on-secret, with wall, "
        "peak RSS and the longest silence on the CLI's stderr (--repeats, default 1)",
    )  # fmt: skip
    parser.add_argument(
        "--on-secret", default="default,redact", help="--full-size: the CLI's --on-secret values, `default` for none"
    )
    parser.add_argument("--seed", type=int, help=f"--full-size: the tree's seed (default {FULL_SIZE_SEED})")
    parser.add_argument("--trials", type=int, help="--whole-process, --full-size: trials in the run")
    parser.add_argument(
        "--head", help="--whole-process, --full-size: our side at this git revision (default: this checkout)"
    )
    parser.add_argument("--base", help="--whole-process, --full-size: also our side at this git revision, side by side")
    args = parser.parse_args(argv)
    if args.mode == "_run":
        run_steps_child(args)
        return 0
    if args.mode == "_harbor":
        run_harbor_child(args)
        return 0
    if args.large_trajectories:
        return large_trajectories(args)
    if args.whole_process:
        return whole_process(args)
    if args.full_size:
        return full_size(args)
    return benchmark(args)


if __name__ == "__main__":
    sys.exit(main())
