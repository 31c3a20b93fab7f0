"""What the scan concludes, per finding and per run: closed choices, never free strings."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Any


class Verdict(StrEnum):
    """One finding's verdict.

    `live`: the exact format of its kind (a checksum, a decodable structure, a parseable key).
    `unverified`: the rough shape only, beside a credential word or keyword; it may be real.
    `near_miss`: a token's prefix whose body fails its kind's exact format (length, checksum,
    charset) with no credential word before it: an identifier or a test string far more often than
    a key, so reported and kept (a policy acts on `live` and `unverified` only).
    `placeholder`: a sample's tells, a known public sample key, or an allowlisted fingerprint.
    """

    LIVE = "live"
    UNVERIFIED = "unverified"
    NEAR_MISS = "near_miss"
    PLACEHOLDER = "placeholder"


class RunVerdict(StrEnum):
    """A run's verdict: the worst of its findings; `redacted` once publishing replaced them."""

    LIVE = "live"
    UNVERIFIED = "unverified"
    NEAR_MISSES = "near_misses"  # near misses, always kept as read (placeholders beside them or not)
    PLACEHOLDERS_ONLY = "placeholders_only"
    CLEAN = "clean"
    REDACTED = "redacted"


def run_verdict(verdict_counts: dict[Verdict, int]) -> RunVerdict:
    """`live` if anything is verifiably live, `unverified` if something may be, `near_misses` if a
    near miss is the worst, `placeholders_only`, else `clean`. The last three: nothing a policy acts on."""
    for verdict, of_run in (
        (Verdict.LIVE, RunVerdict.LIVE),
        (Verdict.UNVERIFIED, RunVerdict.UNVERIFIED),
        (Verdict.NEAR_MISS, RunVerdict.NEAR_MISSES),
        (Verdict.PLACEHOLDER, RunVerdict.PLACEHOLDERS_ONLY),
    ):
        if verdict_counts.get(verdict):
            return of_run
    return RunVerdict.CLEAN


class PrivateCategory(StrEnum):
    EMAIL = "email"
    PRIVATE_IP = "private_ip"
    INTERNAL_HOST = "internal_host"
    INTERNAL_URL = "internal_url"
    HOME_PATH = "home_path"
    OPERATOR = "operator"  # always replaced, whatever `on_private` says


def found_by_category(report: dict[str, Any]) -> dict[str, int]:
    """The non-placeholder matches of each category a report's `privacy` section found (none: left out)."""
    counts = (report.get("privacy") or {}).get("categories", {})
    found = {category: v.get("matches", 0) - v.get("placeholders", 0) for category, v in counts.items()}
    return {category: n for category, n in found.items() if n}


def found_values(report: dict[str, Any], categories: Iterable[str]) -> int:
    """How many non-placeholder matches a report's `privacy` section holds in `categories`."""
    found = found_by_category(report)
    return sum(found.get(category, 0) for category in categories)
