"""The fault proxy's own rules, without a proxy or a server: which S3 request kind a request is,
and how a rule counts matches (services/test_fault_proxy.py puts them in front of S3)."""

from __future__ import annotations

import pytest

from trace_assets_tests.support.fault_proxy import Fault, FaultRule, request_kind


def test_request_kinds_follow_s3_operations() -> None:
    assert request_kind("GET", "/bucket", "list-type=2&prefix=run%2F") == "list"
    assert request_kind("GET", "/bucket/run/trace_jobs/t/result.json", "") == "get"
    assert request_kind("HEAD", "/bucket/run/a.json", "") == "head"
    assert request_kind("PUT", "/bucket/run/a.json", "") == "put"
    assert request_kind("GET", "/bucket", "location") == "other"
    assert request_kind("POST", "/bucket", "delete") == "other"


def test_fault_rule_counts_matches_and_rejects_ambiguous_schedules() -> None:
    every_third = FaultRule(Fault.INTERNAL_ERROR, every=3)
    assert [every_third.take() for _ in range(6)] == [False, False, True, False, False, True]
    with pytest.raises(ValueError):
        FaultRule(Fault.SLOW_DOWN, first=1, every=2)
