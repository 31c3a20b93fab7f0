"""A trial's whole ATIF trajectory as session files for the Hub's trace viewer.

The Hub renders agent sessions written in its Session Trace Simple Format: one JSONL file per
session, a header line (`type: session`, `harness`, `id`, `name`, any extra metadata), then one
line per message (`role`, `content`, `reasoningContent`, `toolCalls`, `toolCallId`, `timestamp`
in epoch ms, `model`). The rows hold only a trial's last episode; a session holds every step of
the main trajectory and its continuations, in order, and each subagent trajectory is a session
of its own, named after the trial so it sits next to the main one and is linked from it.

Pure: trajectories already parsed (see `harbor.trajectory`), values out; no I/O.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from json.encoder import encode_basestring as encode_json_string  # json.dumps' own, ensure_ascii=False
from typing import Any

from trace_assets.core.accounting import Exclusion
from trace_assets.harbor.decoding import as_dict
from trace_assets.harbor.result import TrialSummary
from trace_assets.harbor.rows import _continuation_chain
from trace_assets.harbor.trajectory import ParsedTrajectories, Trajectory, message_text, subagent_source
from trace_assets.harbor.trial_files import MAIN_TRAJECTORY, agent_file, is_main_trajectory_file, is_subagent_file

DEFAULT_HARNESS = "terminus-2"
SESSIONS_DIR = "sessions"
# 256 buckets: a folder stays under the Hub's 10k entries per folder up to ~2.5M session files,
# far past its 100k files per repo; a trial's bucket never depends on the others, so re-publishing
# a grown run moves no file.
BUCKET_HEX_CHARS = 2
_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9._-]")
# A file name stays far under the 255 bytes file systems allow: stem, digest, subagent, `.jsonl`.
MAX_STEM_CHARS = 150
# What `trajectory.<subagent>.json` may name: Harbor's are like `summarization-1-summary`.
_SUBAGENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class SessionSkip(StrEnum):
    """Why an exported trial has no session file, or lacks one subagent's; its rows stand."""

    INVALID_SUBAGENT_NAME = "invalid_subagent_name"  # `trajectory..json`: no name to file it under
    PATH_TAKEN = "session_path_taken"  # another trial's session holds the path (a copied trial folder)
    UNCONVERTIBLE = "unconvertible_trajectory"  # a shape the converter did not foresee


# What each code means, for the card, the UI and the docs (docs/dataset-format.md's table is tested against it).
SESSION_SKIP_DESCRIPTIONS: dict[SessionSkip, str] = {
    SessionSkip.INVALID_SUBAGENT_NAME: "a subagent trajectory whose file name gives no name to file it under "
    "(`trajectory..json`, or not 1-64 of `A-Za-z0-9._-`)",
    SessionSkip.PATH_TAKEN: "another trial folder already holds the session path this trial's result.json names "
    "(a copied trial folder; the first in listing order keeps it)",
    SessionSkip.UNCONVERTIBLE: "a trajectory whose shape the session converter does not handle",
}


@dataclass(frozen=True)
class SkippedSession:
    reason: SessionSkip
    detail: str

    @property
    def note(self) -> str:
        """How the trial's status detail in trials.parquet names it."""
        return f"session skipped ({self.reason.value}): {self.detail}"


