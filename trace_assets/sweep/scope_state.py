"""A scope's state, decided in one place for the sensor, `trace-assets status`, the `sweep_coverage`
asset and the CLI, from the same facts: how the newest try to publish it ended, what is published
of it now, and whether its traces are still under the root.

The newest try decides over what is published: a scope blocked after a version went out is
`blocked` (the version before it kept or withdrawn, as the block decided), never "published and
unchanged"; a successful try is `published` at once. The sensor adds `settling` (a listing not
quiet long enough) and compares the publish with its listing (`exported_for`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

FORGET_COMMAND = "trace-assets forget"  # removes a partition whose run is gone (cli/forget.py)


class ScopeState(StrEnum):
    """What happened to a scope, in every view's words."""

    PUBLISHED = "published"
    BLOCKED = "blocked"  # a blocking check failed: the secret scan, or the accounting
    REFUSED = "refused"  # the shrink guard refused to replace the published version with a worse one
    FAILED = "failed"  # any other failure
    EXPORTING = "exporting"  # queued or running
    CANCELED = "canceled"  # an operator's: theirs to launch again
    SETTLING = "settling"  # the sensor's: its listing changed too recently to export
    GONE = "gone from the traces root"  # a partition whose traces were deleted or moved
    NOT_EXPORTED = "not exported yet"  # a partition no run has planned to publish


FAILURES = frozenset({ScopeState.BLOCKED, ScopeState.REFUSED, ScopeState.FAILED})


@dataclass(frozen=True)
class ScopeFacts:
    """What the instance says of a scope: how its newest try to publish it ended (None: no try;
    `EXPORTING`, `CANCELED`, `PUBLISHED` for a success, or one of `FAILURES`) and why in one line,
    and when what is published now was published (None: nothing, or the block withdrew it)."""

    newest: ScopeState | None = None
    reason: str = ""
    published_at: float | None = None


def decided(facts: ScopeFacts, present: bool = True, key: str = "") -> tuple[ScopeState, str]:
    """The scope's state and why in one line (empty for a plain `published` or `not exported yet`).
    `present`: its traces are still under the root, as far as the caller listed them."""
    if not present:
        return (
            ScopeState.GONE,
            f"no traces under the traces root (deleted, moved, or never there); `{FORGET_COMMAND} {key}` removes it",
        )
    if facts.newest is None:  # never tried, or published by a runless report
        return (ScopeState.PUBLISHED if facts.published_at is not None else ScopeState.NOT_EXPORTED), ""
    return facts.newest, facts.reason


def exported_for(facts: ScopeFacts, since: float) -> bool:
    """Its newest try published it, after its listing took its current form (`since`): nothing to
    export. A failed or blocked newest try is never this, whatever an older version's time."""
    state, _ = decided(facts)
    return state == ScopeState.PUBLISHED and facts.published_at is not None and facts.published_at >= since
