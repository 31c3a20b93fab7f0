"""Rows Harbor 0.25's own exporter makes with each of its `traces export` options, as golden files.

Run by hand with a Python that has Harbor installed, never by the tests (they only read the files):

    /root/.pyenv/versions/3.12.*/bin/python -m venv /tmp/harbor-venv
    /tmp/harbor-venv/bin/pip install 'harbor[huggingface]==0.25.0'
    /tmp/harbor-venv/bin/python trace_assets_tests/support/make_harbor_goldens.py

For each tree (the bundled sample run, and the golden terminus-2 trials of `golden_trials.py`:
subagents, a continuation, a timeout) and each entry of `COMBOS`, it calls
`harbor.utils.traces_utils.export_traces` and writes `data/harbor_options/<tree>/<combo>.<dataset>.jsonl.gz`,
one file per dataset Harbor returns (`main` alone, or `main` plus one per subagent kind when
subagents are kept separate). Rows are sorted by trial, source and episode number, so the files do
not depend on the order Harbor walked the folders in.

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
TREES = ("sample", "golden")
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


def main() -> None:
    os.environ.update(OFFLINE_ENV)
    sys.path.insert(0, str(PROJECT_DIR))
    from trace_assets_tests.support.golden_trials import make_golden_trials

    with tempfile.TemporaryDirectory() as folder:
        golden = Path(folder) / "trace_jobs"
        make_golden_trials(golden)
        for tree, trace_jobs in (("sample", SAMPLE_TRACE_JOBS), ("golden", golden)):
            for combo, (_, arguments) in COMBOS.items():
                _write(tree, combo, _export(trace_jobs, arguments))


if __name__ == "__main__":
    main()
