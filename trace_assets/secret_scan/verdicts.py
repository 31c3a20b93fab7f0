"""What the scan concludes, per finding and per run: closed choices, never free strings."""

from __future__ import annotations

from enum import StrEnum


class Verdict(StrEnum):
    """One finding's verdict.

    `live`: the exact format of its kind (a checksum, a decodable structure, a parseable key).
    `unverified`: the rough shape only; it may be real. `placeholder`: a sample's tells, a known
    public sample key, or an allowlisted fingerprint.
    """

    LIVE = "live"
    UNVERIFIED = "unverified"
    PLACEHOLDER = "placeholder"


class RunVerdict(StrEnum):
    """A run's verdict: the worst of its findings; `redacted` once publishing replaced them."""

    LIVE = "live"
    UNVERIFIED = "unverified"
    PLACEHOLDERS_ONLY = "placeholders_only"
    CLEAN = "clean"
    REDACTED = "redacted"


def run_verdict(verdict_counts: dict[Verdict, int]) -> RunVerdict:
    """`live` if anything is verifiably live, `unverified` if something may be, `placeholders_only`, else `clean`."""
    if verdict_counts.get(Verdict.LIVE):
        return RunVerdict.LIVE
    if verdict_counts.get(Verdict.UNVERIFIED):
        return RunVerdict.UNVERIFIED
    if verdict_counts.get(Verdict.PLACEHOLDER):
        return RunVerdict.PLACEHOLDERS_ONLY
    return RunVerdict.CLEAN
