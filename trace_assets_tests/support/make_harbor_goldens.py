"""Rows Harbor's own exporter makes with each of its `traces export` options, as golden files.

Run by hand with a Python that has Harbor installed, never by the tests (they only read the files):

    /root/.pyenv/versions/3.12.*/bin/python -m venv /tmp/harbor-venv
    /tmp/harbor-venv/bin/pip install 'harbor[huggingface]==0.26.0'
    /tmp/harbor-venv/bin/python trace_assets_tests/support/make_harbor_goldens.py

The files were last made with Harbor 0.26.0, whose `harbor/utils/traces_utils.py` is byte for byte
0.25.0's: the `sample` and `golden` files came out unchanged (the rows are 0.25's and 0.26's alike).

First it writes the `job` tree, `data/harbor_job/trace_jobs/`, with Harbor's own models and agent
converters (`JOB_TRIALS`): a job folder as `harbor run` leaves it, its `result.json` a `JobResult`
whose `stats` list step-level exceptions in `exception_stats` and valid rewards in `reward_stats`
(a trial whose first step raised AgentTimeoutError and whose last step scored 1.0 is listed in both:
Harbor's `result` is the exception), each trial's `result.json` a `TrialResult` (with 0.26's
`reward_valid`), and trials of the fx, fx-dev and opencode-v2 agents, whose trajectories Harbor's own
`convert_fx_session` and OpenCode v2 converter made from small native logs.

Then for each tree (the bundled sample run, the golden terminus-2 trials of `golden_trials.py`:
subagents, a continuation, a timeout; and the job tree) and each entry of `COMBOS`, it calls
`harbor.utils.traces_utils.export_traces` and writes `data/harbor_options/<tree>/<combo>.<dataset>.jsonl.gz`,
one file per dataset Harbor returns (`main` alone, or `main` plus one per subagent kind when
subagents are kept separate). Rows are sorted by trial, source and episode number, so the files do
not depend on the order Harbor walked the folders in.

When Harbor releases: install the new version in its own venv as above (never in the project's),
run this script, and read `git diff trace_assets_tests/data`. No diff: the new version's rows are
the ones we make; say so in README's Harbor section and this docstring. A diff: the test
`unit/test_harbor_options.py` names the rows that differ; port the change (or record it as a
difference) before committing the files. A model change that breaks `_write_job_tree` is a change
in what Harbor writes: port that too. Compare `traces_utils.py` between the versions first
(`pip download harbor==X --no-deps`): it is the whole of the row rules.

Each combo pairs this project's command-line flags (Harbor's own flag names) with the
`export_traces` arguments Harbor's CLI passes for them; the tests run our pipeline with the flags
and compare its rows with Harbor's.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

PROJECT_DIR = Path(__file__).resolve().parent.parent.parent
OUT = PROJECT_DIR / "trace_assets_tests" / "data" / "harbor_options"
SAMPLE_TRACE_JOBS = PROJECT_DIR / "sample_traces" / "rl-sample-run" / "trace_jobs"

# Our defaults: the last episode, instruction and verifier output included, no subagent rows.
HARBOR_DEFAULTS: dict[str, Any] = {
    "episodes": "last",
    "to_sharegpt": False,
    "success_filter": None,
    "include_instruction": True,
    "include_verifier_output": True,
    "export_subagents": False,
    "merge_subagents": True,
}

# name -> (our flags, Harbor's export_traces arguments over HARBOR_DEFAULTS)
COMBOS: dict[str, tuple[list[str], dict[str, Any]]] = {
    "last": ([], {}),
    "all": (["--episodes", "all"], {"episodes": "all"}),
    "sharegpt": (["--sharegpt"], {"to_sharegpt": True}),
    "success": (["--filter", "success"], {"success_filter": "success"}),
    "failure": (["--filter", "failure"], {"success_filter": "failure"}),
    "no-instruction": (["--no-instruction-metadata"], {"include_instruction": False}),
    "no-verifier": (["--no-verifier-metadata"], {"include_verifier_output": False}),
    "no-metadata": (
        ["--no-instruction-metadata", "--no-verifier-metadata"],
        {"include_instruction": False, "include_verifier_output": False},
    ),
    "merged": (["--subagents", "merged"], {"export_subagents": True}),
    "separate": (["--subagents", "separate"], {"export_subagents": True, "merge_subagents": False}),
    "all-merged-sharegpt": (
        ["--episodes", "all", "--subagents", "merged", "--sharegpt"],
        {"episodes": "all", "export_subagents": True, "to_sharegpt": True},
    ),
    "all-separate-failure-no-instruction": (
        ["--episodes", "all", "--subagents", "separate", "--filter", "failure", "--no-instruction-metadata"],
        {
            "episodes": "all",
            "export_subagents": True,
            "merge_subagents": False,
            "success_filter": "failure",
            "include_instruction": False,
        },
    ),
    "success-merged-no-verifier-sharegpt": (
        ["--filter", "success", "--subagents", "merged", "--no-verifier-metadata", "--sharegpt"],
        {"success_filter": "success", "export_subagents": True, "include_verifier_output": False, "to_sharegpt": True},
    ),
}
TREES = ("sample", "golden", "job")
# As the benchmark runs Harbor: no network for LiteLLM's price list or the Hub.
OFFLINE_ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}


def row_order(row: dict[str, Any]) -> tuple[str, str, int]:
    return (row["trial_name"], row.get("trace_source", ""), int(row["episode"].removeprefix("episode-")))


def golden_path(tree: str, combo: str, dataset: str) -> Path:
    return OUT / tree / f"{combo}.{dataset}.jsonl.gz"


def read_golden(tree: str, combo: str) -> dict[str, list[dict[str, Any]]]:
    """Each dataset Harbor returned for the combo (`main`, then subagent kinds), its rows in order."""
    datasets = {}
    for path in sorted(OUT.joinpath(tree).glob(f"{combo}.*.jsonl.gz")):
        dataset = path.name[len(combo) + 1 : -len(".jsonl.gz")]
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            datasets[dataset] = [json.loads(line) for line in handle if line.strip()]
    return datasets


def _export(trace_jobs: Path, arguments: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    from harbor.utils.traces_utils import export_traces

    exported = export_traces(trace_jobs, use_rich_progress=False, **{**HARBOR_DEFAULTS, **arguments})
    datasets = exported if isinstance(exported, dict) else {"main": exported}
    return {name: sorted(dataset, key=row_order) for name, dataset in datasets.items()}


def _write(tree: str, combo: str, datasets: dict[str, list[dict[str, Any]]]) -> None:
    for old in OUT.joinpath(tree).glob(f"{combo}.*.jsonl.gz"):
        old.unlink()
    for dataset, rows in datasets.items():
        path = golden_path(tree, combo, dataset)
        path.parent.mkdir(parents=True, exist_ok=True)
        # mtime=0: the same rows give the same bytes, so regenerating leaves git clean
        with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as handle:
            for row in rows:
                handle.write((json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8"))
        print(f"wrote {path.relative_to(PROJECT_DIR)}: {len(rows)} rows", file=sys.stderr)


# The job tree's trials: name -> (agent, model, trajectory, outcome, listed in the job's stats).
# A trajectory is a golden one's prefix, or `fx`/`opencode-v2` (made by that agent's converter); an
# outcome is a reward, an exception type, `exception type + reward` for both on the trial, or
# `step exception > reward` for a first step that raised and a last step that scored.
JOB_TRIALS: dict[str, tuple[str, str, str, str, bool]] = {
    "hello-world-timeout-then-pass__job": (
        "terminus-2",
        "openai/gpt-4o",
        "hello-world-timeout",
        "AgentTimeoutError > 1.0",
        True,
    ),
    "hello-world-pass__job": ("terminus-2", "openai/gpt-4o", "hello-world-invalid-json", "1.0", True),
    "hello-world-fail__job": ("terminus-2", "openai/gpt-4o", "hello-world-invalid-json", "0.0", True),
    "hello-world-api-error__job": ("terminus-2", "openai/gpt-4o", "hello-world-invalid-json", "ApiError + 1.0", True),
    "hello-world-late__job": ("terminus-2", "openai/gpt-4o", "hello-world-invalid-json", "0.5", False),
    "hello-world-fx__job": ("fx", "anthropic/claude-sonnet-4-5", "fx", "1", True),
    "hello-world-fx-dev__job": ("fx-dev", "anthropic/claude-sonnet-4-5", "fx", "0", True),
    "hello-world-opencode-v2__job": (
        "opencode-v2",
        "openai/gpt-4o",
        "opencode-v2",
        "ContextWindowExceededError + 1.0",
        True,
    ),
}
JOB_TREE = PROJECT_DIR / "trace_assets_tests" / "data" / "harbor_job" / "trace_jobs"
INSTRUCTION = "Create a file called hello.txt with 'Hello, world!' in it."


def _fx_trajectory(agent: str, model: str, folder: Path) -> dict[str, Any]:
    """What Harbor's fx (and fx-dev) agent writes from a session log of one turn."""
    from harbor.agents.installed.fx import convert_fx_session

    log = folder / "sessions" / "v2" / "ses-fx" / "log.jsonl"
    log.parent.mkdir(parents=True)
    at = 1767225600000
    records = [
        {"kind": "session_created", "id": "ses-fx", "role": "root", "ts": at},
        {"kind": "turn_started", "ts": at + 1},
        {"kind": "item", "type": "user", "data": {"text": INSTRUCTION, "work_id": "w1"}, "ts": at + 2},
        {"kind": "set", "key": "usage", "value": {"input_tokens": 120, "output_tokens": 30}, "ts": at + 3},
        {"kind": "item", "type": "assistant", "data": {"text": "I'll write the file."}, "ts": at + 4},
        {
            "kind": "item",
            "type": "tool_call",
            "data": {"call_id": "c1", "tool_name": "bash", "arguments_json": '{"command": "echo Hello > hello.txt"}'},
            "ts": at + 5,
        },
        {"kind": "item", "type": "tool_result", "data": {"call_id": "c1", "preview": "", "status": "ok"}, "ts": at + 6},
        {"kind": "set", "key": "usage", "value": {"input_tokens": 260, "output_tokens": 41}, "ts": at + 7},
        {"kind": "item", "type": "assistant", "data": {"text": "Done: hello.txt is written."}, "ts": at + 8},
        {"kind": "turn_committed", "ts": at + 9},
    ]
    log.write_text("".join(json.dumps(record) + "\n" for record in records))
    trajectory = convert_fx_session(log.parents[1], agent_name=agent, model_name=model, version="1.0.0")
    assert trajectory is not None
    return trajectory.to_json_dict()


