"""Text from the trial folders that attacks what it is written into: the card's Markdown, and the
session files' JSON lines (found by the property test in `dagster/test_hostile_values.py`)."""

from __future__ import annotations

import json
from pathlib import Path

from huggingface_hub import DatasetCard

from trace_assets.core.accounting import Coverage
from trace_assets.core.scope import RunScope
from trace_assets.publishing.card import CardContext, CardSettings, card_title, code_span
from trace_assets.publishing.card_facts import CardFacts, gather_facts
from trace_assets.publishing.dataset_folder import build_run_folder
from trace_assets.secret_scan.scanner import ScanOptions
from trace_assets.steps.scan import scan_run
from trace_assets.steps.sessions import staged_sessions
from trace_assets.steps.staging import RunStaging
from trace_assets.store.trace_store import TraceStore
from trace_assets_tests.support.bad_input import USER, result_json, trajectory
from trace_assets_tests.support.helpers import run_steps

RUN = "hostile-text"


def _write(traces: Path, name: str, result: dict, message: str = "ls") -> None:
    trial = traces / RUN / "trace_jobs" / name
    (trial / "agent").mkdir(parents=True)
    (trial / "result.json").write_text(json.dumps(result))
    agent = {"step_id": 2, "source": "agent", "message": message}
    (trial / "agent" / "trajectory.json").write_bytes(trajectory([USER, agent]))


def _published_card(traces: Path, tmp_path: Path) -> tuple[str, str]:
    """The run's card as published from `traces` (checked to parse as a Hub card), and its body."""
    _, coverage, _ = run_steps(TraceStore(str(traces)), RUN, tmp_path / "staging")
    staging = RunStaging(tmp_path / "staging", RunScope(RUN))
    out = tmp_path / "published"
    card = CardContext(facts=gather_facts(staging, staging.require_rows()))
    build_run_folder(out, staging.require_rows(), staging.statuses, coverage, {"verdict": "clean"}, 100, card=card)
    text = (out / "README.md").read_text()
    DatasetCard(text, ignore_metadata_errors=False)
    return text, text.split("\n---\n", 1)[1]


def test_names_from_result_json_cannot_break_the_cards_markdown(tmp_path):
    traces = tmp_path / "traces"
    base = json.loads(result_json("x__1"))
    hostile = {
        "a__1": {"agent_info": {"name": "agent\n## Injected heading", "model_info": {"name": "m\r\n---\nlicense: x"}}},
        "b__2": {
            "agent_info": {"name": "`tick` ``two``", "model_info": {"name": "<script>alert(1)</script> | {{ x }}"}}
        },
        "c__3": {"exception_info": {"exception_type": "Boom\u2028\x85" + "E" * 200}, "verifier_result": None},
    }
    for name, override in hostile.items():
        _write(traces, name, {**base, "config": {"job_id": "j"}, "trial_name": name, **override})
    for index in range(25):  # many distinct models: the card names the first 20
        model = {"agent_info": {"name": "a", "model_info": {"name": f"model-{index}"}}}
        _write(traces, f"many__{index}", {**base, "trial_name": f"many__{index}", **model})
    text, body = _published_card(traces, tmp_path)
    assert "---" not in body.splitlines() and "## Injected heading" not in body.splitlines()
    assert [line for line in body.splitlines() if line.startswith("#")][1] == "## Provenance"
    assert "`agent\\x0a## Injected heading` (1)" in text and "`m\\x0d\\x0a---\\x0alicense: x` (1)" in text
    assert "``` `tick` ``two`` ```" in text and "`<script>alert(1)</script> | {{ x }}` (1)" in text
    assert "`Boom\\u2028\\x85" + "E" * 94 + "…` (1)" in text
    assert " and 8 more (8)" in text  # 28 models: 20 named, 8 summed


def test_the_title_names_a_served_model_only_when_its_name_is_plain():
    def title(model: str, settings: CardSettings | None = None) -> str:
        context = CardContext(settings or CardSettings(), CardFacts(models={model: 1}, steps=[25]))
        return card_title(Coverage("run"), context)

    assert title("Qwen/Qwen3-8B") == "run step 25 traces of Qwen/Qwen3-8B"
    assert title("m\n# heading") == title("<b>x</b>") == title("`x`") == "run step 25 traces"
    assert title("x", CardSettings(model=" Qwen/A\nB ")) == "run step 25 traces of Qwen/A B"
    assert title("x", CardSettings(pretty_name="My\n---\ntraces")) == "My --- traces"


HOSTILE_MESSAGE = "ok\n```\n## Injected heading\n---\nlicense: x\n<script>alert(1)</script> ${x}\u2028\x85 " + "`" * 9


def test_the_example_row_holds_hostile_text_inside_its_block(tmp_path):
    traces = tmp_path / "traces"
    for name in ("a__1", "b__2"):  # the first row (by trial name) is the hostile one
        _write(traces, name, json.loads(result_json(name)), HOSTILE_MESSAGE if name == "a__1" else "ls")
    text, body = _published_card(traces, tmp_path)
    headings = [line for line in body.splitlines() if line.startswith("#")]
    assert "## Injected heading" not in headings and "---" not in body.splitlines()
    assert headings[headings.index("## Example row") + 1] == "## Rewards and turns"
    example = body.split("## Example row\n\n", 1)[1].split("\n\n## ", 1)[0]
    fence = "`" * 10  # one more than the message's longest run of backticks
    lines = example.split("\n")
    assert lines[2] == fence + "json" and lines[-1] == fence and fence not in "\n".join(lines[3:-1])
    row = json.loads("\n".join(lines[3:-1]))
    assert row["trial_name"] == "a__1" and row["conversations"][-1]["content"] == HOSTILE_MESSAGE
    assert "\\u2028\\u0085" in example and "\u2028" not in example  # JSON escapes, no raw separators


def test_a_code_span_holds_any_text_on_one_line():
    assert code_span("terminus-2") == "`terminus-2`"
    assert code_span("`a`") == "`` `a` ``" and code_span("a``b") == "```a``b```"
    assert code_span("x\ny\u2029") == "`x\\x0ay\\u2029`"
    assert code_span("z" * 101) == "`" + "z" * 100 + "…`"


def test_line_separators_in_a_message_do_not_break_the_session_scan(tmp_path):
    traces = tmp_path / "traces"
    _write(traces, "sep__1", json.loads(result_json("sep__1")), "a\u2028b\u2029c\x85d\x1ce\x1df\x1eg\x0bh\x0ci")
    run_steps(TraceStore(str(traces)), RUN, tmp_path / "staging", sessions=True)
    staging = RunStaging(tmp_path / "staging", RunScope(RUN))
    report = scan_run(staging.require_rows(), RUN, ScanOptions(), staged_sessions(staging))
    assert report["sessions_scanned"] == 1
