"""The verdict a passed `no_live_secrets` shows: the scan's, and when the policy let the scope
publish by redacting what it found, that it did (a bare `live` beside "Passed" reads as a leak)."""

from __future__ import annotations

from trace_assets.secret_scan.policy import ScanPolicy

LIVE = {"verdict": "live", "kinds": {"github_token": {"live": 2, "unverified": 0, "placeholder": 1}}}
CLEAN = {"verdict": "clean", "kinds": {}}


def test_a_redacting_policy_says_the_scope_was_published_without_them():
    text = ScanPolicy(on_secret="redact").verdict_text(LIVE)
    assert text == "live, redacted by policy: published without them"


def test_an_allowing_policy_says_the_scope_was_published_with_them():
    text = ScanPolicy(on_secret="allow").verdict_text(LIVE)
    assert text == "live, allowed by policy: published with them"


def test_a_blocking_policy_or_nothing_found_leaves_the_scans_verdict():
    assert ScanPolicy(on_secret="block").verdict_text(LIVE) == "live"  # the check fails: blocked
    assert ScanPolicy(on_secret="redact").verdict_text(CLEAN) == "clean"
