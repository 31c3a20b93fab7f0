"""Session files for the Hub's trace viewer: the format, the trajectories they hold, and the scan."""

from __future__ import annotations

import json
import math
import random
import re
import shutil
import string
import zlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trace_assets.core.accounting import Coverage
from trace_assets.core.scope import RunScope
from trace_assets.harbor.options import ExportOptions
from trace_assets.harbor.result import TrialSummary
from trace_assets.harbor.sessions import (
    SESSIONS_DIR,
    Role,
    Session,
    SessionSkip,
    _MessageBuilder,
    arguments_json,
    epoch_ms,
    file_stem,
    session_path,
    sessions_from_files,
    slotted_jsonl,
    trial_sessions,
)
from trace_assets.harbor.trajectory import parse_trajectory
from trace_assets.publishing.dataset_folder import build_run_folder
from trace_assets.secret_scan.policy import ScanPolicy
from trace_assets.secret_scan.scanner import ScanOptions
from trace_assets.steps import trial_rows
from trace_assets.steps.scan import ScannedMatches, scan_run, secret_redactor
from trace_assets.steps.sessions import (
    SessionWriter,
    copy_sessions,
    read_manifest,
    session_file_bytes,
    staged_session_files,
    staged_sessions,
    store_path,
)
from trace_assets.steps.staged_rows import iter_rows
from trace_assets.steps.staging import RunStaging
from trace_assets.store.trace_store import TraceStore
from trace_assets_tests.support.generate_traces import generate_run
from trace_assets_tests.support.golden_trials import DATA as GOLDEN
from trace_assets_tests.support.golden_trials import make_golden_trials
from trace_assets_tests.support.helpers import SAMPLE_RUN, SAMPLE_TRACES, stage_rows

ROLES = {role.value for role in Role}


def check_session_file(data: bytes) -> list[dict[str, Any]]:
    """The Session Trace Simple Format's rules; returns the messages."""
    lines = [json.loads(line) for line in data.decode().splitlines()]
    header, messages = lines[0], [line["message"] for line in lines[1:]]
    assert header["type"] == "session"
    assert isinstance(header["harness"], str) and header["harness"]
    assert isinstance(header["id"], str) and header["id"]
    assert isinstance(header.get("name", ""), str)
    assert all(line["type"] == "message" for line in lines[1:])
    calls: set[str] = set()
    for message in messages:
        assert message["role"] in ROLES
        assert isinstance(message["content"], str)
        assert isinstance(message.get("reasoningContent", ""), str)
        assert isinstance(message.get("model", ""), str)
        assert isinstance(message.get("timestamp", 0), int)
        for call in message.get("toolCalls", []):
            assert message["role"] == "assistant"
            assert isinstance(call["id"], str) and call["id"] not in calls, call
            assert isinstance(call["function"]["name"], str)
            assert isinstance(call["function"]["arguments"], str)
            json.loads(call["function"]["arguments"])
            calls.add(call["id"])
        if message["role"] == "tool":
            assert message["toolCallId"] in calls, "a tool result answers an earlier call"
        else:
            assert "toolCallId" not in message
    return messages


def as_row_messages(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Session messages the way a row's `conversations` renders them (Harbor's rules), to compare."""
    rendered: list[tuple[str, str]] = []
    tool_texts: list[str] = []
    for message in [*messages, {"role": "end", "content": ""}]:
        if message["role"] != "tool" and tool_texts:
            rendered.append(("user", "\n".join(tool_texts)))
            tool_texts = []
        if message["role"] == "tool":
            tool_texts.append(message["content"])
        elif message["role"] == "assistant":
            parts = [f"<think>{message['reasoningContent']}</think>"] if message.get("reasoningContent") else []
            text = message["content"]
            if text:
                parts.append("<think>" + text if "</think>" in text and "<think>" not in text else text)
            for call in message.get("toolCalls", []):
                name, arguments = call["function"]["name"], json.loads(call["function"]["arguments"])
                parts.append(f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>")
            rendered.append(("assistant", "\n".join(parts)))
        elif message["role"] in ("system", "user"):
            rendered.append(("user", message["content"]))
    return rendered


def assert_in_order(row: dict[str, Any], session_messages: list[dict[str, Any]]) -> None:
    """Every message of the row appears in the session, in the row's order."""
    rendered = as_row_messages(session_messages)
    position = 0
    for message in row["conversations"]:
        wanted = (message["role"], message["content"])
        while position < len(rendered) and rendered[position] != wanted:
            position += 1
        assert position < len(rendered), f"{row['trial_name']}: {wanted[1][:80]!r} is missing or out of order"
        position += 1


def export(traces_root: Path, run_id: str, staging_root: Path, include_subagents: bool = False) -> RunStaging:
    store = TraceStore(str(traces_root))
    staging = RunStaging(staging_root, RunScope(run_id))
    stage_rows(store, staging, ExportOptions(subagents="merged" if include_subagents else "none"), sessions=True)
    return staging


def session_files(staging: RunStaging) -> dict[str, bytes]:
    return dict(staged_session_files(staged_sessions(staging)))


