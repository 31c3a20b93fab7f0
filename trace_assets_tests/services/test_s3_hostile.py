"""The hostile tree through the S3 server, minus what S3 cannot hold (links, FIFOs, undecodable
names): the same statuses as on disk, and glob characters in keys fetched exactly as listed."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from trace_assets.defs.resources import ObjectStorage
from trace_assets.store.s3_options import storage_options
from trace_assets.store.trace_store import TraceStore
from trace_assets_tests.support.helpers import run_steps
from trace_assets_tests.support.hostile_tree import RUN_ID, expected_statuses, write_hostile_run
from trace_assets_tests.support.s3_fixtures import make_s3fs


def test_hostile_tree_on_s3_gets_the_statuses_it_gets_on_disk(tmp_path, s3_endpoint, s3_admin_client):
    outside = tmp_path / "outside"
    outside.mkdir()
    traces = tmp_path / "traces"
    trace_jobs = write_hostile_run(traces, outside, s3_safe=True)
    bucket = f"hostile-{uuid.uuid4().hex[:12]}"
    s3_admin_client.create_bucket(Bucket=bucket)
    root = f"s3://{bucket}/traces"
    fs = make_s3fs(s3_endpoint)
    for folder, _, names in os.walk(trace_jobs):  # regular files only: upload_tree would follow links
        for name in names:
            local = os.path.join(folder, name)
            fs.pipe_file(f"{root}/{os.path.relpath(local, traces)}", Path(local).read_bytes())

    storage = ObjectStorage(endpoint_url=s3_endpoint, region_name="us-east-1")
    _, coverage, statuses = run_steps(TraceStore(root, storage_options(storage, root)), RUN_ID, tmp_path / "s3")
    got = {s["trial_dir"]: (s["reason"], s["skipped"]) for s in statuses}
    on_disk = {folder: (reason, 0) for folder, (reason, _) in expected_statuses(outside).items() if folder in got}
    assert got == on_disk
    assert got["trial[1]*glob__g1"] == (None, 0) and got["trial?{a,b}__g2"] == (None, 0)
    assert len(got) >= 9 and coverage.accounted
