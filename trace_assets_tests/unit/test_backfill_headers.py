"""TRACE_ASSETS_DAGSTER_HEADERS as `backfill_api` reads it, without a webserver (dagster/test_backfill.py
sends the headers through a proxy to a real one)."""

from __future__ import annotations

import pytest

from trace_assets.cli.backfill_api import parse_headers


@pytest.mark.parametrize("text", ["Authorization", "=x", "Bad Name=x", "X-A=1;Authorization: Bearer x"])
def test_malformed_headers_name_the_setting_not_the_values(text):
    with pytest.raises(ValueError, match="TRACE_ASSETS_DAGSTER_HEADERS: entry") as raised:
        parse_headers(text)
    assert "Bearer" not in str(raised.value)
    assert parse_headers(" Authorization=Bearer a=b ;;X-Other=y") == {"Authorization": "Bearer a=b", "X-Other": "y"}
