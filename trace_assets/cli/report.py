"""Sentences `materialize` and its `--dry-run` share: a run's coverage, and what lifts a block."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trace_assets.secret_scan.policy import ScanPolicy
from trace_assets.secret_scan.verdicts import Verdict

# What lifts a block, for each verdict a policy can block on.
_UNBLOCK = {Verdict.LIVE: "--on-secret redact (or allow)", Verdict.UNVERIFIED: "--on-unverified redact (or keep)"}


def coverage_sentence(coverage: dict[str, Any]) -> str:
    excluded = ", ".join(
        f"{count} {reason}" for reason, count in sorted(coverage["excluded"].items(), key=lambda i: -i[1])
    )
    return (
        f"{coverage['trial_dirs']} trial folders, {coverage['scored']} scored, {coverage['exported']} exported "
        f"({coverage['export_ratio']:.2%} of scored)" + (f"; excluded: {excluded}" if excluded else "")
    )


def unblocking(policy: ScanPolicy, report: Path) -> str:
    """For a scope the secret scan blocks: the options that would publish it, and where its report
    is; "" when nothing in the report is blocked."""
    if not report.exists():
        return ""
    kinds = json.loads(report.read_text()).get("kinds", {})
    found = {verdict for counts in kinds.values() for verdict, count in counts.items() if count}
    options = [option for verdict, option in _UNBLOCK.items() if verdict in policy.blocked and verdict in found]
    return f"to publish, run again with {' and '.join(options)}; scan report: {report}" if options else ""
