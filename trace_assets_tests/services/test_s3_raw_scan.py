"""The raw-tree scan against a real S3 API (moto's server on 127.0.0.1) through s3fs."""

from __future__ import annotations

import random
import shutil

from trace_assets.core.scope import RunScope
from trace_assets.defs.resources import ObjectStorage
from trace_assets.secret_scan.scanner import ScanOptions
from trace_assets.steps.raw_scan import RawTreeScan
from trace_assets.store.s3_options import storage_options
from trace_assets.store.trace_store import TraceStore
from trace_assets_tests.support.helpers import SAMPLE_RUN, SAMPLE_TRACES
from trace_assets_tests.support.s3_fixtures import make_s3fs, upload_tree
from trace_assets_tests.support.secret_framings import PROMPT, crc_token

TRIAL = "stack-bash-1318__pZPPTdh"
CHUNK = 4096


def test_s3_raw_scan_finds_prompt_and_chunk_straddling_secrets_like_a_local_one(tmp_path, s3_endpoint, s3_bucket):
    rng = random.Random(15)
    in_prompt, across = crc_token(rng, "ghp_"), crc_token(rng, "ghp_")
    local = tmp_path / "traces"
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, local / SAMPLE_RUN)
    trial = local / SAMPLE_RUN / "trace_jobs" / TRIAL
    prompt = trial / "agent" / "episode-4" / "prompt.txt"
    prompt.write_text(prompt.read_text() + f"\n{PROMPT}cat .env\nGITHUB_TOKEN={in_prompt}\n")
    (trial / "agent" / "big.log").write_text("x " * (CHUNK // 2 - 10) + f" {across} " + "y " * CHUNK)
    root = f"s3://{s3_bucket}/traces"
    upload_tree(local / SAMPLE_RUN, make_s3fs(s3_endpoint), f"{root}/{SAMPLE_RUN}")
    storage = ObjectStorage(endpoint_url=s3_endpoint, region_name="us-east-1")

    reports = [
        RawTreeScan(store, RunScope(SAMPLE_RUN), ScanOptions(), chunk_bytes=CHUNK, overlap_chars=1024).run()
        for store in (TraceStore(root, storage_options(storage, root), max_concurrency=16), TraceStore(str(local)))
    ]
    s3, on_disk = reports
    assert s3 == on_disk  # same objects, bytes, chunks, findings
    found = {entry["object"]: entry["kinds"] for entry in s3["objects"]}
    assert found[f"{TRIAL}/agent/episode-4/prompt.txt"] == {"github_token": {"live": 1}}
    assert found[f"{TRIAL}/agent/big.log"] == {"github_token": {"live": 1}}


def test_s3_objects_of_exactly_n_chunks_and_objects_deleted_after_the_listing_scan_like_local_ones(
    tmp_path, s3_endpoint, s3_bucket
):
    """A range from an object's end is a 416 on S3 (from its start too, once it was emptied) and a
    deleted object a 404: none fails the scan."""
    token = crc_token(random.Random(16), "ghp_")
    tail = f" {token}\n"
    files = {
        f"{TRIAL}/agent/exact.log": "a " * ((3 * CHUNK - len(tail)) // 2) + tail,
        f"{TRIAL}/agent/gone-small.txt": "small\n",
        f"{TRIAL}/agent/gone-large.log": "b " * CHUNK,
        f"{TRIAL}/agent/kept.txt": "kept\n",
        f"{TRIAL}/agent/emptied.log": "c " * CHUNK,
    }
    gone = {f"{TRIAL}/agent/gone-small.txt", f"{TRIAL}/agent/gone-large.log"}
    emptied = f"{TRIAL}/agent/emptied.log"
    local = tmp_path / "traces"
    for key, text in files.items():
        path = local / SAMPLE_RUN / "trace_jobs" / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert (local / SAMPLE_RUN / "trace_jobs" / TRIAL / "agent" / "exact.log").stat().st_size == 3 * CHUNK
    root = f"s3://{s3_bucket}/traces"
    fs = make_s3fs(s3_endpoint)
    upload_tree(local / SAMPLE_RUN, fs, f"{root}/{SAMPLE_RUN}")
    storage = ObjectStorage(endpoint_url=s3_endpoint, region_name="us-east-1")

    def scan(store: TraceStore, delete, empty) -> dict:
        listed = store.iter_run

        def delete_after_listing(scope):
            for page in listed(scope):
                for key in gone & set(page.keys):
                    delete(key)
                if emptied in page.keys:
                    empty(emptied)
                yield page

        store.iter_run = delete_after_listing  # type: ignore[method-assign]
        return RawTreeScan(store, RunScope(SAMPLE_RUN), ScanOptions(), chunk_bytes=CHUNK, overlap_chars=1024).run()

    s3 = scan(
        TraceStore(root, storage_options(storage, root), max_concurrency=16),
        lambda key: fs.rm_file(f"{root}/{SAMPLE_RUN}/trace_jobs/{key}"),
        lambda key: fs.pipe_file(f"{root}/{SAMPLE_RUN}/trace_jobs/{key}", b""),
    )
    on_disk = scan(
        TraceStore(str(local)),
        lambda key: (local / SAMPLE_RUN / "trace_jobs" / key).unlink(),
        lambda key: (local / SAMPLE_RUN / "trace_jobs" / key).write_bytes(b""),
    )
    assert s3 == on_disk
    assert (s3["skipped"], s3["objects_scanned"], s3["chunks_scanned"]) == (
        {"unreadable": 2},
        3,
        4,
    )  # the emptied one: scanned, no chunk
    assert {entry["object"]: entry["kinds"] for entry in s3["objects"]} == {
        f"{TRIAL}/agent/exact.log": {"github_token": {"live": 1}}
    }