class Role(StrEnum):
    """The roles the format allows."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


# ATIF step sources -> session roles.
_ROLE_OF_SOURCE = {"system": Role.SYSTEM, "user": Role.USER, "agent": Role.ASSISTANT}


@dataclass(frozen=True)
class Session:
    """One session file: its path in the dataset folder, the header and the messages."""

    path: str  # e.g. sessions/3f/stack-bash-1__abc.jsonl
    header: dict[str, Any]
    messages: list[dict[str, Any]]

    def lines(self) -> list[dict[str, Any]]:
        return [self.header, *({"type": "message", "message": message} for message in self.messages)]

    def to_jsonl(self) -> bytes:
        """Strict JSON lines: a non-finite number (a NaN reward in result.json) is written as null."""
        return "".join(json_line(line) for line in self.lines()).encode()

    def slotted(self) -> SlottedText:
        """The file as its texts and the JSON around them: `SlottedText.jsonl()` is `to_jsonl()`.
        The same as `slotted_jsonl(self.lines())`, the messages the builder makes encoded without
        the generic walk (`_message_skeleton`)."""
        texts: list[str] = []
        lines = [_line_skeleton(self.header, texts)]
        for message in self.messages:
            start = len(texts)
            line = _message_skeleton(message, texts)
            if line is None:  # a shape the builder does not make: the generic walk
                del texts[start:]
                line = _line_skeleton({"type": "message", "message": message}, texts)
            lines.append(line)
        return SlottedText("".join(f"{line}\n" for line in lines), texts)


# Keys whose values are the format's own vocabulary, never trial text: neither scanned nor redacted.
STRUCTURAL_KEYS = frozenset({"type", "role"})
SLOT = "\x00"  # stands for a text while the file is encoded; no key or structural value holds it
_SLOT_JSON = '"\\u0000"'
_LINE = "\x01"  # stands for a line break between the lines, encoded as one list
_LINE_JSON = ', "\\u0001", '


@dataclass(frozen=True)
class SlottedText:
    """A session file as `texts` (every string value but the structural ones, in the order a JSON
    walk meets them: what the scan reads and redaction replaces) and `skeleton`, the file's JSON
    with each text's place marked by NUL (which encoded JSON never holds raw). Writing it encodes
    each text the way `json.dumps` does, so the bytes are those of `Session.to_jsonl`, with any
    text replaced."""

    skeleton: str
    texts: list[str]

    def jsonl(self, texts: list[str] | None = None) -> str:
        texts = self.texts if texts is None else texts
        pieces = self.skeleton.split(SLOT)
        parts = [pieces[0]]
        for text, piece in zip(texts, pieces[1:], strict=True):
            parts.append(encode_json_string(text))
            parts.append(piece)
        return _escape_line_breaks("".join(parts))


def slotted_jsonl(lines: list[Any]) -> SlottedText:
    texts: list[str] = []
    slotted: list[Any] = []
    for line in lines:
        slotted += [_slotted(line, texts, None), _LINE]
    encoded = json.dumps(slotted, ensure_ascii=False, allow_nan=False)  # `[line, "\u0001", line, ...]`
    skeleton = encoded[1 : -len(_LINE_JSON) + 1].replace(_LINE_JSON, "\n") + "\n" if lines else ""
    if skeleton.count(_SLOT_JSON) != len(texts):  # only a key or structural value holding NUL could do this
        raise ValueError("a key or structural value of the session holds a control character")
    return SlottedText(skeleton.replace(_SLOT_JSON, SLOT), texts)


def _line_skeleton(line: Any, texts: list[str]) -> str:
    """One line of `slotted_jsonl`'s skeleton, its texts added to `texts`."""
    start = len(texts)
    encoded = json.dumps(_slotted(line, texts, None), ensure_ascii=False, allow_nan=False)
    if encoded.count(_SLOT_JSON) != len(texts) - start:  # only a key or structural value holding NUL could do this
        raise ValueError("a key or structural value of the session holds a control character")
    return encoded.replace(_SLOT_JSON, SLOT)


# The keys `_MessageBuilder` gives a message, as json.dumps writes them (plain ASCII: no escape).
_MESSAGE_KEYS = {
    name: f'"{name}": '
    for name in ("role", "content", "reasoningContent", "toolCalls", "toolCallId", "timestamp", "model")
}
_MESSAGE_LINE = '{{"type": "message", "message": {{{}}}}}'
_TOOL_CALL = f'{{"id": {SLOT}, "function": {{"name": {SLOT}, "arguments": {SLOT}}}}}'


def _message_skeleton(message: dict[str, Any], texts: list[str]) -> str | None:
    """A message line of the skeleton written directly, as json.dumps writes the slotted line
    (`", "` and `": "` separators): the builder's keys, with string, int and tool call values.
    None, with `texts` possibly grown, for any other shape, which the generic walk takes."""
    parts = []
    for name, value in message.items():
        key = _MESSAGE_KEYS.get(name) if type(name) is str else None
        kind = type(value)
        if key is None:
            return None
        if kind is str:
            if name in STRUCTURAL_KEYS:
                if SLOT in value or _LINE in value:
                    raise ValueError(f"structural value {value!r} holds a NUL character")
                parts.append(key + encode_json_string(value))
            else:
                texts.append(value)
                parts.append(key + SLOT)
        elif kind is int:
            parts.append(key + int.__repr__(value))
        elif kind is list and name == "toolCalls":
            calls = []
            for call in value:
                function = call.get("function") if type(call) is dict else None
                if type(function) is not dict or list(call) != ["id", "function"] or list(function) != _FUNCTION_KEYS:
                    return None
                call_texts = [call["id"], function["name"], function["arguments"]]
                if any(type(text) is not str for text in call_texts):
                    return None
                texts += call_texts
                calls.append(_TOOL_CALL)
            parts.append(f"{key}[{', '.join(calls)}]")
        else:
            return None
    return _MESSAGE_LINE.format(", ".join(parts))