def rows_of(staging: RunStaging) -> list[dict[str, Any]]:
    return [row for table in iter_rows(staging.require_rows()) for row in table.to_pylist()]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> RunStaging:
    """A generated run (continuations and summarization subagents among its rare trials) plus
    Harbor's golden trajectories, which carry tool calls and reasoning."""
    root = tmp_path_factory.mktemp("traces")
    generate_run(root, "gen-run", trials=60, seed=5, prompt_scale=0.05, episode_prompts=False)
    make_golden_trials(root / "gen-run" / "trace_jobs")
    return export(root, "gen-run", tmp_path_factory.mktemp("staging"), include_subagents=True)


# ---------------------------------------------------------------- the format


def test_sample_session_files_follow_the_format(tmp_path: Path) -> None:
    staging = export(SAMPLE_TRACES, SAMPLE_RUN, tmp_path)
    files = session_files(staging)
    exported = {row["trial_name"] for row in rows_of(staging)}
    mains = {
        json.loads(data.splitlines()[0])["id"]: path for path, data in files.items() if ".summarization" not in path
    }
    assert set(mains) == exported
    for path, data in files.items():
        check_session_file(data)
        assert path.startswith(f"{SESSIONS_DIR}/") and path.count("/") == 2


def test_generated_session_files_follow_the_format(generated: RunStaging) -> None:
    files = session_files(generated)
    headers = {path: json.loads(data.splitlines()[0]) for path, data in files.items()}
    for data in files.values():
        check_session_file(data)
    assert any(len(h["trajectory_files"]) > 1 for h in headers.values()), "a continued trial"
    subagents = [h for h in headers.values() if h["trace_source"] != "main"]
    assert subagents, "a summarized trial"
    by_name = {path.rsplit("/", 1)[-1]: path for path in files}  # headers name the files beside them
    for header in subagents:  # each subagent session is findable from its main one, and back
        parent = by_name[header["parent_session"]]
        assert parent.rsplit("/", 1)[0] == session_path(header["trial_name"], header["trace_source"]).rsplit("/", 1)[0]
        own_name = session_path(header["trial_name"], header["trace_source"]).rsplit("/", 1)[-1]
        assert own_name in headers[parent]["subagent_sessions"]
    assert {h["harness"] for h in headers.values()} == {"terminus-2"}


def test_every_row_message_is_in_its_trials_session_in_order(generated: RunStaging) -> None:
    files = session_files(generated)
    rows = rows_of(generated)
    assert any(row["trace_source"] != "main" for row in rows)
    for row in rows:
        subagent = None if row["trace_source"] == "main" else row["trace_source"]
        assert_in_order(row, check_session_file(files[session_path(row["trial_name"], subagent)]))


def test_sample_rows_are_in_their_sessions(tmp_path: Path) -> None:
    staging = export(SAMPLE_TRACES, SAMPLE_RUN, tmp_path)
    files = session_files(staging)
    for row in rows_of(staging):
        assert_in_order(row, check_session_file(files[session_path(row["trial_name"])]))


# ---------------------------------------------------------------- the converter


def _summary(trial: str = "hello__golden") -> TrialSummary:
    return TrialSummary(trial, "hello-world", "terminus-2", "gpt-4o", "openai", "", "job", 1.0, None, "1.0")


def _golden(name: str) -> Any:
    parsed = parse_trajectory((GOLDEN / name).read_bytes(), name.split(".", 1)[1])
    assert not isinstance(parsed, Exception)
    return parsed


def test_a_continuation_follows_its_trajectory_with_unique_call_ids() -> None:
    prefix = "hello-world-context-summarization-linear-history"
    chain = [_golden(f"{prefix}.trajectory.json"), _golden(f"{prefix}.trajectory.cont-1.json")]
    [main] = trial_sessions(_summary(), chain, [], "run-1")
    messages = check_session_file(main.to_jsonl())
    markers = [m["content"] for m in messages if m["role"] == "system"]
    assert "Context handed off: the trajectory continues in trajectory.cont-1.json." in markers
    assert main.header["steps"] == len(chain[0].steps) + len(chain[1].steps)
    assert main.header["trajectory_files"] == ["trajectory.json", "trajectory.cont-1.json"]
    # The subagent files are not part of this chain: their link says so instead of pointing nowhere.
    assert any("(not in this dataset)" in text for text in markers)


def test_subagents_are_linked_from_the_main_session() -> None:
    prefix = "hello-world-context-summarization"
    names = ("summary", "questions", "answers")
    subagents = [_golden(f"{prefix}.trajectory.summarization-1-{name}.json") for name in names]
    sessions = trial_sessions(_summary(), [_golden(f"{prefix}.trajectory.json")], subagents, "run-1")
    main, *others = sessions
    links = [m["content"] for m in main.messages if m["role"] == "system" and m["content"].startswith("Subagent:")]
    beside = [s.path.rsplit("/", 1)[-1] for s in others]  # file names beside the main session
    assert [link.rsplit(" ", 1)[-1] for link in links] == beside
    assert main.header["subagent_sessions"] == sorted(beside)
    assert {s.header["id"] for s in others} == {f"hello__golden.summarization-1-{name}" for name in names}
    for session in others:
        messages = check_session_file(session.to_jsonl())
        assert session.header["parent_session"] == main.path.rsplit("/", 1)[-1]
        assert any(m["role"] == "tool" for m in messages) or session.header["trace_source"].endswith("questions")
    tool_calls = [c for m in main.messages for c in m.get("toolCalls", [])]
    assert tool_calls[0] == {
        "id": "call_0_1",
        "function": {"name": "bash_command", "arguments": '{"keystrokes": "mkdir test_dir\\n", "duration": 0.1}'},
    }
    assert main.messages[2] == {
        "role": "tool",
        "content": "New Terminal Output:\n\nroot@CONTAINER_ID:/app# mkdir test_dir\n\n\n",
        "toolCallId": "call_0_1",
    }


