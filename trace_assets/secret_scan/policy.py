"""What publishing does about the scan's findings: a closed choice, never a free string."""

from __future__ import annotations

from typing import Literal, get_args

# The operator's decision on live credentials in a run's rows: `block` publishes nothing but the
# scan report, `redact` replaces live and unverified matches, `allow` publishes rows as they are.
OnSecret = Literal["block", "redact", "allow"]
ON_SECRET_CHOICES: tuple[OnSecret, ...] = get_args(OnSecret)


def parse_on_secret(value: str) -> OnSecret:
    """`value` as an `OnSecret`, or a ValueError naming the allowed values."""
    for choice in ON_SECRET_CHOICES:
        if value == choice:
            return choice
    raise ValueError(f"on_secret must be one of {', '.join(ON_SECRET_CHOICES)}, not {value!r}")
