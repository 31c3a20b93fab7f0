"""The project's vocabulary for what happened to a trial folder: reasons, statuses and coverage.

A leaf module (no project imports): every layer speaks it, and every output stores its values
as plain strings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Reason(StrEnum):
    """Why a trial folder was not exported. Stored as plain strings in every output."""

    NO_RESULT_JSON = "no_result_json"
    INVALID_RESULT_JSON = "invalid_result_json"
    NO_TRAJECTORY = "no_trajectory"
    INVALID_TRAJECTORY = "invalid_trajectory"
    NO_AGENT_TURNS = "no_agent_turns"
    MULTIMODAL = "multimodal"
    FILTERED_OUT = "filtered_out"
    UNSAFE_LINK = "unsafe_link"
    NOT_A_FILE = "not_a_file"
    UNREADABLE = "unreadable"
    UNDECODABLE_NAME = "undecodable_name"


# What each code means, completing "trial folders that ...": the card's coverage table, the UI's
# exclusion table and README.md's table of reasons (checked against this by a test) all read it.
REASON_DESCRIPTIONS: dict[Reason, str] = {
    Reason.NO_RESULT_JSON: "never got a result.json (the trial was not scored)",
    Reason.INVALID_RESULT_JSON: "had a result.json that could not be read as a TrialResult",
    Reason.NO_TRAJECTORY: "were scored but have no agent/trajectory.json",
    Reason.INVALID_TRAJECTORY: "have a trajectory file that could not be read as ATIF",
    Reason.NO_AGENT_TURNS: "were dropped because the agent never took a turn",
    Reason.MULTIMODAL: "hold images or audio, which a text dataset cannot carry",
    Reason.FILTERED_OUT: "were left out by the success filter (`--filter`; a reward above 0 is a success)",
    Reason.UNSAFE_LINK: "are, or hold where a row's file should be, a symbolic link (never followed)",
    Reason.NOT_A_FILE: "are, or hold where a row's file should be, a FIFO, socket or device (never opened)",
    Reason.UNREADABLE: "are, or hold a file or folder, that could not be read (permissions, gone since listing)",
    Reason.UNDECODABLE_NAME: "have a name that is not UTF-8 (shown with the bytes escaped)",
}


@dataclass(frozen=True)
class Exclusion:
    """A trial folder that gives no row, and why."""

    reason: Reason
    detail: str


class TrialStatus(StrEnum):
    """A trial folder's end state in `trials.parquet`."""

    EXPORTED = "exported"
    EXCLUDED = "excluded"


SCORED = "scored"  # scored_trials' status for a folder whose result.json was read; else a Reason


@dataclass
class Coverage:
    """What happened to every trial folder of a run. The counts add up exactly."""

    run_id: str
    trial_dirs: int = 0
    scored: int = 0
    unscored: int = 0
    exported: int = 0
    excluded: dict[str, int] = field(default_factory=dict)
    rows: int = 0
    subagent_rows: int = 0
    sessions: int = 0  # session files for the Hub's trace viewer, main and subagent
    subagent_sessions: int = 0
    sessions_skipped: dict[str, int] = field(default_factory=dict)  # SessionSkip -> sessions not written

    @property
    def export_ratio(self) -> float:
        return self.exported / self.scored if self.scored else 0.0

    @property
    def accounted(self) -> bool:
        return (
            self.trial_dirs == self.scored + self.unscored
            and self.trial_dirs == self.exported + sum(self.excluded.values())
            and self.unscored == self.excluded.get(Reason.NO_RESULT_JSON.value, 0)
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "trial_dirs": self.trial_dirs,
            "scored": self.scored,
            "unscored": self.unscored,
            "exported": self.exported,
            "excluded": dict(sorted(self.excluded.items())),
            "export_ratio": round(self.export_ratio, 6),
            "rows": self.rows,
            "subagent_rows": self.subagent_rows,
            "sessions": self.sessions,
            "subagent_sessions": self.subagent_sessions,
            "sessions_skipped": dict(sorted(self.sessions_skipped.items())),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Coverage:
        names = ("run_id", "trial_dirs", "scored", "unscored", "exported", "excluded", "rows", "subagent_rows")
        return cls(
            **{name: data[name] for name in names},
            **{name: data.get(name, 0) for name in ("sessions", "subagent_sessions")},  # absent before sessions
            sessions_skipped=data.get("sessions_skipped", {}),
        )
