"""Never replace a good published dataset with a worse one without the operator saying so.

An emptied `trace_jobs/` (an unmounted volume, a lifecycle rule) lists as a run with few or no
trial folders; published as it is, it would replace the good dataset. So a run with 0 rows, or
with fewer trial folders or rows than the published version by more than a threshold, is refused
unless the operator passes the override.
"""

from __future__ import annotations

from typing import Any

from trace_assets.core.accounting import Coverage


class ShrinkRefused(RuntimeError):
    """The new version is worse than the published one; the message gives both versions' figures."""


def refuse_worse_version(
    scope_key: str, new: Coverage, published: dict[str, Any] | None, threshold: float, where: str, override: str
) -> None:
    """Raise `ShrinkRefused` when `new` has no rows or shrank past `threshold` against `published`;
    its message ends with `override`, what the operator sets to publish it anyway."""
    figures = f"{new.trial_dirs} trial folders, {new.rows} rows"
    if new.rows == 0:
        before = f"; published version at {where}: {_figures(published)}" if published else ""
        raise ShrinkRefused(f"refusing to publish run {scope_key!r} with 0 rows ({figures}){before}; {override}")
    if not published:
        return
    for name in ("trial_dirs", "rows"):
        old, now = int(published.get(name) or 0), getattr(new, name)
        if old and now < old * (1 - threshold):
            raise ShrinkRefused(
                f"refusing to publish run {scope_key!r}: {figures}, but the version published at {where} has "
                f"{_figures(published)} ({name} down {1 - now / old:.0%}, more than the {threshold:.0%} allowed); "
                + override
            )


def _figures(coverage: dict[str, Any] | None) -> str:
    coverage = coverage or {}
    return f"{coverage.get('trial_dirs', '?')} trial folders, {coverage.get('rows', '?')} rows"