_FUNCTION_KEYS = ["name", "arguments"]


def _slotted(value: Any, texts: list[str], key: Any) -> Any:
    """The value with each text replaced by `SLOT` and collected (non-finite numbers as None, as
    `_finite` does); a key or structural value holding `SLOT` is refused."""
    if isinstance(value, str):
        if key in STRUCTURAL_KEYS:
            if SLOT in value or _LINE in value:
                raise ValueError(f"structural value {value!r} holds a NUL character")
            return value
        texts.append(str(value))
        return SLOT
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        slotted = {}
        for name, item in value.items():
            if isinstance(name, str) and (SLOT in name or _LINE in name):
                raise ValueError(f"key {name!r} holds a NUL character")
            if type(item) is str and name not in STRUCTURAL_KEYS:  # most values: a text, without a call
                texts.append(item)
                slotted[name] = SLOT
            else:
                slotted[name] = _slotted(item, texts, name)
        return slotted
    if isinstance(value, list | tuple):
        return [_slotted(item, texts, None) for item in value]
    return value


def json_line(value: Any) -> str:
    """One line of strict JSON; `allow_nan=False` makes a non-finite number that slipped past the
    cleaning an error rather than a `NaN` token strict readers refuse. Python's json, not orjson:
    these are published bytes, and orjson writes no space after `,` and `:`."""
    return _escape_line_breaks(json.dumps(_finite(value), ensure_ascii=False, allow_nan=False)) + "\n"


# Line breaks `json.dumps(ensure_ascii=False)` leaves raw inside strings, where `str.splitlines`
# (which `datasets` reads JSON lines with) would cut a line in two: written as JSON escapes.
LINE_BREAKS = ("\x85", "\u2028", "\u2029")


def _escape_line_breaks(encoded: str) -> str:
    for char in LINE_BREAKS:
        if char in encoded:
            encoded = encoded.replace(char, f"\\u{ord(char):04x}")
    return encoded


def _finite(value: Any) -> Any:
    """The value with NaN and ±inf replaced by None, at any depth."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def file_stem(trial_name: str) -> str:
    """The trial name made safe as a file name; a name altered (characters outside `A-Za-z0-9._-`)
    or cut to `MAX_STEM_CHARS` gets a digest of the whole name so two never collide."""
    safe = _UNSAFE_NAME_CHARS.sub("_", trial_name).lstrip(".") or "_"
    if safe != trial_name or len(safe) > MAX_STEM_CHARS:
        safe = f"{safe[:MAX_STEM_CHARS]}-{hashlib.sha256(trial_name.encode()).hexdigest()[:8]}"
    return safe


def subagent_name_problem(file_name: str) -> str | None:
    """Why `trajectory.<subagent>.json` cannot name a session of its own; None when it can."""
    name = subagent_source(file_name)
    if _SUBAGENT_NAME.fullmatch(name):
        return None
    return f"agent/{file_name}: subagent name {name!r} is not 1-64 of A-Za-z0-9._- starting alphanumeric"


def session_path(trial_name: str, subagent: str | None = None) -> str:
    """`sessions/<bucket>/<trial>.jsonl`, or `<trial>.<subagent>.jsonl` beside it."""
    if subagent is not None and not _SUBAGENT_NAME.fullmatch(subagent):
        raise ValueError(f"subagent name {subagent!r} would not give a file of its own")  # see subagent_name_problem
    bucket = hashlib.sha256(trial_name.encode()).hexdigest()[:BUCKET_HEX_CHARS]
    stem = file_stem(trial_name) + (f".{subagent}" if subagent else "")
    return f"{SESSIONS_DIR}/{bucket}/{stem}.jsonl"


def dicts_in(value: Any) -> list[dict[str, Any]]:
    """The objects of a list a trajectory holds; anything else (`5`, a string, null) holds none."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def epoch_ms(timestamp: Any) -> int | None:
    """An ATIF ISO 8601 timestamp as epoch milliseconds; None when absent or unreadable."""
    if not isinstance(timestamp, str) or not timestamp:
        return None
    try:
        moment = datetime.fromisoformat(timestamp)
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None  # a naive time names no instant
    return int(moment.timestamp() * 1000)


def arguments_json(arguments: Any) -> str:
    """Tool call arguments as the JSON string the format asks for; a string holding JSON is kept."""
    if isinstance(arguments, str):
        try:
            json.loads(arguments, parse_constant=_refuse_constant)
        except ValueError:
            return json.dumps(arguments, ensure_ascii=False)
        return arguments
    return json.dumps(_finite({} if arguments is None else arguments), ensure_ascii=False, allow_nan=False)