def _opencode_v2_trajectory(model: str, folder: Path) -> dict[str, Any]:
    """What Harbor's opencode-v2 agent writes from its `run --format=json` events."""
    from harbor.agents.installed.opencode_v2 import OpenCodeV2

    at = 1767225600000
    events = [
        {"type": "user", "timestamp": at, "sessionID": "ses_1", "parts": [{"type": "text", "text": INSTRUCTION}]},
        {"type": "step_start", "timestamp": at + 1, "sessionID": "ses_1", "part": {}},
        {"type": "text", "timestamp": at + 2, "sessionID": "ses_1", "part": {"type": "text", "text": "Writing it."}},
        {
            "type": "tool_use",
            "timestamp": at + 3,
            "sessionID": "ses_1",
            "part": {
                "type": "tool",
                "tool": "bash",
                "callID": "c1",
                "state": {"input": {"command": "echo Hello > hello.txt"}, "output": ""},
            },
        },
        {"type": "step_finish", "timestamp": at + 4, "sessionID": "ses_1", "part": {"tokens": {"input": 90}}},
        {"type": "text", "timestamp": at + 5, "sessionID": "ses_1", "part": {"type": "text", "text": "Done."}},
    ]
    trajectory = OpenCodeV2(logs_dir=folder, model_name=model)._convert_events_to_trajectory(events)
    assert trajectory is not None
    return trajectory.to_json_dict()


