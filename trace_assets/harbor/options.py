"""Harbor's `traces export` options (0.25 and 0.26 alike), as one value the rows step, the schema and the card share.

Flag names are Harbor's own (`--episodes`, `--sharegpt`, `--filter`, `--no-instruction-metadata`,
`--no-verifier-metadata`); `--subagents` takes `none|merged|separate` where Harbor has
`--subagents/--no-subagents` plus `merge_subagents`. The defaults are this project's published
shape (last episode, instruction and verifier output in, no subagent rows), not Harbor's CLI
defaults (all episodes, neither metadata column, subagents merged).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal, TypeVar, get_args

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


# --------------------------------------------------------------------------- command line and environment


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    """Harbor's flag names; an unset flag leaves the configuration (environment) value. Each help
    names the flag's environment variable and the default, this project's (`ExportOptions`)."""
    default = ExportOptions()
    group = parser.add_argument_group("Harbor export options (harbor traces export)")
    group.add_argument(
        "--episodes",
        choices=EPISODES,
        help=f"a row per episode, or only the last (env TRACE_ASSETS_EPISODES; default: {default.episodes})",
    )
    group.add_argument(
        "--sharegpt",
        action="store_true",
        default=None,
        help="also emit a ShareGPT `conversations_sharegpt` column (env TRACE_ASSETS_SHAREGPT=1; default: off)",
    )
    group.add_argument(
        "--filter",
        choices=SUCCESS_FILTERS,
        help="only trials with reward > 0 (success), or only the others (failure) "
        f"(env TRACE_ASSETS_FILTER; default: {default.success_filter})",
    )
    group.add_argument(
        "--no-instruction-metadata",
        dest="instruction_metadata",
        action="store_false",
        default=None,
        help="leave out the `instruction` column (env TRACE_ASSETS_INSTRUCTION_METADATA=0; default: kept)",
    )
    group.add_argument(
        "--no-verifier-metadata",
        dest="verifier_metadata",
        action="store_false",
        default=None,
        help="leave out the `verifier_output` column (env TRACE_ASSETS_VERIFIER_METADATA=0; default: kept)",
    )
    group.add_argument(
        "--subagents",
        nargs="?",
        const="merged",
        choices=SUBAGENTS,
        help="subagent rows: none, merged with a trace_source column (the bare flag), or a config per kind "
        f"(env TRACE_ASSETS_SUBAGENTS; default: {default.subagents})",
    )


def export_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The flags given, as `ExportOptions` field values."""
    values = {
        "episodes": args.episodes,
        "sharegpt": args.sharegpt,
        "success_filter": args.filter,
        "instruction_metadata": args.instruction_metadata,
        "verifier_metadata": args.verifier_metadata,
        "subagents": args.subagents,
    }
    return {name: value for name, value in values.items() if value is not None}


EXPORT_FIELDS = tuple(f.name for f in fields(ExportOptions))  # also the resource's field names


def export_env(env: Mapping[str, str]) -> dict[str, object]:
    """`TRACE_ASSETS_EPISODES`, `_SHAREGPT`, `_FILTER`, `_INSTRUCTION_METADATA`, `_VERIFIER_METADATA`,
    `_SUBAGENTS` (none|merged|separate; a true flag value means merged, as before)."""
    values: dict[str, object] = {}
    if env.get("TRACE_ASSETS_EPISODES"):
        values["episodes"] = parse_choice("episodes", env["TRACE_ASSETS_EPISODES"], EPISODES)
    if env.get("TRACE_ASSETS_FILTER"):
        values["success_filter"] = parse_choice("filter", env["TRACE_ASSETS_FILTER"], SUCCESS_FILTERS)
    for name, key in (
        ("sharegpt", "TRACE_ASSETS_SHAREGPT"),
        ("instruction_metadata", "TRACE_ASSETS_INSTRUCTION_METADATA"),
        ("verifier_metadata", "TRACE_ASSETS_VERIFIER_METADATA"),
    ):
        if env.get(key):
            values[name] = _boolean(key, env[key])
    subagents = (env.get("TRACE_ASSETS_SUBAGENTS") or "").strip().lower()
    if subagents:
        if subagents in TRUE_WORDS:
            values["subagents"] = "merged"
        elif subagents in FALSE_WORDS:
            values["subagents"] = "none"
        else:
            values["subagents"] = parse_choice("TRACE_ASSETS_SUBAGENTS", subagents, SUBAGENTS)
    return values


TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")


def _boolean(key: str, value: str) -> bool:
    word = value.strip().lower()
    if word in TRUE_WORDS or word in FALSE_WORDS:
        return word in TRUE_WORDS
    raise ValueError(f"{key} must be one of {', '.join(TRUE_WORDS + FALSE_WORDS)}, not {value!r}")
