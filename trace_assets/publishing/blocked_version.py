"""What a blocked scope does to the version published before it, decided on purpose: kept when it
holds none of the blocking findings in the clear, withdrawn (its folder left with the new scan
report alone) when it does, or when that cannot be shown.

A blocking finding is in the earlier version's text when that version's scan listed its
fingerprint, or when its trial was exported there from the same source files (`trials.parquet`'s
`source_fingerprint`: the earlier scan may not have known its kind). It is in the clear there
unless that version replaced every match of its kind (its report's `redacted` count at least its
`live` and `unverified` matches). Fingerprints and counts only: no secret is read back.
"""

from __future__ import annotations

import io
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from trace_assets.secret_scan.verdicts import Verdict


class PreviousVersion(StrEnum):
    """What became of the version published before a blocked run."""

    NONE = "none"  # nothing was published
    KEPT = "kept"  # it holds none of the blocking findings in the clear: it stays published
    WITHDRAWN = "withdrawn"  # it holds one in the clear (or may): only the scan report is left
    LEFT = "left published"  # it should be withdrawn, but the target writes nothing for a block


@dataclass(frozen=True)
class BlockDecision:
    """The decision and why, in one clause each place says it (the failure line, the scan report,
    `status`, the asset's metadata)."""

    previous: PreviousVersion
    why: str = ""

    @property
    def line(self) -> str:
        match self.previous:
            case PreviousVersion.NONE:
                return "nothing was published before"
            case PreviousVersion.LEFT:
                return f"the version published before is left published, withdraw it by hand: {self.why}"
            case _:
                return f"the version published before is {self.previous}: {self.why}"

    def stored(self) -> dict[str, str]:
        """As the scan report holds it (`previous_version`)."""
        return {"decision": str(self.previous), "why": self.why}

    @classmethod
    def read(cls, stored: Mapping[str, str]) -> BlockDecision:
        return cls(PreviousVersion(stored["decision"]), stored.get("why", ""))

    def done(self, withdrawn: bool) -> BlockDecision:
        """The decision as carried out: a withdrawal the target did not make is `LEFT`."""
        if self.previous == PreviousVersion.WITHDRAWN and not withdrawn:
            return BlockDecision(
                PreviousVersion.LEFT, f"{self.why}; this target writes nothing for a blocked scope (a dry run, "
                "or a repo per scope on the Hub)"
            )  # fmt: skip
        return self


def exported_sources(trials: bytes | Path) -> dict[str, str]:
    """Each exported trial's source fingerprint, from a `trials.parquet` (its bytes, or a path)."""
    import pyarrow.parquet as pq  # here: `trace-assets status` reads `PreviousVersion` without pyarrow

    source = io.BytesIO(trials) if isinstance(trials, bytes) else trials
    table = pq.read_table(source, columns=["trial_name", "status", "source_fingerprint"])
    return {
        name: fingerprint or ""
        for name, status, fingerprint in zip(*(table.column(c).to_pylist() for c in table.column_names))
        if status == "exported"
    }


def decide(
    report: Mapping[str, Any],
    blocked: Collection[Verdict],
    blocking: Mapping[str, int],
    current: Mapping[str, str],
    previous_report: Mapping[str, Any] | None,
    previous: Mapping[str, str] | None,
) -> BlockDecision:
    """Keep or withdraw the earlier version. `report`: the blocked scan's; `blocked`: the verdicts the
    policy blocks on; `blocking`: `ScanPolicy.blocking`'s counts; `current`: each exported trial's
    source fingerprint now; `previous_report` and `previous`: the earlier version's scan report and
    exported trials (None: unreadable; nothing is published when the trials are None and the report
    is too, or is a blocked scan's, which holds `previous_version`)."""
    if previous is None and (previous_report is None or "previous_version" in previous_report):
        return BlockDecision(PreviousVersion.NONE)  # nothing, or a blocked scope's report alone
    if previous_report is None or previous is None:
        return BlockDecision(PreviousVersion.WITHDRAWN, "its scan report or trial list could not be read")
    if any(name.startswith("private:") for name in blocking):
        return BlockDecision(PreviousVersion.WITHDRAWN, "private values block this run, and it was published with them")
    if report.get("findings_omitted"):
        return BlockDecision(PreviousVersion.WITHDRAWN, "the scan listed only some of its findings")
    verdicts = {str(verdict) for verdict in blocked}
    found = [entry for entry in report.get("findings", []) if entry.get("verdict") in verdicts]
    earlier = {entry.get("fingerprint") for entry in previous_report.get("findings", [])}
    replaced = _replaced_kinds(previous_report)
    for entry in found:
        trial = entry.get("trial_name", "")
        there = entry.get("fingerprint") in earlier or (trial in previous and previous[trial] == current.get(trial))
        if there and entry.get("kind") not in replaced:
            return BlockDecision(
                PreviousVersion.WITHDRAWN,
                f"it holds {entry.get('kind')} {entry.get('fingerprint')} (trial {trial}) in the clear",
            )
    return BlockDecision(
        PreviousVersion.KEPT,
        f"it holds none of the {len(found)} blocking finding(s) in the clear (replaced there, or from trials it "
        "did not publish as they are now)",
    )


def _replaced_kinds(report: Mapping[str, Any]) -> set[str]:
    """The kinds whose every live and unverified match that version replaced."""
    redacted = report.get("redacted") or {}
    replaced = set()
    for kind, counts in (report.get("kinds") or {}).items():
        redactable = int(counts.get(str(Verdict.LIVE), 0)) + int(counts.get(str(Verdict.UNVERIFIED), 0))
        if redactable and int(redacted.get(kind, 0)) >= redactable:
            replaced.add(kind)
    return replaced