def _refuse_constant(name: str) -> Any:
    """`NaN` and `Infinity` are Python's JSON, not JSON: a string holding them is kept as text."""
    raise ValueError(f"{name} is not JSON")


class _MessageBuilder:
    """Steps -> messages for one session, keeping tool call ids unique across its files.

    Copied context repeats a trajectory's call ids in its continuation; a repeat gets a `#n`
    suffix so every `toolCallId` names exactly one call. Each id remembers the next suffix to try,
    so a trajectory repeating one id n times costs n steps, not n²/2.
    """

    def __init__(self, default_model: str | None, subagent_paths: dict[str, str]) -> None:
        self.default_model = default_model
        self.subagent_paths = subagent_paths  # subagent file name -> its session's file name
        self.messages: list[dict[str, Any]] = []
        self._call_ids: set[str] = set()
        self._next_suffix: dict[str, int] = {}  # call id -> the suffix its next repeat tries first

    def add_trajectory(self, trajectory: Trajectory) -> None:
        for index, step in enumerate(trajectory.steps):
            self._add_step(step, trajectory, index)

    def add_marker(self, text: str) -> None:
        self.messages.append({"role": Role.SYSTEM.value, "content": text})

    def _unique_call_id(self, raw: Any, fallback: str) -> str:
        call_id = str(raw) if raw not in (None, "") else fallback
        if call_id not in self._call_ids:
            self._call_ids.add(call_id)
            return call_id
        suffix = self._next_suffix.get(call_id, 2)
        while f"{call_id}#{suffix}" in self._call_ids:  # a real id may already read `x#2`
            suffix += 1
        self._next_suffix[call_id] = suffix + 1
        candidate = f"{call_id}#{suffix}"
        self._call_ids.add(candidate)
        return candidate

    def _add_step(self, step: dict[str, Any], trajectory: Trajectory, index: int) -> None:
        role = _ROLE_OF_SOURCE.get(step.get("source"))  # type: ignore[arg-type]
        if role is None:
            return
        message: dict[str, Any] = {"role": role.value, "content": message_text(step.get("message"))}
        timestamp = epoch_ms(step.get("timestamp"))
        calls: dict[str, str] = {}  # ATIF call id -> session call id
        if role is Role.ASSISTANT:
            if step.get("reasoning_content"):
                message["reasoningContent"] = message_text(step["reasoning_content"])
            tool_calls = []
            for position, call in enumerate(dicts_in(step.get("tool_calls"))):
                call_id = self._unique_call_id(call.get("tool_call_id"), f"call_{index}_{position}")
                calls[str(call.get("tool_call_id"))] = call_id
                tool_calls.append(
                    {
                        "id": call_id,
                        "function": {
                            "name": str(call.get("function_name") or ""),
                            "arguments": arguments_json(call.get("arguments")),
                        },
                    }
                )
            if tool_calls:
                message["toolCalls"] = tool_calls
            model = step.get("model_name") or trajectory.model_name or self.default_model
            if model:
                message["model"] = str(model)
        if timestamp is not None:
            message["timestamp"] = timestamp
        self.messages.append(message)
        self._add_observation(step, list(calls.values()), calls, timestamp)

    def _add_observation(
        self, step: dict[str, Any], call_ids: list[str], calls: dict[str, str], timestamp: int | None
    ) -> None:
        """Results answering a call become `tool` messages; without calls they are what the agent
        read next, a `user` message, as in the rows. Subagent references become links."""
        results = dicts_in(as_dict(step.get("observation")).get("results"))
        texts = [(r, message_text(r["content"])) for r in results if "content" in r]
        if texts and call_ids:
            positional = len(texts) == len(call_ids)
            for position, (result, text) in enumerate(texts):
                answered = calls.get(str(result.get("source_call_id")))
                if answered is None:
                    answered = call_ids[position] if positional else call_ids[-1]
                self._append({"role": Role.TOOL.value, "content": text, "toolCallId": answered}, timestamp)
        elif texts:
            self._append({"role": Role.USER.value, "content": "\n".join(text for _, text in texts)}, timestamp)
        for result in results:
            for ref in dicts_in(result.get("subagent_trajectory_ref")):
                self._add_subagent_link(ref)

    def _add_subagent_link(self, ref: dict[str, Any]) -> None:
        file_name = str(ref.get("trajectory_path") or "").rsplit("/", 1)[-1]
        path = self.subagent_paths.get(file_name)
        summary = as_dict(ref.get("extra")).get("summary")
        where = f"session {path}" if path else f"{file_name or 'a subagent file'} (not in this dataset)"
        self.add_marker(f"Subagent: {summary or file_name} -> {where}")

    def _append(self, message: dict[str, Any], timestamp: int | None) -> None:
        if timestamp is not None:
            message["timestamp"] = timestamp
        self.messages.append(message)


