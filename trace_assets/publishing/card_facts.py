"""What the card says from the data: provenance, source size, rewards and turns, read from staging.

Every figure comes from the staged files of the same run (listing, scored trials, statuses, rows),
so the card describes exactly the version it is published with.

A reward that is not a finite number (NaN, an infinity, an integer beyond float range kept as its
digits, or not a number at all) is counted apart, by kind, and left out of every figure; the
rows' `result` keeps it as Harbor writes it (`nan`, `-inf`, the digits, `pass`).
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq

from trace_assets.core.accounting import SCORED, TrialStatus
from trace_assets.harbor.rows import MAIN_TRACE_SOURCE, TRACE_SOURCE_COLUMN
from trace_assets.steps.staged_rows import RowParts
from trace_assets.steps.staging import RunStaging, open_parquet

# A training step in a trial's folder path, e.g. `trace_jobs/step-25/<trial>/` or `global_step_25/`.
_STEP = re.compile(r"(?:^|/)(?:global_)?step[-_]?(\d+)/")
_DIGITS = re.compile(r"-?[0-9]+")  # a `result` that is an integer's digits: one beyond float range
HISTOGRAM_BINS = 10


@dataclass(frozen=True)
class Distribution:
    """A few order statistics of a list of numbers, for one line of prose."""

    count: int = 0
    mean: float = 0.0
    minimum: float = 0.0
    median: float = 0.0
    maximum: float = 0.0
    positive: int = 0  # values above 0: Harbor's success

    @classmethod
    def of(cls, values: list[float]) -> Distribution:
        if not values:
            return cls()
        ordered = sorted(values)
        middle = len(ordered) // 2
        return cls(
            count=len(values),
            mean=_mean(values),
            minimum=ordered[0],
            median=ordered[middle] if len(ordered) % 2 else _midpoint(ordered[middle - 1], ordered[middle]),
            maximum=ordered[-1],
            positive=sum(1 for v in values if v > 0),
        )


def _midpoint(low: float, high: float) -> float:
    """Half way, finite for finite values (1.7e308 and 1.7e308 sum past float range)."""
    return (low + high) / 2 if math.isfinite(low + high) else low / 2 + high / 2


def _mean(values: list[float]) -> float:
    """The mean, finite for finite values: a sum past float range is summed divided (1e308s)."""
    try:
        return statistics.fmean(values)
    except OverflowError:
        return math.fsum(v / len(values) for v in values)


@dataclass(frozen=True)
class CardFacts:
    """The run's figures the card states; empty defaults when a staged file is absent."""

    objects: int = 0  # every object listed under the scope's prefix
    bytes: int = 0
    agents: dict[str, int] = field(default_factory=dict)  # exported trials per value
    models: dict[str, int] = field(default_factory=dict)
    providers: dict[str, int] = field(default_factory=dict)
    steps: list[int] = field(default_factory=list)  # training steps named in the trial folders' paths
    rewards: list[float] = field(default_factory=list)  # exported trials with a finite reward Harbor counts valid
    invalid_rewards: int = 0  # exported trials with a reward Harbor marks `reward_valid: false`, left out of `rewards`
    exceptions: dict[str, int] = field(default_factory=dict)  # exported trials with no reward: exception -> n
    rewards_not_finite: dict[str, int] = field(default_factory=dict)  # exported trials: kind -> n
    excluded_rewards: list[float] = field(default_factory=list)  # scored but excluded trials' valid finite rewards
    excluded_rewards_not_finite: dict[str, int] = field(default_factory=dict)
    turns: list[int] = field(default_factory=list)  # assistant messages per main row

    @property
    def reward_stats(self) -> Distribution:
        return Distribution.of(self.rewards)

    @property
    def excluded_reward_stats(self) -> Distribution:
        return Distribution.of(self.excluded_rewards)

    @property
    def turn_stats(self) -> Distribution:
        return Distribution.of([float(t) for t in self.turns])


def _counts(values: list[str | None]) -> dict[str, int]:
    return dict(Counter(v for v in values if v).most_common())


def not_finite_kind(record: dict[str, Any]) -> str | None:
    """Why a scored trial's reward is no finite number (`nan`, `inf`, `-inf`, `beyond float range`,
    `not a number`); None for a finite reward, or none (no verifier reward, or an exception)."""
    reward, result = record["reward"], record["result"]
    if reward is not None:
        return None if math.isfinite(reward) else str(reward)
    if record["exception_type"] or result is None:
        return None
    return "beyond float range" if _DIGITS.fullmatch(result) else "not a number"


