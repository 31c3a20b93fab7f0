"""One scored trial's files -> its exported rows (Harbor's row rules), or the reason it has none.

Pure: works on bytes already fetched, keyed by path relative to the trial folder. Hostile
content never raises: a message or tool call nested too deeply to encode excludes the trial
(`invalid_trajectory`); lone surrogates replaced while decoding are counted in `repaired`.
"""

from __future__ import annotations

import functools
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from trace_assets.core.accounting import Exclusion, Reason
from trace_assets.harbor.episodes import select_episodes
from trace_assets.harbor.options import ExportOptions, passes_filter
from trace_assets.harbor.result import TrialSummary
from trace_assets.harbor.sharegpt import SHAREGPT_COLUMN, SHAREGPT_TYPE, to_sharegpt
from trace_assets.harbor.trajectory import (
    ParsedTrajectories,
    Trajectory,
    instruction,
    is_multimodal,
    subagent_conversation,
    subagent_source,
)
from trace_assets.harbor.trial_files import (
    MAIN_TRAJECTORY,
    VERIFIER_OUTPUTS,
    agent_file,
    is_main_trajectory_file,
    is_subagent_file,
)

# Column order of Harbor's exported rows; `row_columns` drops and adds columns as the options say.
ROW_COLUMNS = (
    "conversations",
    "agent",
    "model",
    "model_provider",
    "date",
    "task",
    "episode",
    "run_id",
    "trial_name",
    "result",
    "instruction",
    "verifier_output",
)
MAIN_TRACE_SOURCE = "main"
TRACE_SOURCE_COLUMN = "trace_source"
CONVERSATION_TYPE = pa.list_(pa.struct([("content", pa.string()), ("role", pa.string())]))


@functools.cache
def row_columns(options: ExportOptions) -> tuple[str, ...]:
    """Harbor's columns for these options, in its order: metadata columns only when asked for, then
    `conversations_sharegpt`, then `trace_source` with subagent rows (staged even when `separate`
    publishes each source as its own config without it)."""
    left_out = {"instruction"} if not options.instruction_metadata else set()
    if not options.verifier_metadata:
        left_out.add("verifier_output")
    columns = [column for column in ROW_COLUMNS if column not in left_out]
    if options.sharegpt:
        columns.append(SHAREGPT_COLUMN)
    if options.include_subagents:
        columns.append(TRACE_SOURCE_COLUMN)
    return tuple(columns)


def rows_schema(options: ExportOptions) -> pa.Schema:
    """The Arrow schema of the rows: `row_columns`, conversations as lists of messages."""
    types = {"conversations": CONVERSATION_TYPE, SHAREGPT_COLUMN: SHAREGPT_TYPE}
    return pa.schema([pa.field(column, types.get(column, pa.string())) for column in row_columns(options)])


def verifier_output(stdout: bytes | None, stderr: bytes | None) -> str | None:
    parts = [blob.decode("utf-8", errors="replace") for blob in (stdout, stderr) if blob is not None]
    return "".join(parts) if parts else None


@dataclass
class TrialExport:
    rows: list[dict[str, Any]] = field(default_factory=list)
    exclusion: Exclusion | None = None
    notes: list[str] = field(default_factory=list)  # e.g. subagent files that gave no row
    repaired: int = 0  # lone surrogates replaced with U+FFFD in the trajectories the rows came from

    @property
    def detail(self) -> str:
        parts = ([self.exclusion.detail] if self.exclusion else []) + self.notes
        return "; ".join(parts)


def _continuation_chain(trajectories: Mapping[str, Trajectory]) -> list[Trajectory] | Exclusion:
    """Follow `continued_trajectory_ref` from trajectory.json, as Harbor does; a missing target ends it."""
    chain = [trajectories["trajectory.json"]]
    seen = {"trajectory.json"}
    while chain[-1].continued_ref:
        target = posixpath.normpath(chain[-1].continued_ref)
        if target in seen:
            return Exclusion(Reason.INVALID_TRAJECTORY, f"continuation chain loops back to {target}")
        if target not in trajectories:
            break
        seen.add(target)
        chain.append(trajectories[target])
    return chain


