"""Harbor's `traces export` options (0.25 and 0.26 alike), as one value the rows step, the schema and the card share.

Flag names are Harbor's own (`--episodes`, `--sharegpt`, `--filter`, `--no-instruction-metadata`,
`--no-verifier-metadata`); `--subagents` takes `none|merged|separate` where Harbor has
`--subagents/--no-subagents` plus `merge_subagents`. The defaults are this project's published
shape (last episode, instruction and verifier output in, no subagent rows), not Harbor's CLI
defaults (all episodes, neither metadata column, subagents merged).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal, TypeVar, get_args

from trace_assets.harbor.result import TrialSummary

Episodes = Literal["last", "all"]  # every episode of a trial, or only its final one
SuccessFilter = Literal["all", "success", "failure"]  # Harbor's `--filter`; `all` keeps every trial
Subagents = Literal["none", "merged", "separate"]  # no subagent rows, rows with `trace_source`, or a config per kind

EPISODES: tuple[Episodes, ...] = get_args(Episodes)
SUCCESS_FILTERS: tuple[SuccessFilter, ...] = get_args(SuccessFilter)
SUBAGENTS: tuple[Subagents, ...] = get_args(Subagents)

Choice = TypeVar("Choice", bound=str)


def parse_choice(name: str, value: str, choices: tuple[Choice, ...]) -> Choice:
    """`value` as one of `choices`, or a ValueError naming the allowed values (never a silent default)."""
    for choice in choices:
        if value == choice:
            return choice
    raise ValueError(f"{name} must be one of {', '.join(choices)}, not {value!r}")


@dataclass(frozen=True)
class ExportOptions:
    """What `harbor traces export` would be asked for; the defaults reproduce the published sample."""

    episodes: Episodes = "last"
    sharegpt: bool = False  # add Harbor's `conversations_sharegpt` column
    success_filter: SuccessFilter = "all"
    instruction_metadata: bool = True  # the `instruction` column
    verifier_metadata: bool = True  # the `verifier_output` column
    subagents: Subagents = "none"

    def __post_init__(self) -> None:
        parse_choice("episodes", self.episodes, EPISODES)
        parse_choice("filter", self.success_filter, SUCCESS_FILTERS)
        parse_choice("subagents", self.subagents, SUBAGENTS)

    @property
    def include_subagents(self) -> bool:
        return self.subagents != "none"

    def harbor_flags(self) -> list[str]:
        """The options in force as `harbor traces export` flags (ours for `--subagents`)."""
        flags = [f"--episodes {self.episodes}"]
        if self.sharegpt:
            flags.append("--sharegpt")
        if self.success_filter != "all":
            flags.append(f"--filter {self.success_filter}")
        flags.append("--instruction-metadata" if self.instruction_metadata else "--no-instruction-metadata")
        flags.append("--verifier-metadata" if self.verifier_metadata else "--no-verifier-metadata")
        flags.append(f"--subagents {self.subagents}")
        return flags

    def cache_salt(self) -> list[str]:
        """What changes rows besides subagents, for incremental fingerprints; empty at the defaults,
        so trials staged before these options existed stay cached."""
        default = ExportOptions()
        return [
            f"{f.name}={getattr(self, f.name)}"
            for f in fields(self)
            if f.name != "subagents" and getattr(self, f.name) != getattr(default, f.name)
        ]


def passes_filter(summary: TrialSummary, success_filter: SuccessFilter) -> bool:
    """Harbor's `--filter` on the trial's `_trial_is_success` verdict (`TrialSummary.success`)."""
    return success_filter == "all" or summary.success == (success_filter == "success")
