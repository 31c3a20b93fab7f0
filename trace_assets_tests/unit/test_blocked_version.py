"""What a block does to the version published before it (`publishing.blocked_version.decide`):
kept only when it is shown to hold none of the blocking findings in the clear; and how the scope's
history (`versions.json`, the card's table) records it."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq

from trace_assets.publishing.blocked_version import BlockDecision, PreviousVersion, decide, exported_sources
from trace_assets.publishing.card import history_prose
from trace_assets.publishing.targets import published_version
from trace_assets.publishing.versions import block_entry, history, with_block
from trace_assets.secret_scan.verdicts import Verdict

LIVE = frozenset({Verdict.LIVE})
KEY = {"kind": "hf_token", "fingerprint": "aaaa", "trial_name": "t1", "verdict": "live", "occurrences": 1}


def _report(*findings, redacted=None, omitted=0):
    kinds: dict = {}
    for f in findings:
        counts = kinds.setdefault(f["kind"], {"live": 0, "unverified": 0})
        counts[f["verdict"]] = counts.get(f["verdict"], 0) + f["occurrences"]
    return {"findings": list(findings), "findings_omitted": omitted, "kinds": kinds, "redacted": redacted or {}}


def _decide(report, previous_report, previous, current=None, blocking=None):
    return decide(report, LIVE, blocking or {"hf_token": 1}, current or {"t1": "src1"}, previous_report, previous)


def test_nothing_published_before():
    assert _decide(_report(KEY), None, None).previous == PreviousVersion.NONE
    # a blocked scope's folder: its scan report (which holds the decision) and no trial list
    withdrawn = {**_report(KEY), "previous_version": {"decision": "withdrawn", "why": "..."}}
    assert _decide(_report(KEY), withdrawn, None).previous == PreviousVersion.NONE


def test_a_version_that_replaced_the_key_is_kept():
    earlier = _report(KEY, redacted={"hf_token": 1})
    assert _decide(_report(KEY), earlier, {"t1": "src1"}).previous == PreviousVersion.KEPT


def test_a_version_that_published_the_key_as_it_is_is_withdrawn():
    block = _decide(_report(KEY), _report(KEY), {"t1": "src1"})
    assert block.previous == PreviousVersion.WITHDRAWN
    assert block.line == "the version published before is withdrawn: it holds hf_token aaaa (trial t1) in the clear"


def test_a_key_the_earlier_scan_did_not_know_in_a_trial_published_as_it_is_now_is_withdrawn():
    """A newer scanner's kind: the earlier report lists nothing, but the trial's source is the same."""
    assert _decide(_report(KEY), _report(), {"t1": "src1"}).previous == PreviousVersion.WITHDRAWN


def test_a_key_in_a_trial_the_earlier_version_did_not_publish_or_published_from_other_files_keeps_it():
    assert _decide(_report(KEY), _report(), {"t2": "src2"}).previous == PreviousVersion.KEPT
    assert _decide(_report(KEY), _report(), {"t1": "older"}).previous == PreviousVersion.KEPT


def test_what_cannot_be_shown_withdraws():
    unread = _decide(_report(KEY), {"findings": []}, None)
    assert (
        unread.previous == PreviousVersion.WITHDRAWN and unread.why == "its scan report or trial list could not be read"
    )
    omitted = _decide(_report(KEY, omitted=3), _report(), {})
    assert omitted.previous == PreviousVersion.WITHDRAWN and "only some of its findings" in omitted.why
    private = _decide(_report(), _report(), {}, blocking={"private:email": 2})
    assert private.previous == PreviousVersion.WITHDRAWN
    partly = _report(KEY, {**KEY, "fingerprint": "bbbb", "trial_name": "t9"}, redacted={"hf_token": 1})
    assert _decide(_report(KEY), partly, {"t1": "src1"}).previous == PreviousVersion.WITHDRAWN  # 1 of 2 replaced


def test_a_withdrawal_the_target_cannot_make_is_said_so_and_the_decision_round_trips():
    block = _decide(_report(KEY), _report(KEY), {"t1": "src1"}).done(withdrawn=False)
    assert block.previous == PreviousVersion.LEFT and block.line.startswith(
        "the version published before is left published, withdraw it by hand: it holds hf_token aaaa"
    )
    assert BlockDecision.read(block.stored()) == block


def test_exported_sources_reads_a_trials_table():
    table = pa.table(
        {"trial_name": ["t1", "t2"], "status": ["exported", "excluded"], "source_fingerprint": ["src1", "src2"]}
    )
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    assert exported_sources(buffer.getvalue()) == {"t1": "src1"}


VERSION = {"version": "v1", "published_at": "2026-12-01 10:00 UTC", "trial_dirs": 3, "scored": 3, "exported": 2,
           "rows": 2, "objects": 9, "bytes": 900, "options": [], "why": "first published version"}  # fmt: skip


def test_a_block_is_an_entry_of_the_history_and_the_card_says_what_became_of_the_version():
    hostile = "it holds hf_token aaaa (trial a|b`c\n## Injected <script>) in the clear"
    kept = block_entry("kept", "it holds none of the 1 blocking finding(s) in the clear", ["hf_token"], "12-02")
    withdrawn = block_entry("withdrawn", hostile, ["hf_token"], "2026-12-03 10:00 UTC")
    entries = with_block(with_block([VERSION], kept), withdrawn)
    assert with_block(entries, dict(withdrawn)) == entries  # blocked again the same way: nothing new
    assert published_version({"versions": [VERSION, kept]}) == "v1"  # kept: still published
    assert published_version({"versions": entries}) is None  # withdrawn: nothing is
    left = block_entry("left published", "why", ["hf_token"], "12-04")
    assert published_version({"versions": [*entries, VERSION, left]}) == "v1"

    again = history(entries, {**VERSION, "version": "v2", "rows": 1})  # compared with v1, not with a block
    assert again[-1]["why"] == "the same source read again under changed export rules"
    lines = history_prose(again).splitlines()
    assert lines[2].startswith("| `v2` |")
    assert lines[3].startswith(
        "| blocked | 2026-12-03 10:00 UTC | - | - | - | - | blocked by the secret scan (hf_token); "
    )
    assert lines[3].count(" | ") == 6 and "\n" not in lines[3] and "\\|" in lines[3]  # one row, its cells whole
    assert "the version before was withdrawn: ``it holds" in lines[3]  # the folder's text in a code span
    assert "the version before was kept: `it holds none of the 1" in lines[4]
    assert lines[5].startswith("| `v1` |")
    # a history read back whose block entry is not as written: still one row
    odd = {"blocked_at": "a|b\nc", "blocked": {"kinds": 5, "previous_version": ["x"], "why": 7}}
    [row] = history_prose([odd]).splitlines()[2:]
    assert (
        row.startswith("| blocked | a\\|b c | - | - | - | - | blocked by the secret scan (findings); ")
        and row.count(" | ") == 6
    )