def _trial_result(name: str, agent: str, model: str, outcome: str) -> Any:
    """Harbor's `TrialResult` of a job trial, as its models make it."""
    import uuid
    from datetime import UTC, datetime

    from harbor.models.task.id import LocalTaskId
    from harbor.models.trial.config import AgentConfig, TaskConfig, TrialConfig
    from harbor.models.trial.result import AgentInfo, ExceptionInfo, ModelInfo, StepResult, TrialResult
    from harbor.models.verifier.result import VerifierResult

    at = datetime(2026, 1, 1, tzinfo=UTC)

    def exception(kind: str) -> ExceptionInfo:
        return ExceptionInfo(exception_type=kind, exception_message=kind, exception_traceback="", occurred_at=at)

    def rewards(text: str) -> VerifierResult:
        return VerifierResult(rewards={"reward": float(text) if "." in text else int(text)})

    provider, _, model_name = model.partition("/")
    fields: dict[str, Any] = {}
    if " > " in outcome:  # a first step that raised, a last step that scored
        raised, scored = outcome.split(" > ")
        fields["step_results"] = [
            StepResult(step_name="solve", exception_info=exception(raised)),
            StepResult(step_name="check", verifier_result=rewards(scored)),
        ]
        fields["verifier_result"] = rewards(scored)
    elif " + " in outcome:
        raised, scored = outcome.split(" + ")
        fields["exception_info"] = exception(raised)
        fields["verifier_result"] = rewards(scored)
    else:
        fields["verifier_result"] = rewards(outcome)
    return TrialResult(
        id=uuid.uuid5(uuid.NAMESPACE_URL, name),
        task_name="hello-world",
        trial_name=name,
        trial_uri=f"file:///jobs/golden-job/{name}",
        task_id=LocalTaskId(path=Path("tasks/hello-world")),
        task_checksum="0" * 64,
        config=TrialConfig(
            task=TaskConfig(path=Path("tasks/hello-world")),
            trial_name=name,
            agent=AgentConfig(name=agent, model_name=model),
            job_id=uuid.uuid5(uuid.NAMESPACE_URL, "golden-job"),
        ),
        agent_info=AgentInfo(name=agent, version="1.0.0", model_info=ModelInfo(name=model_name, provider=provider)),
        started_at=at,
        finished_at=at,
        **fields,
    )