def test_reasoning_timestamps_and_models() -> None:
    trajectory = _golden("hello-world-invalid-json.trajectory.json")
    steps = [dict(step, timestamp="2026-01-01T00:00:01.500Z") for step in trajectory.steps]
    [main] = trial_sessions(_summary(), [trajectory.__class__(**{**trajectory.__dict__, "steps": steps})], [], "r")
    assistant = [m for m in main.messages if m["role"] == "assistant"]
    assert all(m["reasoningContent"] for m in assistant)
    assert {m["timestamp"] for m in main.messages} == {1767225601500}
    assert {m["model"] for m in assistant} == {"openai/gpt-4o"}


def test_small_parts() -> None:
    assert epoch_ms("1970-01-01T00:00:01+00:00") == 1000
    assert epoch_ms("2026-01-01T00:00:00") is None  # naive: names no instant
    assert epoch_ms("yesterday") is None and epoch_ms(None) is None
    assert arguments_json({"a": 1}) == '{"a": 1}'
    assert arguments_json('{"a": 1}') == '{"a": 1}'
    assert arguments_json("ls -la") == '"ls -la"'
    assert file_stem("task__abc") == "task__abc"
    assert file_stem("../x/y").startswith("_x_y-") and file_stem("a/b") != file_stem("a_b")
    assert session_path("task__abc") == session_path("task__abc")
    assert (
        session_path("task__abc", "summarization-1-summary").rsplit("/", 1)[0]
        == session_path("task__abc").rsplit("/", 1)[0]
    )


def test_buckets_stay_small_and_stable() -> None:
    names = [f"task-{n}__{n:07x}" for n in range(20_000)]
    buckets: dict[str, int] = {}
    for name in names:
        bucket = session_path(name).split("/")[1]
        buckets[bucket] = buckets.get(bucket, 0) + 1
    assert len(buckets) == 256 and max(buckets.values()) < 2 * 20_000 / 256


# ---------------------------------------------------------------- incremental runs


