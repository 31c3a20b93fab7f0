"""What publishing does about the scan's findings, per verdict: closed choices, never free strings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from trace_assets.secret_scan.verdicts import PrivateCategory, Verdict, found_values

# The operator's decisions (the settings declare them with these types): on live credentials in a
# run's rows, `block` publishes nothing but the scan report, `redact` replaces live matches, `allow`
# publishes rows as they are; on `unverified` matches (the rough shape of a credential), the same choices.
OnSecret = Literal["block", "redact", "allow"]
OnUnverified = Literal["keep", "redact", "block"]
# What publishing does about the private categories but `operator`: `keep` (found, counted,
# reported, published as read), `redact` (replaced by tokens), `block` (nothing but the reports).
OnPrivate = Literal["keep", "redact", "block"]
# A near miss, a vendor's prefix on a generated-looking body that fails its kind's exact format
# (checksum, length, marker): `redact` judges it `unverified` (so `on_unverified` applies: a key cut
# short or changed by a character is most of a key), `keep` reports it as `near_miss` and keeps it.
OnNearMiss = Literal["redact", "keep"]


@dataclass(frozen=True)
class ScanPolicy:
    """`live` -> on_secret, `unverified` -> on_unverified, `placeholder` and `near_miss` -> always
    kept; private values -> on_private, but `operator` values always replaced."""

    on_secret: OnSecret = "block"
    on_unverified: OnUnverified = "redact"
    on_private: OnPrivate = "keep"

    def _verdicts(self, action: Literal["redact", "block"]) -> frozenset[Verdict]:
        """The verdicts whose findings get `action` (placeholders are always kept)."""
        actions = ((Verdict.LIVE, self.on_secret), (Verdict.UNVERIFIED, self.on_unverified))
        return frozenset(verdict for verdict, chosen in actions if chosen == action)

    @property
    def redacted(self) -> frozenset[Verdict]:
        return self._verdicts("redact")

    @property
    def blocked(self) -> frozenset[Verdict]:
        return self._verdicts("block")

    @property
    def private_redacted(self) -> frozenset[PrivateCategory]:
        """The privacy categories publishing replaces: `operator` always, the rest on `redact`."""
        return frozenset(PrivateCategory) if self.on_private == "redact" else frozenset({PrivateCategory.OPERATOR})

    @property
    def private_blocked(self) -> frozenset[PrivateCategory]:
        return frozenset(PrivateCategory) - {PrivateCategory.OPERATOR} if self.on_private == "block" else frozenset()

    def blocking(self, report: dict[str, Any]) -> dict[str, int]:
        """Per kind (and `private:<category>`), the findings this policy blocks on: empty means
        publishing may go on."""
        private = {f"private:{c}": found_values(report, [c]) for c in sorted(self.private_blocked)}
        return {**_per_kind(report, self.blocked), **{name: n for name, n in private.items() if n}}

    def acted_on(self, report: dict[str, Any]) -> dict[str, int]:
        """Per kind, the findings this policy would block or redact in published fields: what the
        raw-tree scan warns about, since objects that are not published are never redacted."""
        return _per_kind(report, self.blocked | self.redacted)

    def redacts(self, report: dict[str, Any]) -> bool:
        """Whether publishing must rewrite rows: some finding has a verdict this policy redacts, or
        some private value a category it replaces."""
        return found_values(report, self.private_redacted) > 0 or any(
            counts.get(str(verdict), 0) for counts in report.get("kinds", {}).values() for verdict in self.redacted
        )

    def verdict_text(self, report: dict[str, Any]) -> str:
        """The scan's verdict and, when the policy lets the scope publish what was found, how: a
        `live` verdict beside a passed check otherwise reads as a leak."""
        if self.blocking(report):
            return str(report["verdict"])
        how = []
        if _per_kind(report, self.redacted):
            how.append("redacted by policy: published without them")
        if _per_kind(report, frozenset({Verdict.LIVE, Verdict.UNVERIFIED}) - self.blocked - self.redacted):
            how.append("allowed by policy: published with them")
        return ", ".join([str(report["verdict"]), *how])


def _per_kind(report: dict[str, Any], verdicts: frozenset[Verdict]) -> dict[str, int]:
    counts = {
        kind: sum(counts.get(str(verdict), 0) for verdict in verdicts)
        for kind, counts in report.get("kinds", {}).items()
    }
    return {kind: count for kind, count in counts.items() if count}
