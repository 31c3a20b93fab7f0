"""Harbor's golden ATIF trajectories laid out as trial folders, for this project and for Harbor itself.

`make_golden_trials` is used by the tests; run this file with a Python that has Harbor installed
(`python trace_assets_tests/support/golden_trials.py`) to regenerate the rows Harbor's own
exporter makes of the same folders, in `data/harbor_golden/expected-*.jsonl` (0.25.0 and 0.26.0
make the same files). `make_job_trials` lays out the job folder `make_harbor_goldens.py` writes.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data" / "harbor_golden"
JOB_TREE = DATA.parent / "harbor_job" / "trace_jobs"  # written by Harbor 0.26's models (make_harbor_goldens.py)
GOLDEN_TRIALS = {
    "hello-world-context-summarization": "1.0",
    "hello-world-context-summarization-linear-history": "1.0",
    "hello-world-invalid-json": "0.0",
    "hello-world-timeout": "AgentTimeoutError",
}


def _result_json(trial_name: str, outcome: str) -> dict:
    exception = None
    rewards = None
    if outcome[0].isdigit():
        rewards = {"reward": float(outcome)}
    else:
        exception = {
            "exception_type": outcome,
            "exception_message": "agent timed out",
            "exception_traceback": "",
            "occurred_at": "2026-01-01T00:10:00Z",
        }
    return {
        "task_name": "hello-world",
        "trial_name": trial_name,
        "trial_uri": f"file:///trials/{trial_name}",
        "config": {"agent": {"name": "terminus-2", "model_name": "openai/gpt-4o"}, "job_id": "golden-job"},
        "agent_info": {
            "name": "terminus-2",
            "version": "2.0.0",
            "model_info": {"name": "gpt-4o", "provider": "openai"},
        },
        "verifier_result": None if rewards is None else {"rewards": rewards},
        "exception_info": exception,
        "started_at": "2026-01-01T00:00:00Z",
    }


def make_golden_trials(trace_jobs: Path) -> list[str]:
    """One trial folder per golden trajectory set; returns the trial names."""
    names = []
    for prefix, outcome in GOLDEN_TRIALS.items():
        trial = f"{prefix}__golden"
        agent_dir = trace_jobs / trial / "agent"
        agent_dir.mkdir(parents=True)
        for source in DATA.glob(f"{prefix}.trajectory*.json"):
            shutil.copyfile(source, agent_dir / source.name[len(prefix) + 1 :])
        (trace_jobs / trial / "result.json").write_text(json.dumps(_result_json(trial, outcome)))
        verifier = trace_jobs / trial / "verifier"
        verifier.mkdir()
        (verifier / "test-stdout.txt").write_text(f"{prefix}: 1 passed\n")
        names.append(trial)
    return names


def make_job_trials(trace_jobs: Path) -> list[str]:
    """The Harbor job folder of `make_harbor_goldens.JOB_TRIALS` (its `result.json` a JobResult with
    stats), as `trace_jobs`; returns the trial names."""
    shutil.copytree(JOB_TREE, trace_jobs)
    return sorted(path.name for path in trace_jobs.iterdir() if path.is_dir())


def _harbor_rows(trace_jobs: Path, subagents: bool) -> list[dict]:
    from harbor.utils.traces_utils import export_traces

    dataset = export_traces(
        trace_jobs,
        episodes="last",
        export_subagents=subagents,
        include_instruction=True,
        include_verifier_output=True,
        use_rich_progress=False,
    )
    rows = list(dataset)
    return sorted(rows, key=lambda r: (r["trial_name"], r.get("trace_source", "")))


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        trace_jobs = Path(folder) / "trace_jobs"
        make_golden_trials(trace_jobs)
        for subagents in (False, True):
            out = DATA / f"expected-{'subagents' if subagents else 'main'}.jsonl"
            with out.open("w") as handle:
                for row in _harbor_rows(trace_jobs, subagents):
                    handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            print(f"wrote {out}", file=sys.stderr)
