"""Pytest plugin: a real S3 endpoint (moto) for tests, with fault injection on demand.

Register it from a conftest with ``pytest_plugins = ["trace_assets_tests.support.s3_fixtures"]``.
Code under test talks to moto over HTTP exactly as it would to S3, so nothing in
s3fs or botocore is patched. CI may run one standalone ``moto_server`` for the
whole job and export its URL as ``TRACE_ASSETS_TEST_S3_ENDPOINT``; otherwise each
test session starts moto in a thread of its own.
"""

from __future__ import annotations

import functools
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from trace_assets_tests.support.fault_proxy import FaultProxy

if TYPE_CHECKING:  # imported where used: every pytest run loads this plugin, most use no S3 (0.6 s)
    import s3fs
    from aiobotocore.session import AioSession

ENDPOINT_ENV_VAR = "TRACE_ASSETS_TEST_S3_ENDPOINT"
FAKE_ACCESS_KEY = "testing"
FAKE_SECRET_KEY = "testing"
REGION = "us-east-1"


@functools.cache
def _shared_botocore_session() -> AioSession:
    """One session for every test filesystem: it caches the S3 service model, slow to load for each client."""
    from aiobotocore.session import AioSession

    return AioSession()


def make_s3fs(endpoint_url: str, *, retries: int | None = None, **kwargs: Any) -> s3fs.S3FileSystem:
    """A fresh S3FileSystem on `endpoint_url` that never answers from a stale cache.

    Clients come from one shared botocore session unless ``session=`` is given.
    `retries` sets s3fs's own retry loop (a class attribute, 5 by default, that
    the constructor does not take); other keyword arguments, such as
    ``config_kwargs={"retries": {...}}`` for botocore's, go to S3FileSystem.
    """
    import s3fs

    fs = s3fs.S3FileSystem(
        endpoint_url=endpoint_url,
        key=FAKE_ACCESS_KEY,
        secret=FAKE_SECRET_KEY,
        client_kwargs={"region_name": REGION},
        skip_instance_cache=True,
        use_listings_cache=False,
        **{"session": _shared_botocore_session(), **kwargs},
    )
    if retries is not None:
        fs.retries = retries
    return fs


def upload_tree(local_dir: Path, fs: s3fs.S3FileSystem, url: str) -> list[str]:
    """Copy every file under `local_dir` to `url` (``s3://bucket/prefix``), keeping relative paths.

    Source and target paths are listed one to one, so the result never depends
    on fsspec's rules about whether the target "directory" already exists.
    Returns the remote paths written.
    """
    local_files = sorted(path for path in local_dir.rglob("*") if path.is_file())
    prefix = url.rstrip("/")
    remote_paths = [f"{prefix}/{path.relative_to(local_dir).as_posix()}" for path in local_files]
    if local_files:
        fs.put([str(path) for path in local_files], remote_paths)
    return remote_paths


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """URL of an S3-compatible endpoint, with fake credentials in the environment."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("AWS_ACCESS_KEY_ID", FAKE_ACCESS_KEY)
        env.setenv("AWS_SECRET_ACCESS_KEY", FAKE_SECRET_KEY)
        env.setenv("AWS_DEFAULT_REGION", REGION)
        for leaked in ("AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_PROFILE"):
            env.delenv(leaked, raising=False)
        external = os.environ.get(ENDPOINT_ENV_VAR)
        if external:
            yield external.rstrip("/")
            return
        from moto.server import ThreadedMotoServer  # slow to import, and not needed with CI's server

        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        try:
            host, port = server.get_host_and_port()
            yield f"http://{host}:{port}"
        finally:
            server.stop()


@pytest.fixture(scope="session")
def s3_admin_client(s3_endpoint: str) -> Any:
    """A boto3 S3 client for setting up and tearing down buckets; made once, as clients are slow to build."""
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        aws_access_key_id=FAKE_ACCESS_KEY,
        aws_secret_access_key=FAKE_SECRET_KEY,
        region_name=REGION,
    )


@pytest.fixture
def s3_bucket(s3_admin_client: Any) -> Iterator[str]:
    """A new, empty bucket of a unique name; emptied and deleted afterwards.

    Deleting matters when a shared moto server outlives the session: it keeps
    everything in memory.
    """
    name = f"test-{uuid.uuid4().hex[:20]}"
    s3_admin_client.create_bucket(Bucket=name)
    yield name
    for page in s3_admin_client.get_paginator("list_objects_v2").paginate(Bucket=name):
        keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
        if keys:
            s3_admin_client.delete_objects(Bucket=name, Delete={"Objects": keys, "Quiet": True})
    s3_admin_client.delete_bucket(Bucket=name)


@pytest.fixture
def s3fs_filesystem(s3_endpoint: str) -> s3fs.S3FileSystem:
    """An S3FileSystem talking straight to the endpoint, with s3fs's default retries."""
    return make_s3fs(s3_endpoint)


@pytest.fixture
def fault_proxy(s3_endpoint: str) -> Iterator[FaultProxy]:
    """A FaultProxy in front of the endpoint; point s3fs at ``fault_proxy.url``."""
    with FaultProxy(s3_endpoint) as proxy:
        yield proxy