def gather_facts(staging: RunStaging, rows: RowParts) -> CardFacts:
    """The facts from the run's staged listing, scored trials, statuses and rows."""
    listing = open_parquet(staging.listing).read(columns=["trial_dir", "objects", "bytes"])
    scored = open_parquet(staging.scored).read(
        columns=[
            "trial_dir",
            "status",
            "reward",
            "reward_valid",
            "exception_type",
            "result",
            "agent",
            "model",
            "model_provider",
        ]
    )
    statuses = open_parquet(staging.statuses).read(columns=["trial_dir", "status"])
    exported = {
        d
        for d, s in zip(statuses["trial_dir"].to_pylist(), statuses["status"].to_pylist())
        if s == TrialStatus.EXPORTED
    }
    records = [r for r in scored.to_pylist() if r["status"] == SCORED]
    mine = [r for r in records if r["trial_dir"] in exported]
    others = [r for r in records if r["trial_dir"] not in exported]
    steps = {int(m.group(1)) for d in listing["trial_dir"].to_pylist() if (m := _STEP.search(d + "/"))}
    return CardFacts(
        objects=int(pc.sum(listing["objects"]).as_py() or 0),
        bytes=int(pc.sum(listing["bytes"]).as_py() or 0),
        agents=_counts([r["agent"] for r in mine]),
        models=_counts([r["model"] for r in mine]),
        providers=_counts([r["model_provider"] for r in mine]),
        steps=sorted(steps),
        rewards=_valid_rewards(mine),
        invalid_rewards=sum(r["reward"] is not None and r["reward_valid"] is False for r in mine),
        exceptions=_counts([r["exception_type"] for r in mine if r["reward"] is None]),
        rewards_not_finite=_counts([not_finite_kind(r) for r in mine if r["reward_valid"] is not False]),
        excluded_rewards=_valid_rewards(others),
        excluded_rewards_not_finite=_counts([not_finite_kind(r) for r in others if r["reward_valid"] is not False]),
        turns=_assistant_turns(rows),
    )


def _valid_rewards(records: list[dict]) -> list[float]:
    """The finite rewards Harbor counts: all but those its `reward_valid: false` marks (a result.json
    from before Harbor 0.26 has no `reward_valid`; its rewards count)."""
    valid = [r["reward"] for r in records if r["reward"] is not None and r["reward_valid"] is not False]
    return [float(reward) for reward in valid if math.isfinite(reward)]


def _assistant_turns(rows: RowParts) -> list[int]:
    """Assistant messages in each main row's `conversations`, in row order: only the messages'
    roles (and the trace source) are read, not their texts."""
    turns: list[int] = []
    for path in rows.files:
        parquet = pq.ParquetFile(path, pre_buffer=False)
        roles = [c.path for c in parquet.schema if c.path.startswith("conversations.") and c.path.endswith(".role")]
        sources = [TRACE_SOURCE_COLUMN] if TRACE_SOURCE_COLUMN in parquet.schema_arrow.names else []
        for index in range(parquet.metadata.num_row_groups):
            table = parquet.read_row_group(index, columns=roles + sources, use_threads=False)
            if sources:
                table = table.filter(pc.equal(table[TRACE_SOURCE_COLUMN], MAIN_TRACE_SOURCE))
            conversations = table["conversations"].combine_chunks()
            roles_read = pc.struct_field(pc.list_flatten(conversations), "role")
            parents = pc.list_parent_indices(conversations)
            assistant = pc.equal(roles_read, "assistant")
            per_row = Counter(pc.filter(parents, assistant).to_pylist())
            turns.extend(per_row.get(i, 0) for i in range(len(conversations)))
    return turns


def histogram(values: list[float], bins: int = HISTOGRAM_BINS) -> list[tuple[float, float, int]]:
    """(low, high, count) for `bins` equal bins over the values' (finite) range; one bin when all
    are equal, or too close for a float to split. A range past float range is binned halved."""
    if not values:
        return []
    low, high = min(values), max(values)
    scale = 1.0 if math.isfinite(high - low) else 2.0
    width = (high / scale - low / scale) / bins
    if width == 0:
        return [(low, high, len(values))]
    counts = [0] * bins
    for value in values:
        counts[min(int((value / scale - low / scale) / width), bins - 1)] += 1
    return [
        ((low / scale + i * width) * scale, (low / scale + (i + 1) * width) * scale, n) for i, n in enumerate(counts)
    ]


def integer_histogram(values: list[int], bins: int = HISTOGRAM_BINS) -> list[tuple[int, int, int]]:
    """(first, last, count) for at most `bins` bins of whole numbers, both ends included and every
    bin as wide (turns per row: 1–3, 4–6, ..., not bins whose ends fall between two counts)."""
    if not values:
        return []
    low, high = min(values), max(values)
    width = -(-(high - low + 1) // bins)  # ceiling division
    counts = [0] * (-(-(high - low + 1) // width))
    for value in values:
        counts[(value - low) // width] += 1
    return [(low + i * width, min(low + (i + 1) * width - 1, high), n) for i, n in enumerate(counts)]


def size_text(num_bytes: int) -> str:
    """A size as the Hub and the seeds' cards give it, in decimal units: `6.7 MB`, `1.2 GB`, `745.0 kB`."""
    for unit, scale in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if num_bytes >= scale:
            return f"{num_bytes / scale:.1f} {unit}"
    return count(num_bytes, "byte")


def count(n: int, noun: str, plural: str = "") -> str:
    """`1 trial`, `2 trials`: a number with its noun agreeing (`plural` when not noun + "s")."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def size_category(rows: int) -> str:
    """The Hub's `size_categories` value for a row count."""
    bounds = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")]
    bounds += [(10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B")]
    for bound, name in bounds:
        if rows < bound:
            return name
    return "n>1T" if rows >= 10**12 else "1B<n<10B" if rows < 10**10 else "10B<n<100B" if rows < 10**11 else "100B<n<1T"
