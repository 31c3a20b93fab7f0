"""A run whose trial folders attack the exporter, each with the status it must end in.

What a policy under training can leave in `agent/` and `verifier/` (harness copies keep links
as links): symbolic links to files and folders inside and outside the traces root, to
`/proc/self/environ` and `/etc/passwd`, loops, FIFOs, integers no float holds, lone surrogates,
nesting deeper than any parser goes, names that are not UTF-8, names full of glob characters.
Files outside the root hold `MARKER`: no byte of them may reach staging or the published folder.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from trace_assets_tests.support.bad_input import GOOD, USER, raw_result, result_json, trajectory

RUN_ID = "hostile-run"
MARKER = "HOSTILE-OUTSIDE-MARKER-4b1d"
OUTSIDE_TRAJECTORY = trajectory([{**USER, "message": MARKER}, {"step_id": 2, "source": "agent", "message": MARKER}])


@dataclass(frozen=True)
class Case:
    """A trial folder: its regular files, its links (path -> target), FIFOs, and what it must end as."""

    files: dict[str, bytes]
    reason: str | None  # None: exported
    links: dict[str, str] = field(default_factory=dict)  # "" for the trial folder itself
    fifos: tuple[str, ...] = ()
    skipped: int = 0  # entries the listing must count and not read
    relative_links: bool = False  # write the links' targets relative to the link

    @property
    def on_s3(self) -> bool:
        """S3 cannot hold links or FIFOs."""
        return not (self.links or self.fifos)


def _good(name: str, **extra: bytes) -> dict[str, bytes]:
    return {"result.json": result_json(name), "agent/trajectory.json": GOOD, **extra}


def cases(outside: Path) -> dict[str, Case]:
    """Trial folders by relative path; `outside` is a folder beside the traces root."""
    deep_call = {
        "step_id": 2,
        "source": "agent",
        "message": "x",
        "tool_calls": [{"function_name": "f", "arguments": "DEEP"}],
    }
    surrogate_step = {"step_id": 2, "source": "agent", "message": "SURROGATE"}
    return {
        "good__a1": Case(_good("good__a1"), None),
        "environ-stderr__l1": Case(
            _good("environ-stderr__l1"), "unsafe_link", {"verifier/test-stderr.txt": "/proc/self/environ"}, skipped=1
        ),
        "passwd-result__l2": Case(
            {"agent/trajectory.json": GOOD}, "unsafe_link", {"result.json": "/etc/passwd"}, skipped=1
        ),
        "outside-trajectory__l3": Case(
            {"result.json": result_json("outside-trajectory__l3")},
            "unsafe_link",
            {"agent/trajectory.json": str(outside / "trajectory.json")},
            skipped=1,
            relative_links=True,
        ),
        "outside-continuation__l4": Case(
            _good(
                "outside-continuation__l4",
                **{"agent/trajectory.json": trajectory([USER], continued_trajectory_ref="trajectory.cont-1.json")},
            ),
            "unsafe_link",
            {"agent/trajectory.cont-1.json": str(outside / "trajectory.json")},
            skipped=1,
            relative_links=True,
        ),
        "linked-agent-dir__l5": Case(
            {"result.json": result_json("linked-agent-dir__l5")}, "unsafe_link", {"agent": str(outside)}, skipped=1
        ),
        "self-loop__l6": Case(
            {"result.json": result_json("self-loop__l6")},
            "unsafe_link",
            {"agent/trajectory.json": "trajectory.json"},
            skipped=1,
        ),
        "linked-trial__l7": Case({}, "unsafe_link", {"": str(outside / "trial")}, skipped=1),
        "inside-link__l8": Case(
            {"result.json": result_json("inside-link__l8")},
            "unsafe_link",
            {"agent/trajectory.json": "../../good__a1/agent/trajectory.json"},
            skipped=1,
        ),
        "harmless-link__l9": Case(
            _good("harmless-link__l9"), None, {"agent/notes.txt": "/etc/passwd", "loop": "loop"}, skipped=2
        ),
        "fifo-stdout__f1": Case(_good("fifo-stdout__f1"), "not_a_file", fifos=("verifier/test-stdout.txt",), skipped=1),
        "fifo-elsewhere__f2": Case(_good("fifo-elsewhere__f2"), None, fifos=("agent/pipe",), skipped=1),
        "reward-401-digits__n1": Case(
            {"result.json": raw_result("reward-401-digits__n1", "9" * 401), "agent/trajectory.json": GOOD}, None
        ),
        "reward-5000-digits__n2": Case(
            {"result.json": raw_result("reward-5000-digits__n2", "7" * 5000), "agent/trajectory.json": GOOD}, None
        ),
        "surrogate-result__s1": Case(
            {
                "result.json": result_json("surrogate-result__s1").replace(b'"job-1"', b'"job-\\ud800"'),
                "agent/trajectory.json": GOOD,
            },
            None,
        ),
        "surrogate-message__s2": Case(
            {
                "result.json": result_json("surrogate-message__s2"),
                "agent/trajectory.json": trajectory([USER, surrogate_step]).replace(b"SURROGATE", b"a\\udc00b"),
            },
            None,
        ),
        "deep-tool-call__d1": Case(
            {
                "result.json": result_json("deep-tool-call__d1"),
                "agent/trajectory.json": trajectory([USER, deep_call]).replace(b'"DEEP"', b"[" * 1000 + b"]" * 1000),
            },
            "invalid_trajectory",
        ),
        "deep-message__d2": Case(
            {
                "result.json": result_json("deep-message__d2"),
                "agent/trajectory.json": b'{"steps": [{"source": "agent", "message": '
                + b"[" * 5000
                + b"]" * 5000
                + b"}]}",
            },
            "invalid_trajectory",
        ),
        "trial[1]*glob__g1": Case(_good("trial[1]*glob__g1"), None),
        "trial?{a,b}__g2": Case(_good("trial?{a,b}__g2"), None),
        "undecodable-file__u1": Case(_good("undecodable-file__u1"), None, skipped=1),
    }


UNDECODABLE_TRIAL = b"bad-\xff-name__u2"  # a trial folder whose name is not UTF-8
UNDECODABLE_FILE = b"agent/\xfe-notes.txt"  # inside undecodable-file__u1


def expected_statuses(outside: Path) -> dict[str, tuple[str | None, int]]:
    """trial_dir -> (reason or None, skipped), as trials.parquet must show them on a local root."""
    expected = {folder: (case.reason, case.skipped) for folder, case in cases(outside).items()}
    expected["bad-\\xff-name__u2"] = ("undecodable_name", 1)
    return expected


def write_outside(outside: Path) -> None:
    """What the links point at: a trajectory, and a whole trial folder, both holding MARKER."""
    (outside / "trial" / "agent").mkdir(parents=True)
    (outside / "trajectory.json").write_bytes(OUTSIDE_TRAJECTORY)
    (outside / "trial" / "result.json").write_bytes(result_json("outside-trial").replace(b"job-1", MARKER.encode()))
    (outside / "trial" / "agent" / "trajectory.json").write_bytes(OUTSIDE_TRAJECTORY)


def write_hostile_run(traces_root: Path, outside: Path, s3_safe: bool = False) -> Path:
    """The run under `traces_root`; with `s3_safe`, only what an object store can hold."""
    write_outside(outside)
    trace_jobs = traces_root / RUN_ID / "trace_jobs"
    for folder, case in cases(outside).items():
        if s3_safe and not case.on_s3:
            continue
        trial = trace_jobs / folder
        trial.mkdir(parents=True, exist_ok=True)
        for relative, data in case.files.items():
            (trial / relative).parent.mkdir(parents=True, exist_ok=True)
            (trial / relative).write_bytes(data)
        if s3_safe:
            continue
        for relative, target in case.links.items():
            link = trial / relative if relative else trial
            if not relative:
                trial.rmdir()
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(os.path.relpath(target, link.parent) if case.relative_links else target)
        for relative in case.fifos:
            (trial / relative).parent.mkdir(parents=True, exist_ok=True)
            os.mkfifo(trial / relative)
    if not s3_safe:
        bytes_root = os.fsencode(trace_jobs)
        os.makedirs(os.path.join(bytes_root, UNDECODABLE_TRIAL, b"agent"))
        for relative, data in _good("bad-name").items():
            with open(os.path.join(bytes_root, UNDECODABLE_TRIAL, relative.encode()), "wb") as file:
                file.write(data)
        with open(os.path.join(bytes_root, b"undecodable-file__u1", UNDECODABLE_FILE), "wb") as file:
            file.write(b"notes")
    (trace_jobs / "result.json").write_text(json.dumps({"stats": {}}))  # a job folder's own file
    return trace_jobs