def test_a_rerun_keeps_unchanged_sessions_and_drops_gone_trials(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    shutil.copytree(SAMPLE_TRACES, traces)
    staging = export(traces, SAMPLE_RUN, tmp_path / "staging")
    before = session_files(staging)
    gone = sorted(read_manifest(staged_sessions(staging)))[0]
    shutil.rmtree(traces / SAMPLE_RUN / "trace_jobs" / gone)
    again = export(traces, SAMPLE_RUN, tmp_path / "staging")
    after = session_files(again)
    assert gone not in read_manifest(staged_sessions(again))
    assert set(after) < set(before) and all(after[path] == before[path] for path in after)
    staged = set(pq.read_table(store_path(staged_sessions(again)), columns=["path"]).column("path").to_pylist())
    assert staged == set(after) and not staged_sessions(again).exists()  # one store, no file per session


def test_a_trial_whose_rows_cannot_be_stored_loses_its_session_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session is written before the batch's rows are encoded; a trial excluded then must not
    leave a session without a row."""
    import trace_assets.steps.trial_rows as rows_step

    sample = export(SAMPLE_TRACES, SAMPLE_RUN, tmp_path / "before")
    victim = sorted(read_manifest(staged_sessions(sample)))[0]
    real_encode = rows_step.encode_per_trial

    def fail_victim(records: list, schema: Any) -> tuple[Any, dict[str, str]]:
        table, failed = real_encode([(t, rows) for t, rows in records if t != victim], schema)
        return table, {**failed, **{t: "ArrowInvalid: planted" for t, _ in records if t == victim}}

    monkeypatch.setattr(rows_step, "encode_per_trial", fail_victim)
    staging = export(SAMPLE_TRACES, SAMPLE_RUN, tmp_path / "after")
    manifest = read_manifest(staged_sessions(staging))
    assert victim not in manifest and set(manifest) == set(read_manifest(staged_sessions(sample))) - {victim}
    staged = set(pq.read_table(store_path(staged_sessions(staging)), columns=["path"]).column("path").to_pylist())
    assert staged == {path for paths in manifest.values() for path in paths}
    coverage = json.loads(staging.coverage.read_text())
    assert coverage["sessions"] == sum(len(paths) for paths in manifest.values())


def test_the_header_names_the_training_step() -> None:
    prefix = "hello-world-context-summarization"
    chain = [_golden(f"{prefix}.trajectory.json")]
    subagents = [_golden(f"{prefix}.trajectory.summarization-1-summary.json")]
    for session in trial_sessions(_summary(), chain, subagents, "run-1", "step-25"):
        assert session.header["run_id"] == "run-1" and session.header["training_step"] == "step-25"
    [main] = trial_sessions(_summary(), [_golden("hello-world-timeout.trajectory.json")], [], "run-1")
    assert main.header["training_step"] is None


# ---------------------------------------------------------------- secrets in earlier episodes


ALNUM = string.ascii_letters + string.digits
BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase


def github_token(rng: random.Random) -> str:
    """30 random base62 characters and their CRC32 in base62, as GitHub mints them."""
    body = "".join(rng.choice(ALNUM) for _ in range(30))
    value, digits = zlib.crc32(body.encode()), ""
    while value:
        value, digit = divmod(value, 62)
        digits = BASE62[digit] + digits
    return "ghp_" + body + digits.rjust(6, "0")


def test_a_secret_in_an_early_episode_is_found_and_redacted(tmp_path: Path) -> None:
    trace_jobs = tmp_path / "traces" / "leaky-run" / "trace_jobs"
    make_golden_trials(trace_jobs)
    token = github_token(random.Random(16))
    # The first file of a continued trial: the row holds the last episode, from trajectory.cont-1.json.
    first = trace_jobs / "hello-world-context-summarization-linear-history__golden" / "agent" / "trajectory.json"
    trajectory = json.loads(first.read_text())
    trajectory["steps"][1]["observation"]["results"][0]["content"] += f"\nexport GITHUB_TOKEN={token}\n"
    first.write_text(json.dumps(trajectory))

    staging = export(tmp_path / "traces", "leaky-run", tmp_path / "staging")
    assert not any(token in json.dumps(row) for row in rows_of(staging))
    assert any(token in data.decode() for data in session_files(staging).values())

    report = scan_run(staging.require_rows(), "leaky-run", ScanOptions(), staged_sessions(staging))
    assert report["verdict"] == "live" and report["sessions_scanned"] == len(session_files(staging))
    [finding] = [f for f in report["findings"] if f["kind"] == "github_token"]
    assert finding["trace_source"] == "session" and finding["verdict"] == "live"

    out = tmp_path / "published"
    coverage = Coverage.from_dict(json.loads(staging.coverage.read_text()))
    redactor = secret_redactor(ScanPolicy("redact", "redact"), report, ScanOptions())
    rows = staging.require_rows()
    build_run_folder(out, rows, staging.statuses, coverage, report, 100, redactor, None, staged_sessions(staging))
    published = {p: p.read_text() for p in (out / SESSIONS_DIR).rglob("*.jsonl")}
    assert len(published) == len(session_files(staging))
    assert not any(token in text for text in published.values())
    assert any("[REDACTED:github_token]" in text for text in published.values())
    # the sessions without a finding go out as staged, byte for byte; the leaky one alone is rewritten
    [version] = [folder.name for folder in (out / SESSIONS_DIR).iterdir() if folder.is_dir()]  # <version>/<bucket>/...
    staged = session_files(staging)
    as_published = {path: out / SESSIONS_DIR / version / Path(path).relative_to(SESSIONS_DIR) for path in staged}
    rewritten = [path for path, data in staged.items() if as_published[path].read_bytes() != data]
    assert rewritten == [path for path, data in staged.items() if token in data.decode()]
    for text in published.values():
        check_session_file(text.encode())
    assert json.loads((out / "secret_scan.json").read_text())["redacted"]["github_token"] >= 1
    card = (out / "README.md").read_text()
    assert "config_name: sessions" not in card and "## Sessions" in card  # their own card declares them
    assert f"path: {version}/*/*.jsonl" in (out / SESSIONS_DIR / "README.md").read_text()


def leaky_staging(tmp_path: Path) -> tuple[RunStaging, dict[str, Any]]:
    """The golden trials with a live token in a session file, staged and scanned with the scan's record."""
    trace_jobs = tmp_path / "traces" / "leaky-run" / "trace_jobs"
    make_golden_trials(trace_jobs)
    first = trace_jobs / "hello-world-context-summarization-linear-history__golden" / "agent" / "trajectory.json"
    trajectory = json.loads(first.read_text())
    token = github_token(random.Random(16))
    trajectory["steps"][1]["observation"]["results"][0]["content"] += f"\nexport GITHUB_TOKEN={token}\n"
    first.write_text(json.dumps(trajectory))
    staging = export(tmp_path / "traces", "leaky-run", tmp_path / "staging")
    sessions = staged_sessions(staging)
    report = scan_run(staging.require_rows(), "leaky-run", ScanOptions(), sessions, None, staging.scan_matches)
    return staging, report


def test_two_workers_publish_the_bytes_one_does(tmp_path: Path) -> None:
    """Shards written in a thread while the session files are: every byte as one core writes
    them, the redaction's counts included."""
    staging, report = leaky_staging(tmp_path)
    coverage = Coverage.from_dict(json.loads(staging.coverage.read_text()))
    published = {}
    for workers in (1, 2):
        out = tmp_path / f"published-{workers}"
        scanned = ScannedMatches.read(staging.scan_matches, report, ScanOptions())
        redactor = secret_redactor(ScanPolicy("redact", "redact"), report, ScanOptions(), scanned)
        assert redactor is not None and redactor.scanned is not None  # else rows and sessions go in turn
        rows = staging.require_rows()
        build_run_folder(out, rows, staging.statuses, coverage, report, 2, redactor, None, staged_sessions(staging))
        published[workers] = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert published[1] == published[2]
    assert json.loads(published[2][Path("secret_scan.json")])["redacted"]["github_token"] >= 1


def test_a_session_file_that_cannot_be_written_fails_the_copy_naming_it(tmp_path: Path) -> None:
    staging, _ = leaky_staging(tmp_path)
    folder = staged_sessions(staging)
    first = next(path for paths in read_manifest(folder).values() for path in paths)
    out = tmp_path / "published"
    (out / first).mkdir(parents=True)  # a folder where the file goes: open() fails
    with pytest.raises(OSError, match=re.escape(Path(first).name)):
        copy_sessions(folder, out, workers=2)


def test_unicode_line_breaks_in_a_session_are_scanned_and_redacted_in_place(tmp_path: Path) -> None:
    """U+2028, U+2029 and NEL in a session's text: the scan still finds the secret beside them, and the
    file writes them as JSON escapes, so a reader splitting lines as `str.splitlines` does (`datasets`)
    still reads one JSON object a line."""
    trace_jobs = tmp_path / "traces" / "breaks-run" / "trace_jobs"
    make_golden_trials(trace_jobs)
    token = github_token(random.Random(17))
    first = trace_jobs / "hello-world-context-summarization-linear-history__golden" / "agent" / "trajectory.json"
    trajectory = json.loads(first.read_text())
    trajectory["steps"][1]["observation"]["results"][0]["content"] += f"\u2028a\u2029b\x85c\nGITHUB_TOKEN={token}\n"
    first.write_text(json.dumps(trajectory))

    staging = export(tmp_path / "traces", "breaks-run", tmp_path / "staging")
    report = scan_run(staging.require_rows(), "breaks-run", ScanOptions(), staged_sessions(staging))
    assert [f["trace_source"] for f in report["findings"] if f["kind"] == "github_token"] == ["session"]

    out = tmp_path / "published"
    coverage = Coverage.from_dict(json.loads(staging.coverage.read_text()))
    redactor = secret_redactor(ScanPolicy("redact", "redact"), report, ScanOptions())
    build_run_folder(
        out, staging.require_rows(), staging.statuses, coverage, report, 100, redactor, None, staged_sessions(staging)
    )
    [rewritten] = [p.read_bytes() for p in (out / SESSIONS_DIR).rglob("*.jsonl") if b"[REDACTED:" in p.read_bytes()]
    assert token.encode() not in rewritten and b"\\u2028a\\u2029b\\u0085c" in rewritten  # escaped: one line each
    assert len(rewritten.decode().splitlines()) == rewritten.count(b"\n")  # as datasets splits them
    assert all(isinstance(json.loads(line), dict) for line in rewritten.split(b"\n") if line)  # a line per \n


# ---------------------------------------------------------------- hostile trajectories


def _trajectory(steps: list[dict[str, Any]], name: str = "trajectory.json") -> Any:
    parsed = parse_trajectory(json.dumps({"steps": steps}).encode(), name)
    assert not isinstance(parsed, Exception)
    return parsed


def _strict_json(line: str | bytes) -> Any:
    """The line as JSON strict readers take it: `NaN` and `Infinity` fail the test."""

    def refuse(name: str) -> Any:
        pytest.fail(f"{name} in {line!r}")

    return json.loads(line, parse_constant=refuse)


class _CountingSet(set):
    """A set that counts membership checks: the work `_unique_call_id` does, without a clock."""

    checks = 0

    def __contains__(self, item: object) -> bool:
        self.checks += 1
        return super().__contains__(item)


def test_many_repeats_of_one_call_id_stay_unique_in_linear_work() -> None:
    repeats = 5000
    calls = [{"tool_call_id": "x#3", "function_name": "f"}] + [{"tool_call_id": "x", "function_name": "f"}] * repeats
    step = {"source": "agent", "message": "a", "tool_calls": calls}
    builder = _MessageBuilder(None, {})
    builder._call_ids = seen = _CountingSet()
    builder.add_trajectory(_trajectory([{"source": "user", "message": "q"}, step]))
    ids = [call["id"] for call in builder.messages[1]["toolCalls"]]
    assert ids[:4] == ["x#3", "x", "x#2", "x#4"]  # a real `x#3` is never given again
    assert len(set(ids)) == len(ids) == repeats + 1
    assert seen.checks < 3 * len(ids)  # counting suffixes from 1 each time took ~repeats²/2


def test_a_non_finite_number_is_null_in_strict_json() -> None:
    summary = TrialSummary("t", "task", "terminus-2", "m", "p", "", "job", math.nan, None, "nan")
    call = {"tool_call_id": "c", "function_name": "f", "arguments": {"n": math.inf}}
    text_call = {"tool_call_id": "d", "function_name": "f", "arguments": '{"n": NaN}'}
    steps = [{"source": "user", "message": "q"}, {"source": "agent", "message": "a", "tool_calls": [call, text_call]}]
    [main] = trial_sessions(summary, [_trajectory(steps)], [], "run")
    lines = main.to_jsonl().decode().splitlines()
    strict = [_strict_json(line) for line in lines]
    assert strict[0]["reward"] is None
    arguments = [call["function"]["arguments"] for call in strict[2]["message"]["toolCalls"]]
    assert arguments == ['{"n": null}', json.dumps('{"n": NaN}')]
    check_session_file(main.to_jsonl())


def _trial_folder(trace_jobs: Path, folder: str, trial_name: str, files: dict[str, Any], reward: Any = 1.0) -> None:
    """A crafted trial folder: result.json naming `trial_name` and agent files (values as JSON)."""
    (trace_jobs / folder / "agent").mkdir(parents=True)
    result = {"trial_name": trial_name, "task_name": "task", "agent_info": {"name": "terminus-2"}}
    result["verifier_result"] = {"rewards": {"reward": reward}}
    (trace_jobs / folder / "result.json").write_text(json.dumps(result))
    for name, value in files.items():
        (trace_jobs / folder / "agent" / name).write_text(json.dumps(value))


def _said(text: str) -> dict[str, Any]:
    return {"steps": [{"source": "user", "message": "q"}, {"source": "agent", "message": text}]}


def _statuses(staging: RunStaging) -> dict[str, dict[str, Any]]:
    return {s["trial_dir"]: s for s in pq.read_table(staging.statuses).to_pylist()}


def _texts(data: bytes) -> list[str]:
    return [m["content"] for m in check_session_file(data)]


def test_a_nameless_subagent_file_does_not_overwrite_the_main_session(tmp_path: Path) -> None:
    trace_jobs = tmp_path / "traces" / "run" / "trace_jobs"
    files = {"trajectory.json": _said("MAIN ANSWER"), "trajectory..json": _said("SUBAGENT")}
    _trial_folder(trace_jobs, "t__1", "t__1", files)
    staging = export(tmp_path / "traces", "run", tmp_path / "staging")
    assert list(session_files(staging)) == [session_path("t__1")]
    assert "MAIN ANSWER" in _texts(session_files(staging)[session_path("t__1")])
    coverage = json.loads(staging.coverage.read_text())
    assert coverage["exported"] == 1 and coverage["sessions_skipped"] == {"invalid_subagent_name": 1}
    assert "session skipped (invalid_subagent_name): agent/trajectory..json" in _statuses(staging)["t__1"]["detail"]
    with pytest.raises(ValueError):
        session_path("t__1", "")


def test_a_copied_trial_folder_gets_no_session_over_the_original(tmp_path: Path) -> None:
    """`cp -r A__1 B__2` keeps result.json's trial_name: both rows are exported, the first trial
    keeps its session, the copy is refused by name; once the original is gone the copy gets it."""
    traces = tmp_path / "traces"
    trace_jobs = traces / "run" / "trace_jobs"
    _trial_folder(trace_jobs, "A__1", "A__1", {"trajectory.json": _said("A's real answer")})
    _trial_folder(trace_jobs, "B__2", "A__1", {"trajectory.json": _said("B's hostile text")})
    staging = export(traces, "run", tmp_path / "staging")
    assert [row["trial_name"] for row in rows_of(staging)] == ["A__1", "A__1"]
    files = session_files(staging)
    assert list(files) == [session_path("A__1")] and "A's real answer" in _texts(files[session_path("A__1")])
    coverage = json.loads(staging.coverage.read_text())
    assert coverage["sessions"] == 1 and coverage["sessions_skipped"] == {"session_path_taken": 1}
    assert "session_path_taken" in _statuses(staging)["B__2"]["detail"]

    shutil.rmtree(trace_jobs / "A__1")
    again = export(traces, "run", tmp_path / "staging")
    assert "B's hostile text" in _texts(session_files(again)[session_path("A__1")])
    assert json.loads(again.coverage.read_text())["sessions_skipped"] == {}


def test_a_kept_session_written_over_this_run_is_refused_by_name(tmp_path: Path) -> None:
    """B's session of the run before is on a path A claims now that A's trajectory reads: A comes
    first and writes it, so unchanged B keeps nothing rather than A's file."""
    traces = tmp_path / "traces"
    trace_jobs = traces / "run" / "trace_jobs"
    _trial_folder(trace_jobs, "A__1", "X", {"trajectory.json": _said("A's answer")})
    _trial_folder(trace_jobs, "B__2", "X", {"trajectory.json": _said("B's answer")})
    (trace_jobs / "A__1" / "agent" / "trajectory.json").write_text("{not json")
    first = export(traces, "run", tmp_path / "staging")
    assert _statuses(first)["A__1"]["status"] == "excluded"
    assert "B's answer" in _texts(session_files(first)[session_path("X")])

    (trace_jobs / "A__1" / "agent" / "trajectory.json").write_text(json.dumps(_said("A's answer")))
    for _ in range(2):  # B is re-read the run after, and refused again
        again = export(traces, "run", tmp_path / "staging")
        assert read_manifest(staged_sessions(again)) == {"A__1": [session_path("X")], "B__2": []}
        assert "A's answer" in _texts(session_files(again)[session_path("X")])
        assert json.loads(again.coverage.read_text())["sessions_skipped"] == {"session_path_taken": 1}
        assert "session skipped (session_path_taken)" in _statuses(again)["B__2"]["detail"]


def _add(writer: SessionWriter, trial_dir: str, summary: TrialSummary, files: dict[str, bytes]) -> list:
    sessions, skipped = sessions_from_files(summary, files, "run")
    made = [trial_rows._record(trial_dir, s.path, s.header, s.slotted(), ()) for s in sessions]
    records = pa.Table.from_pylist(made, schema=trial_rows.STORE_SCHEMA)
    return writer.add(trial_dir, [session.path for session in sessions], skipped, records)


def test_the_writer_never_overwrites_another_trials_path(tmp_path: Path) -> None:
    writer = SessionWriter(tmp_path / SESSIONS_DIR)
    files = {"agent/trajectory.json": json.dumps(_said("first")).encode()}
    assert _add(writer, "one", _summary("same"), files) == []
    copy = {"agent/trajectory.json": json.dumps(_said("second")).encode()}
    [refused] = _add(writer, "two", _summary("same"), copy)
    assert refused.reason is SessionSkip.PATH_TAKEN and "one" in refused.detail
    counts = writer.close()
    assert counts.sessions == 1 and counts.skipped == {"session_path_taken": 1}
    assert "first" in _texts(dict(staged_session_files(tmp_path / SESSIONS_DIR))[session_path("same")])


def test_a_trial_whose_session_fails_keeps_its_row(tmp_path: Path) -> None:
    """A subagent reference that is a number, a trial name too long for a file name: the row is
    exported and the session written; whatever else the converter trips on skips the session only."""
    trace_jobs = tmp_path / "traces" / "run" / "trace_jobs"
    steps = _said("answer")["steps"]
    steps[1]["observation"] = {"results": [{"content": "out", "subagent_trajectory_ref": 5}]}
    _trial_folder(trace_jobs, "ref__1", "ref__1", {"trajectory.json": {"steps": steps}})
    long_name = "long-" + "x" * 300
    _trial_folder(trace_jobs, "long__2", long_name, {"trajectory.json": _said("long")})
    staging = export(tmp_path / "traces", "run", tmp_path / "staging")
    files = session_files(staging)
    assert {json.loads(data.splitlines()[0])["trial_name"] for data in files.values()} == {"ref__1", long_name}
    assert all(len(path.rsplit("/", 1)[-1]) < 200 for path in files)
    assert session_path(long_name) != session_path(long_name[:-1])
    assert json.loads(staging.coverage.read_text())["sessions_skipped"] == {}


def test_an_unconvertible_session_is_named_not_an_exclusion(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sessions_step = trial_rows

    def trip(*_: Any) -> Any:
        raise TypeError("'int' object is not iterable")

    monkeypatch.setattr(sessions_step, "sessions_from_files", trip)
    trace_jobs = tmp_path / "traces" / "run" / "trace_jobs"
    _trial_folder(trace_jobs, "t__1", "t__1", {"trajectory.json": _said("answer")})
    staging = export(tmp_path / "traces", "run", tmp_path / "staging")
    status = _statuses(staging)["t__1"]
    assert status["status"] == "exported" and status["rows"] == 1
    assert "session skipped (unconvertible_trajectory): TypeError" in status["detail"]
    coverage = json.loads(staging.coverage.read_text())
    assert coverage["sessions"] == 0 and coverage["sessions_skipped"] == {"unconvertible_trajectory": 1}


def test_a_nan_reward_is_null_in_the_written_session(tmp_path: Path) -> None:
    trace_jobs = tmp_path / "traces" / "run" / "trace_jobs"
    _trial_folder(trace_jobs, "t__1", "t__1", {"trajectory.json": _said("answer")}, reward=math.nan)
    staging = export(tmp_path / "traces", "run", tmp_path / "staging")
    [data] = session_files(staging).values()
    header = _strict_json(data.splitlines()[0])
    assert header["reward"] is None


def test_a_refused_trial_counts_each_of_its_sessions(tmp_path: Path) -> None:
    """A copied trial with a subagent: both its sessions are refused, and both are counted."""
    writer = SessionWriter(tmp_path / SESSIONS_DIR)
    main = _said("main")
    ref = [{"trajectory_path": "trajectory.summarization-1-summary.json"}]
    main["steps"][1]["observation"] = {"results": [{"content": "s", "subagent_trajectory_ref": ref}]}
    files = {
        "agent/trajectory.json": json.dumps(main).encode(),
        "agent/trajectory.summarization-1-summary.json": json.dumps(_said("sub")).encode(),
    }
    assert _add(writer, "one", _summary("same"), files) == []
    refused = _add(writer, "two", _summary("same"), files)
    assert [s.reason for s in refused] == [SessionSkip.PATH_TAKEN] * 2
    counts = writer.close()
    assert (counts.sessions, counts.subagent_sessions, counts.skipped) == (2, 1, {"session_path_taken": 2})


_ALL_CODE_POINTS = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)


@pytest.mark.parametrize(
    "text",
    [
        "plain",
        "",
        'quotes " and \\ backslashes, \x00 NUL, \x01, \x1f, \x7f, \t\n\r\b\f',
        "line breaks \x85 \u2028 \u2029 inside, é ü 日本 \U0001f600",
        _ALL_CODE_POINTS,
    ],
)
def test_a_slotted_session_writes_the_bytes_of_its_json(text):
    """Session files are written from their staged form (`SlottedText`): byte for byte what
    `json.dumps` writes, for every code point, with any text replaced."""
    header = {"type": "session", "harness": "terminus-2", "id": text, "reward": math.nan, "steps": 2, "n": None}
    messages = [
        {"role": "user", "content": text, "timestamp": 1},
        {
            "role": "assistant",
            "content": "x",
            "toolCalls": [{"id": "c", "function": {"name": text, "arguments": "{}"}}],
        },
        {"role": "tool", "content": text[::-1], "toolCallId": "c"},
    ]
    session = Session("sessions/ab/t.jsonl", header, messages)
    slotted = session.slotted()
    assert slotted.jsonl().encode() == session.to_jsonl()
    replaced = [f"[{i}]{text}" for i in range(len(slotted.texts))]
    lines = [json.loads(line) for line in slotted.jsonl(replaced).splitlines()]
    assert slotted_jsonl(lines).texts == replaced


def test_a_batch_of_session_files_is_written_column_wise_to_the_same_bytes():
    """Publishing builds a batch's files at once (`session_file_bytes`): the bytes `json.dumps`
    writes, for every code point and raw line break, for a session with no text, and for a batch
    that is a slice of its store's table."""
    texts = ["plain", "", 'q " \\ \x00 \x1f \x7f \t\n\r\b\f', "\x85 \u2028 \u2029 é \U0001f600", _ALL_CODE_POINTS]
    sessions = [
        Session(f"sessions/ab/t{i}.jsonl", {"type": "session", "id": text}, [{"role": "user", "content": text}])
        for i, text in enumerate(texts)
    ]
    sessions.insert(2, Session("sessions/ab/none.jsonl", {}, []))
    slotted = [session.slotted() for session in sessions]
    table = pa.table({"skeleton": [s.skeleton for s in slotted], "texts": [s.texts for s in slotted]})
    assert [s.texts for s in slotted][2] == []
    assert session_file_bytes(table) == [session.to_jsonl() for session in sessions]
    assert session_file_bytes(table.slice(3)) == [session.to_jsonl() for session in sessions[3:]]
    assert session_file_bytes(table.slice(0, 0)) == []


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kinds = ["text", "int", "float", "none", "bool"] + (["list", "dict"] if depth < 2 else [])
    kind = rng.choice(kinds)
    if kind == "text":
        return rng.choice(["", "x", 'q"\\\n\u2028é', "\x00nul", "\x01"])
    if kind == "int":
        return rng.choice([0, -3, 2**70])
    if kind == "float":
        return rng.choice([0.5, math.nan, math.inf, 1e16])
    if kind == "none":
        return None
    if kind == "bool":
        return rng.choice([True, False])
    if kind == "list":
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {
        rng.choice(["role", "content", "id", "function", "name", "arguments", "type", 7]): _random_value(rng, depth + 1)
    }


def _random_message(rng: random.Random) -> dict[str, Any]:
    """The builder's messages, and now and then a shape it never makes."""
    message: dict[str, Any] = {"role": rng.choice(["user", "assistant", "tool", "system"]), "content": "c\u2029"}
    for name in ("reasoningContent", "toolCallId", "model"):
        if rng.random() < 0.3:
            message[name] = rng.choice(["r", "é\x00", ""])
    if rng.random() < 0.4:
        message["toolCalls"] = [
            {"id": f"call_{i}", "function": {"name": "bash", "arguments": '{"k": "\\u0000"}'}}
            for i in range(rng.randint(0, 3))
        ]
        if rng.random() < 0.3:
            message["toolCalls"].append(_random_value(rng))
    if rng.random() < 0.5:
        message["timestamp"] = rng.choice([1_700_000_000_000, 0, True])
    if rng.random() < 0.2:
        message[rng.choice(["extra", "role", "timestamp", "content"])] = _random_value(rng)
    return message


def test_slotted_messages_match_the_generic_walk():
    """`Session.slotted` writes the builder's messages without the generic walk: the same skeleton
    and texts as `slotted_jsonl` for the builder's shapes and any other, or the same refusal."""
    rng = random.Random(21)
    for _ in range(2000):
        header = {"type": "session", "harness": "h", "reward": rng.choice([1.0, math.nan]), "id": "t"}
        session = Session("sessions/ab/t.jsonl", header, [_random_message(rng) for _ in range(rng.randint(0, 5))])
        try:
            expected = slotted_jsonl(session.lines())
        except ValueError as err:
            with pytest.raises(ValueError, match=re.escape(str(err))):
                session.slotted()
            continue
        assert session.slotted() == expected
