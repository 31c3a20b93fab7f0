"""The files of a Harbor trial folder: which ones mark a trial, and which ones its rows are made of.

Defined once, for the listing (what makes a folder a trial, which objects later steps keep) and
for the row export (which objects to fetch).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable

RESULT_JSON = "result.json"
CONFIG_JSON = "config.json"
TRIAL_LOG = "trial.log"
MARKER_FILES = frozenset({RESULT_JSON, CONFIG_JSON, TRIAL_LOG})  # a folder holding one of these is a trial
AGENT_DIR = "agent"
VERIFIER_DIR = "verifier"
TRIAL_SUBFOLDERS = (AGENT_DIR, VERIFIER_DIR)  # folders inside a trial that never make a trial of their own
MAIN_TRAJECTORY = f"{AGENT_DIR}/trajectory.json"
VERIFIER_OUTPUTS = (f"{VERIFIER_DIR}/test-stdout.txt", f"{VERIFIER_DIR}/test-stderr.txt")
# Every object a trial's rows can come from starts with one of these (see `needed_files`).
ROW_SOURCE_PREFIXES = (RESULT_JSON, f"{AGENT_DIR}/trajectory", f"{VERIFIER_DIR}/test-")


def is_subagent_file(file_name: str) -> bool:
    """Harbor's subagent set: `trajectory.*.json` without the `.cont-N` continuations."""
    return fnmatch.fnmatchcase(file_name, "trajectory.*.json") and ".cont-" not in file_name


def is_main_trajectory_file(file_name: str) -> bool:
    """Harbor's instruction search set: `trajectory*.json` without the summarization subagents."""
    return file_name.startswith("trajectory") and file_name.endswith(".json") and ".summarization" not in file_name


def agent_file(path: str) -> str | None:
    """`agent/trajectory.cont-1.json` -> `trajectory.cont-1.json`; None for anything deeper or elsewhere."""
    head, _, name = path.partition("/")
    return name if head == AGENT_DIR and "/" not in name else None


def needed_files(trial_paths: Iterable[str], include_subagents: bool) -> list[str]:
    """The trial's objects the rows are made from: trajectories and verifier logs, nothing else."""
    needed = []
    for path in trial_paths:
        name = agent_file(path)
        if name is not None and (is_main_trajectory_file(name) or (include_subagents and is_subagent_file(name))):
            needed.append(path)
        elif path in VERIFIER_OUTPUTS:
            needed.append(path)
    return sorted(needed)


def stands_for_row_source(key: str) -> bool:
    """Whether an entry the listing could not read (a link, a FIFO, ...) stands where a row's file
    should be: the trial folder itself (`""`), its `agent/` or `verifier/`, or a path a row's file
    can have, whichever subagent option is on."""
    return key in ("", *TRIAL_SUBFOLDERS) or key.startswith(ROW_SOURCE_PREFIXES)