def _header(
    session_id: str,
    harness: str,
    summary: TrialSummary,
    run_id: str,
    training_step: str | None,
    steps: int,
    files: list[str],
    **extra: Any,
) -> dict[str, Any]:
    return {
        "type": "session",
        "harness": harness,
        "id": session_id,
        "name": f"{summary.task}: {summary.result if summary.result is not None else 'no result'}",
        "run_id": run_id,
        "training_step": training_step,
        "trial_name": summary.trial_name,
        "task": summary.task,
        "reward": summary.reward,
        "result": summary.result,
        "agent": summary.agent,
        "model": summary.model,
        "steps": steps,
        "trajectory_files": files,
        **extra,
    }


def trial_sessions(
    summary: TrialSummary,
    chain: list[Trajectory],
    subagents: list[Trajectory],
    run_id: str,
    training_step: str | None = None,
    harness: str = "",
) -> list[Session]:
    """The main session (the continuation chain, in order) and one session per subagent file.

    `training_step` is the RL training step folder the trial came from (`step-25`; None for a run
    without step folders), as `trials.parquet`'s `step` column names it. `harness` overrides the trial's agent name, which is otherwise the harness (`terminus-2` when
    the trial names none).
    """
    harness = harness or summary.agent or DEFAULT_HARNESS
    main_path = session_path(summary.trial_name)
    subagent_paths = {t.name: session_path(summary.trial_name, subagent_source(t.name)) for t in subagents}

    # Named by file name: they sit beside the main session, whichever version folder holds them.
    beside = {name: path.rsplit("/", 1)[-1] for name, path in subagent_paths.items()}
    main = _MessageBuilder(chain[0].model_name if chain else None, beside)
    for position, trajectory in enumerate(chain):
        if position:
            main.add_marker(f"Context handed off: the trajectory continues in {trajectory.name}.")
        main.add_trajectory(trajectory)
    sessions = [
        Session(
            main_path,
            _header(
                summary.trial_name,
                harness,
                summary,
                run_id,
                training_step,
                sum(len(t.steps) for t in chain),
                [t.name for t in chain],
                trace_source="main",
                subagent_sessions=sorted(beside.values()),
            ),
            main.messages,
        )
    ]
    for trajectory in subagents:
        source = subagent_source(trajectory.name)
        builder = _MessageBuilder(trajectory.model_name, {})
        builder.add_trajectory(trajectory)
        header = _header(
            f"{summary.trial_name}.{source}",
            harness,
            summary,
            run_id,
            training_step,
            len(trajectory.steps),
            [trajectory.name],
            trace_source=source,
            parent_session=main_path.rsplit("/", 1)[-1],
        )
        sessions.append(Session(subagent_paths[trajectory.name], header, builder.messages))
    return sessions


def sessions_from_files(
    summary: TrialSummary,
    files: Mapping[str, bytes],
    run_id: str,
    training_step: str | None = None,
    harness: str = "",
    parsed_files: ParsedTrajectories | None = None,
) -> tuple[list[Session], list[SkippedSession]]:
    """`trial_sessions` from an exported trial's fetched files (paths relative to the trial folder),
    and the subagent files left out for a name no session can be filed under.

    Called only for trials the rows step exported, so the main files parse; a subagent file that
    does not is left out, as it gives no row either. `parsed_files` holds what the rows parsed.
    """
    parsed_files = parsed_files or ParsedTrajectories(files)
    main_files: dict[str, Trajectory] = {}
    subagents: list[Trajectory] = []
    skipped: list[SkippedSession] = []
    for path in sorted(files):
        name = agent_file(path)
        if name is None or not (is_main_trajectory_file(name) or is_subagent_file(name)):
            continue
        parsed = parsed_files.get(path, name)
        if isinstance(parsed, Exclusion):
            continue
        if is_subagent_file(name):  # Harbor's two sets overlap for names like trajectory.x.json
            problem = subagent_name_problem(name)
            if problem is None:
                subagents.append(parsed)
            else:
                skipped.append(SkippedSession(SessionSkip.INVALID_SUBAGENT_NAME, problem))
        if is_main_trajectory_file(name):
            main_files[name] = parsed
    if agent_file(MAIN_TRAJECTORY) not in main_files:
        return [], skipped
    chain = _continuation_chain(main_files)
    if isinstance(chain, Exclusion):
        return [], skipped
    return trial_sessions(summary, chain, subagents, run_id, training_step, harness), skipped
