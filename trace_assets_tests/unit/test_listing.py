"""Listing: trial folders found in any layout, the same whether one process walks or several."""

from __future__ import annotations

import pyarrow.parquet as pq

from trace_assets.core.scope import RunScope
from trace_assets.steps.listing import build_listing
from trace_assets.steps.staging import RunStaging
from trace_assets.store.objects import ObjectBatch
from trace_assets.store.trace_store import PARALLEL_WALK_MIN_FOLDERS, TraceStore
from trace_assets.store.trial_folders import group_trials, whole_folder_batches
from trace_assets_tests.support.helpers import SAMPLE_RUN, SAMPLE_TRACES, link_tree


def test_listing_finds_nested_trials_and_ignores_job_folders():
    keys = [
        "result.json",  # job-level files of trace_jobs itself
        "config.json",
        "step-25/a__1/result.json",
        "step-25/a__1/agent/episode-0/config.json",  # inside a trial's agent/: no folder of its own
        "step-25/a__1/verifier/result.json",
        "step-25/result.json",  # a job folder: it holds a trial
        "b__2/trial.log",
        "c__3/agent/trajectory.json",
        "README.txt",
    ]
    listing = group_trials(ObjectBatch(keys, [1] * len(keys), [None] * len(keys), [None] * len(keys)))
    trials = listing.trials.to_pylist()
    assert [t["trial_dir"] for t in trials] == ["step-25/a__1", "b__2", "c__3"]
    assert listing.stray_objects == 4 and listing.total_objects == len(keys)
    assert [f["key"] for f in trials[0]["files"]] == [
        "agent/episode-0/config.json",
        "result.json",
        "verifier/result.json",
    ]
    assert [t["has_result_json"] for t in trials] == [True, False, False]


def test_listing_batches_never_split_a_top_level_folder():
    pages = [["a/1", "a/2"], ["a/3", "b/1"], ["b/2"], ["b/3", "c/1", "c/2"], ["d/1"]]
    batches = whole_folder_batches((ObjectBatch(p, [0] * len(p), [None] * len(p), [None] * len(p)) for p in pages), 2)
    assert [batch.keys for batch in batches] == [["a/1", "a/2", "a/3"], ["b/1", "b/2", "b/3"], ["c/1", "c/2"], ["d/1"]]


def test_listing_workers_list_exactly_what_one_process_lists(tmp_path):
    """A run big enough to be walked by worker processes, with job-level files and a nested step folder:
    the sample's trials, then copies of its smallest (6 files) past the threshold, all hard links."""
    sample = SAMPLE_TRACES / SAMPLE_RUN / "trace_jobs"
    trace_jobs = tmp_path / "traces" / "big-run" / "trace_jobs"
    for trial in sample.iterdir():
        link_tree(trial, trace_jobs / trial.name)
    small = sorted(sample.iterdir(), key=lambda trial: sum(1 for p in trial.rglob("*") if p.is_file()))[:4]
    for copy in range(PARALLEL_WALK_MIN_FOLDERS // len(small) + 1):
        for trial in small:
            link_tree(trial, trace_jobs / f"{trial.name}-{copy}")
    link_tree(sample / "swesmith-2013__lvsllOh", trace_jobs / "step-7" / "swesmith-2013__lvsllOh")
    (trace_jobs / "result.json").write_text("{}")
    folders = sum(1 for path in trace_jobs.iterdir() if path.is_dir())
    assert folders >= PARALLEL_WALK_MIN_FOLDERS

    listings = {}
    for workers in (1, 2):
        store = TraceStore(str(tmp_path / "traces"), walk_workers=workers)
        keys = [key for page in store.iter_run(RunScope("big-run")) for key in page.keys]
        stats = build_listing(store, RunStaging(tmp_path / f"staging-{workers}", RunScope("big-run")))
        listings[workers] = (
            keys,
            stats,
            pq.read_table(tmp_path / f"staging-{workers}" / "big-run" / "raw_trial_listing.parquet"),
        )
    (serial_keys, serial_stats, serial_table), (parallel_keys, parallel_stats, parallel_table) = (
        listings[1],
        listings[2],
    )
    assert parallel_keys == serial_keys and len(set(serial_keys)) == len(serial_keys)
    assert parallel_stats == serial_stats
    assert serial_stats.trial_dirs == folders and serial_stats.stray_objects == 1
    assert parallel_table.equals(serial_table)
    names = serial_table.column("trial_name").to_pylist()
    assert names == sorted(names)  # publishing order, the nested step folder's trial among the others
