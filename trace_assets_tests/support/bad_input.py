"""A run whose trial folders are broken in every way we know of, each with the reason it must get."""

from __future__ import annotations

import json
from pathlib import Path

RUN_ID = "bad-input-run"


def result_json(trial_name: str, reward: object = 1.0) -> bytes:
    return json.dumps(
        {
            "task_name": trial_name.split("__")[0],
            "trial_name": trial_name,
            "config": {"agent": {"name": "terminus-2", "model_name": "hosted_vllm/m"}, "job_id": "job-1"},
            "agent_info": {
                "name": "terminus-2",
                "version": "2",
                "model_info": {"name": "m", "provider": "hosted_vllm"},
            },
            "verifier_result": {"rewards": {"reward": reward}},
            "exception_info": None,
            "started_at": "2026-07-25T16:00:00Z",
        }
    ).encode()


def raw_result(trial_name: str, reward_json: str) -> bytes:
    """result.json with the reward spliced in as raw JSON text (numbers json.dumps cannot write)."""
    return result_json(trial_name, reward="REWARD").replace(b'"REWARD"', reward_json.encode())


def trajectory(steps: list[dict], **extra: object) -> bytes:
    return json.dumps(
        {"schema_version": "ATIF-v1.5", "agent": {"name": "terminus-2", "model_name": "m"}, "steps": steps, **extra}
    ).encode()


USER = {"step_id": 1, "source": "user", "message": "Solve the task."}
AGENT = {"step_id": 2, "source": "agent", "message": "ls", "observation": {"results": [{"content": "file.txt"}]}}
GOOD = trajectory([USER, AGENT])

# trial folder -> (files relative to it, expected reason or None for exported)
CASES: dict[str, tuple[dict[str, bytes], str | None]] = {
    "unscored__a1": ({"config.json": b"{}", "trial.log": b"started"}, "no_result_json"),
    "only-agent-dir__a2": ({"agent/episode-0/prompt.txt": b"prompt"}, "no_result_json"),
    "empty-result__b1": ({"result.json": b""}, "invalid_result_json"),
    "truncated-result__b2": ({"result.json": result_json("truncated-result__b2")[:57]}, "invalid_result_json"),
    "non-utf8-result__b3": ({"result.json": b'{"trial_name": "\xff\xfe"}'}, "invalid_result_json"),
    "list-result__b4": ({"result.json": b"[1, 2]"}, "invalid_result_json"),
    "no-agent-name__b5": ({"result.json": b'{"trial_name": "x", "config": "not a dict"}'}, "invalid_result_json"),
    "no-trajectory__c1": ({"result.json": result_json("no-trajectory__c1"), "agent/setup.log": b"x"}, "no_trajectory"),
    "empty-trajectory__d1": (
        {"result.json": result_json("empty-trajectory__d1"), "agent/trajectory.json": b"  \n"},
        "invalid_trajectory",
    ),
    "truncated-trajectory__d2": (
        {"result.json": result_json("truncated-trajectory__d2"), "agent/trajectory.json": GOOD[:40]},
        "invalid_trajectory",
    ),
    "non-utf8-trajectory__d3": (
        {
            "result.json": result_json("non-utf8-trajectory__d3"),
            "agent/trajectory.json": GOOD.replace(b"ls", b"l\xc3\x28"),
        },
        "invalid_trajectory",
    ),
    "steps-not-list__d4": (
        {"result.json": result_json("steps-not-list__d4"), "agent/trajectory.json": b'{"steps": "many"}'},
        "invalid_trajectory",
    ),
    "step-not-object__d5": (
        {"result.json": result_json("step-not-object__d5"), "agent/trajectory.json": b'{"steps": [1, 2]}'},
        "invalid_trajectory",
    ),
    "bad-observation__d6": (
        {
            "result.json": result_json("bad-observation__d6"),
            "agent/trajectory.json": trajectory([USER, {**AGENT, "observation": "text"}]),
        },
        "invalid_trajectory",
    ),
    "bad-tool-calls__d7": (
        {
            "result.json": result_json("bad-tool-calls__d7"),
            "agent/trajectory.json": trajectory([USER, {**AGENT, "tool_calls": "ls"}]),
        },
        "invalid_trajectory",
    ),
    "truncated-continuation__d8": (
        {
            "result.json": result_json("truncated-continuation__d8"),
            "agent/trajectory.json": trajectory([USER, AGENT], continued_trajectory_ref="trajectory.cont-1.json"),
            "agent/trajectory.cont-1.json": GOOD[:30],
        },
        "invalid_trajectory",
    ),
    "continuation-loop__d9": (
        {
            "result.json": result_json("continuation-loop__d9"),
            "agent/trajectory.json": trajectory([USER, AGENT], continued_trajectory_ref="trajectory.cont-1.json"),
            "agent/trajectory.cont-1.json": trajectory([USER, AGENT], continued_trajectory_ref="trajectory.json"),
        },
        "invalid_trajectory",
    ),
    "json-null-trajectory__d10": (
        {"result.json": result_json("json-null-trajectory__d10"), "agent/trajectory.json": b"null"},
        "invalid_trajectory",
    ),
    "no-turns__e1": (
        {"result.json": result_json("no-turns__e1"), "agent/trajectory.json": trajectory([USER])},
        "no_agent_turns",
    ),
    "copied-turns-only__e2": (
        {
            "result.json": result_json("copied-turns-only__e2"),
            "agent/trajectory.json": trajectory([USER, {**AGENT, "is_copied_context": True}]),
        },
        "no_agent_turns",
    ),
    "image__f1": (
        {
            "result.json": result_json("image__f1"),
            "agent/trajectory.json": trajectory(
                [
                    USER,
                    {
                        **AGENT,
                        "observation": {"results": [{"content": [{"type": "image", "source": {"path": "a.png"}}]}]},
                    },
                ]
            ),
        },
        "multimodal",
    ),
    "odd-reward__g1": (
        {"result.json": result_json("odd-reward__g1", reward="pass"), "agent/trajectory.json": GOOD},
        None,
    ),
    "non-utf8-verifier__g2": (
        {
            "result.json": result_json("non-utf8-verifier__g2"),
            "agent/trajectory.json": GOOD,
            "verifier/test-stdout.txt": b"ok \xff\n",
            "verifier/test-stderr.txt": b"warn\n",
        },
        None,
    ),
    "step-25/nested__g3": ({"result.json": result_json("nested__g3"), "agent/trajectory.json": GOOD}, None),
    "broken-subagent__g4": (
        {
            "result.json": result_json("broken-subagent__g4"),
            "agent/trajectory.json": GOOD,
            "agent/trajectory.summarization-1-summary.json": b"{not json",
        },
        None,
    ),
}
JOB_LEVEL_FILES = {"result.json": b'{"stats": {}}', "config.json": b"{}"}  # a job folder, not a trial


def write_bad_input_run(traces_root: Path) -> Path:
    trace_jobs = traces_root / RUN_ID / "trace_jobs"
    for folder, (files, _) in CASES.items():
        for relative, data in files.items():
            path = trace_jobs / folder / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    for relative, data in JOB_LEVEL_FILES.items():
        (trace_jobs / relative).write_bytes(data)
    return trace_jobs