def _write_job_tree(trace_jobs: Path) -> None:
    """The job folder `harbor run` leaves, written by Harbor's models: `JOB_TRIALS` and its `result.json`."""
    import shutil
    import uuid
    from datetime import UTC, datetime

    from harbor.models.job.result import JobResult, JobStats
    from harbor.utils.trajectory_utils import format_trajectory_json

    from trace_assets_tests.support.golden_trials import DATA as GOLDEN_DATA

    shutil.rmtree(trace_jobs, ignore_errors=True)
    listed = []
    for name, (agent, model, trajectory, outcome, in_stats) in JOB_TRIALS.items():
        trial = _trial_result(name, agent, model, outcome)
        agent_dir = trace_jobs / name / "agent"
        agent_dir.mkdir(parents=True)
        with tempfile.TemporaryDirectory() as logs:
            if trajectory == "fx":
                atif = _fx_trajectory(agent, model, Path(logs))
            elif trajectory == "opencode-v2":
                atif = _opencode_v2_trajectory(model, Path(logs))
            else:
                atif = json.loads((GOLDEN_DATA / f"{trajectory}.trajectory.json").read_text())
        (agent_dir / "trajectory.json").write_text(format_trajectory_json(atif))
        (trace_jobs / name / "result.json").write_text(trial.model_dump_json(indent=4))
        (trace_jobs / name / "verifier").mkdir()
        (trace_jobs / name / "verifier" / "test-stdout.txt").write_text(f"{name}: {outcome}\n")
        if in_stats:
            listed.append(trial)
    at = datetime(2026, 1, 1, tzinfo=UTC)
    job = JobResult(
        id=uuid.uuid5(uuid.NAMESPACE_URL, "golden-job"),
        started_at=at,
        finished_at=at,
        n_total_trials=len(JOB_TRIALS),
        stats=JobStats.from_trial_results(listed, n_total_trials=len(JOB_TRIALS)),
    )
    # as Harbor's Job._write_job_result writes it at the end of a run
    (trace_jobs / "result.json").write_text(job.model_dump_json(indent=4, exclude={"trial_results"}))
    print(f"wrote {trace_jobs.relative_to(PROJECT_DIR)}: {len(JOB_TRIALS)} trials and the job's result.json")


def main() -> None:
    os.environ.update(OFFLINE_ENV)
    sys.path.insert(0, str(PROJECT_DIR))
    from trace_assets_tests.support.golden_trials import make_golden_trials

    _write_job_tree(JOB_TREE)
    with tempfile.TemporaryDirectory() as folder:
        golden = Path(folder) / "trace_jobs"
        make_golden_trials(golden)
        for tree, trace_jobs in (("sample", SAMPLE_TRACE_JOBS), ("golden", golden), ("job", JOB_TREE)):
            for combo, (_, arguments) in COMBOS.items():
                _write(tree, combo, _export(trace_jobs, arguments))


if __name__ == "__main__":
    main()
