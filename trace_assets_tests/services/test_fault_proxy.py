"""How s3fs copes with throttling, server errors and dropped connections, through FaultProxy.

Three layers can retry a failed S3 request, innermost first:
aiohttp (once, for idempotent methods, when a connection is reset or closed
without an answer), botocore (``config_kwargs={"retries": ...}``; 500/503,
throttling codes, connection errors) and s3fs's own loop (``fs.retries``;
SlowDown and HTTP-level client errors, but not InternalError). Each test turns
off the layers it is not about, which also keeps it fast: botocore's backoff is
rand(0, 1) * 2**attempt seconds and cannot be shortened, s3fs's is 0.1 * 1.7**i.
"""

from __future__ import annotations

import http.client
from collections.abc import Callable
from urllib.parse import urlsplit

import pytest
import s3fs

from trace_assets_tests.support.fault_proxy import Fault, FaultProxy
from trace_assets_tests.support.s3_fixtures import make_s3fs

RESULT_JSON = b'{"task_name": "stack-bash-1", "verifier_result": {"rewards": {"reward": 1.0}}}'


def botocore_attempts(total: int) -> dict[str, dict[str, int]]:
    """config_kwargs for S3FileSystem: at most `total` attempts per request inside botocore."""
    return {"retries": {"total_max_attempts": total}}


@pytest.fixture
def trial_keys(s3_bucket: str, s3fs_filesystem: s3fs.S3FileSystem) -> tuple[str, str]:
    """Two trials' result.json, written straight to the endpoint (no faults)."""
    keys = (
        f"{s3_bucket}/run/trace_jobs/stack-bash-1__AAAAAAA/result.json",
        f"{s3_bucket}/run/trace_jobs/stack-bash-2__BBBBBBB/result.json",
    )
    s3fs_filesystem.pipe({key: RESULT_JSON for key in keys})
    return keys


def test_proxy_forwards_and_counts_by_request_kind(fault_proxy: FaultProxy, s3_bucket: str) -> None:
    fs = make_s3fs(fault_proxy.url)
    fs.pipe({f"{s3_bucket}/run/a.json": b"x" * 1000, f"{s3_bucket}/run/b.json": b"y" * 10})
    assert fault_proxy.stats["put"] == 2

    def kinds_used_by(operation: Callable[[], object]) -> dict[str, int]:
        fault_proxy.reset_stats()
        operation()
        return {kind: count for kind in ("list", "head", "get", "put", "other") if (count := fault_proxy.stats[kind])}

    assert kinds_used_by(lambda: fs.find(f"{s3_bucket}/run")) == {"list": 1}
    assert kinds_used_by(lambda: fs.info(f"{s3_bucket}/run/a.json")) == {"head": 1}
    # max_concurrency=1 spares the HEAD that s3fs otherwise sends to size the object first.
    assert kinds_used_by(lambda: fs.cat_file(f"{s3_bucket}/run/a.json", max_concurrency=1)) == {"get": 1}
    stats = fault_proxy.stats
    assert stats["response_body_bytes"] == 1000
    assert stats["connections"] == 0  # botocore reused its pooled connection
    assert stats["faults_injected"] == 0


def test_chunked_bodies_are_forwarded_over_one_kept_alive_connection(
    fault_proxy: FaultProxy, s3_bucket: str, s3fs_filesystem: s3fs.S3FileSystem
) -> None:
    connection = http.client.HTTPConnection(urlsplit(fault_proxy.url).netloc)
    for name in ("a.txt", "b.txt"):
        connection.request("PUT", f"/{s3_bucket}/{name}", body=iter([b"hello ", b"world"]), encode_chunked=True)
        response = connection.getresponse()
        response.read()
        assert response.status == 200
    connection.close()

    assert s3fs_filesystem.cat(f"{s3_bucket}/b.txt") == b"hello world"
    assert (fault_proxy.stats["connections"], fault_proxy.stats["put"]) == (1, 2)


def test_slowdown_on_first_two_gets_is_retried_by_s3fs(fault_proxy: FaultProxy, trial_keys: tuple[str, str]) -> None:
    key = trial_keys[0]
    rule = fault_proxy.add_fault(Fault.SLOW_DOWN, method="GET", path_contains=key, first=2)
    fs = make_s3fs(fault_proxy.url, config_kwargs=botocore_attempts(1))

    assert fs.cat(key) == RESULT_JSON
    assert rule.injected == 2
    assert fault_proxy.stats["get"] == 3