def export_trial(
    summary: TrialSummary,
    files: Mapping[str, bytes],
    run_id: str,
    options: ExportOptions,
    parsed: ParsedTrajectories | None = None,
) -> TrialExport:
    """Harbor's rows for one scored trial: its episodes as `options` say, plus subagent rows when asked.
    `parsed` shares the trial's parsed trajectories with its sessions (see `sessions_from_files`)."""
    try:
        export = _export_trial(summary, files, run_id, options, parsed or ParsedTrajectories(files))
    except RecursionError:
        detail = "a message or tool call is nested too deeply to encode"
        return TrialExport(exclusion=Exclusion(Reason.INVALID_TRAJECTORY, detail))
    return export


def _export_trial(
    summary: TrialSummary,
    files: Mapping[str, bytes],
    run_id: str,
    options: ExportOptions,
    parsed_files: ParsedTrajectories,
) -> TrialExport:
    if not passes_filter(summary, options.success_filter):
        return TrialExport(exclusion=Exclusion(Reason.FILTERED_OUT, f"result {summary.result}"))
    if MAIN_TRAJECTORY not in files:
        return TrialExport(exclusion=Exclusion(Reason.NO_TRAJECTORY, "no agent/trajectory.json"))

    main_files: dict[str, Trajectory] = {}
    for path in sorted(files):
        name = agent_file(path)
        if name is None or not is_main_trajectory_file(name):
            continue
        parsed = parsed_files.get(path, name)
        if isinstance(parsed, Exclusion):
            return TrialExport(exclusion=parsed)
        main_files[name] = parsed

    chain = _continuation_chain(main_files)
    if isinstance(chain, Exclusion):
        return TrialExport(exclusion=chain)
    if any(is_multimodal(t) for t in chain):
        return TrialExport(exclusion=Exclusion(Reason.MULTIMODAL, "trajectory holds image or audio content"))
    episodes = select_episodes(chain, options.episodes)
    if not episodes:
        steps = sum(len(t.steps) for t in chain)
        return TrialExport(
            exclusion=Exclusion(Reason.NO_AGENT_TURNS, f"{steps} step{'' if steps == 1 else 's'}, none by the agent")
        )

    shared = {
        "model_provider": summary.model_provider,
        "date": summary.started_at,
        "task": summary.task,
        "run_id": run_id,
        "trial_name": summary.trial_name,
        "result": summary.result,
        "instruction": instruction(list(main_files.values())),
        "verifier_output": verifier_output(*(files.get(path) for path in VERIFIER_OUTPUTS)),
    }
    export = TrialExport(repaired=sum(t.repaired for t in main_files.values()))
    for episode in episodes:
        main_row = {
            "conversations": episode.conversations,
            "agent": episode.agent_name or summary.agent,
            "model": episode.model_name or summary.model,
            "episode": f"episode-{episode.index}",
            **shared,
        }
        export.rows.append(_ordered(main_row, MAIN_TRACE_SOURCE, options))
    if options.include_subagents:
        _add_subagent_rows(export, summary, files, shared, options, parsed_files)
    return export


def _add_subagent_rows(
    export: TrialExport,
    summary: TrialSummary,
    files: Mapping[str, bytes],
    shared: dict,
    options: ExportOptions,
    parsed_files: ParsedTrajectories,
) -> None:
    """One complete-conversation row per subagent file; an unusable file is noted, not fatal."""
    for path in sorted(files):
        name = agent_file(path)
        if name is None or not is_subagent_file(name):
            continue
        parsed = parsed_files.get(path, name)
        if isinstance(parsed, Exclusion):
            export.notes.append(f"subagent {parsed.detail}")
            continue
        if is_multimodal(parsed):
            export.notes.append(f"subagent {name} holds image or audio content")
            continue
        messages = subagent_conversation(parsed)
        if messages is None:
            export.notes.append(f"subagent {name} has no agent turn")
            continue
        row = {
            "conversations": messages,
            "agent": summary.agent,  # Harbor names subagent rows after the main agent
            "model": parsed.model_name or summary.model,
            "episode": "episode-0",
            **shared,
        }
        export.rows.append(_ordered(row, subagent_source(name), options))
        export.repaired += parsed.repaired


def _ordered(row: dict[str, Any], trace_source: str, options: ExportOptions) -> dict[str, Any]:
    """The row in `row_columns` order, with the columns the options add."""
    row = {**row, TRACE_SOURCE_COLUMN: trace_source}
    if options.sharegpt:
        row[SHAREGPT_COLUMN] = to_sharegpt(row["conversations"])
    return {column: row[column] for column in row_columns(options)}