def test_slowdown_is_also_retried_by_botocore(fault_proxy: FaultProxy, trial_keys: tuple[str, str]) -> None:
    key = trial_keys[0]
    fault_proxy.add_fault(Fault.SLOW_DOWN, method="GET", path_contains=key, first=1)
    fs = make_s3fs(fault_proxy.url, retries=1, config_kwargs=botocore_attempts(2))

    assert fs.cat(key) == RESULT_JSON
    assert fault_proxy.stats["get"] == 2


def test_internal_error_is_retried_by_botocore_but_not_by_s3fs(
    fault_proxy: FaultProxy, trial_keys: tuple[str, str]
) -> None:
    key = trial_keys[0]
    fault_proxy.add_fault(Fault.INTERNAL_ERROR, method="GET", path_contains=key, first=1)
    s3fs_only = make_s3fs(fault_proxy.url, config_kwargs=botocore_attempts(1))
    with pytest.raises(OSError, match="internal error"):
        s3fs_only.cat(key)
    assert fault_proxy.stats["get"] == 1

    fault_proxy.clear_faults()
    fault_proxy.reset_stats()
    fault_proxy.add_fault(Fault.INTERNAL_ERROR, method="GET", path_contains=key, first=1)
    botocore_only = make_s3fs(fault_proxy.url, retries=1, config_kwargs=botocore_attempts(2))
    assert botocore_only.cat(key) == RESULT_JSON
    assert fault_proxy.stats["get"] == 2


@pytest.mark.parametrize("fault", [Fault.RESET_CONNECTION, Fault.CLOSE_CONNECTION])
def test_one_dropped_connection_is_absorbed_by_aiohttp(
    fault: Fault, fault_proxy: FaultProxy, trial_keys: tuple[str, str]
) -> None:
    key = trial_keys[0]
    fault_proxy.add_fault(fault, method="GET", path_contains=key, first=1)
    no_retries = make_s3fs(fault_proxy.url, retries=1, config_kwargs=botocore_attempts(1))

    assert no_retries.cat(key) == RESULT_JSON
    assert fault_proxy.stats["get"] == 2


@pytest.mark.parametrize("fault", [Fault.RESET_CONNECTION, Fault.CLOSE_CONNECTION])
def test_repeatedly_dropped_connection_is_retried(
    fault: Fault, fault_proxy: FaultProxy, trial_keys: tuple[str, str]
) -> None:
    key = trial_keys[0]
    fault_proxy.add_fault(fault, method="GET", path_contains=key, first=2)
    fs = make_s3fs(fault_proxy.url, config_kwargs=botocore_attempts(2))

    assert fs.cat(key) == RESULT_JSON
    assert fault_proxy.stats["get"] == 3


def test_every_second_listing_page_throttled_still_lists_everything(
    fault_proxy: FaultProxy, s3_bucket: str, s3fs_filesystem: s3fs.S3FileSystem
) -> None:
    s3fs_filesystem.pipe({f"{s3_bucket}/run/trace_jobs/t{i}/result.json": b"{}" for i in range(3)})
    rule = fault_proxy.add_fault(Fault.SLOW_DOWN, method="GET", query_contains="list-type=2", every=2)
    fs = make_s3fs(fault_proxy.url, config_kwargs=botocore_attempts(1))

    listings = [fs.find(f"{s3_bucket}/run/trace_jobs") for _ in range(2)]

    assert listings[0] == listings[1] and len(listings[0]) == 3
    assert (rule.matched, rule.injected) == (3, 1)
    assert fault_proxy.stats["list"] == 3


def test_permanent_fault_on_one_key_is_reported_against_that_key(
    fault_proxy: FaultProxy, trial_keys: tuple[str, str]
) -> None:
    broken, healthy = trial_keys
    fault_proxy.add_fault(Fault.SLOW_DOWN, method="GET", path_contains="stack-bash-1__AAAAAAA/result.json")
    fs = make_s3fs(fault_proxy.url, retries=2, config_kwargs=botocore_attempts(1))

    results = fs.cat([broken, healthy], on_error="return")

    assert results[healthy] == RESULT_JSON
    assert isinstance(results[broken], OSError)
    assert "reduce your request rate" in str(results[broken])
    # s3fs's own message does not carry the key: callers that raise must add it.
    with pytest.raises(OSError, match="reduce your request rate"):
        fs.cat(broken)
