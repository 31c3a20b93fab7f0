"""The machine fails under the CLI, as an operator meets it: real file systems of a fixed size
(tmpfs mounts, as root), and an error injected at the publish's write calls where a tmpfs cannot
make it. Each ends in one short line naming the cause and the folder, and keeps what was published."""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from trace_assets_tests.support.cli_processes import CLI, cli_env
from trace_assets_tests.support.helpers import SAMPLE_RUN, SAMPLE_TRACES

pytestmark = pytest.mark.dagster

FAULTY_CLI = Path(__file__).parents[1] / "support" / "faulty_cli.py"
MAX_LAST_LINE = 300


def _mounted(folder: Path, size: str) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("a tmpfs of a fixed size needs root (mount -t tmpfs)")
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"this machine mounts no tmpfs: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.fixture
def small_publish_root(tmp_path) -> Iterator[Path]:
    yield from _mounted(tmp_path / "pub", "4m")


@pytest.fixture
def small_dagster_home(tmp_path) -> Iterator[Path]:
    yield from _mounted(tmp_path / "home", "1m")


def _files(folder: Path) -> dict[str, str]:
    return {
        path.relative_to(folder).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in folder.rglob("*")
        if path.is_file()
    }


def _materialize(traces: Path, publish_root: Path, environment: dict[str, str]) -> subprocess.CompletedProcess:
    args = ["materialize", SAMPLE_RUN, "--traces-root", str(traces), "--publish-root", str(publish_root)]
    return subprocess.run(
        [CLI, *args, "--on-secret", "redact"], capture_output=True, text=True, env=environment, timeout=600
    )


def _add_trial(traces: Path) -> None:
    """A new trial folder (a copy of a scored one under a new name): the next publish is a new version."""
    jobs = traces / SAMPLE_RUN / "trace_jobs"
    scored = sorted(p.parent for p in jobs.rglob("result.json") if (p.parent / "agent" / "trajectory.json").is_file())
    shutil.copytree(scored[0], scored[0].with_name(scored[0].name + "-again"))


def test_a_publish_root_that_fills_during_a_republish_keeps_the_published_version(tmp_path, small_publish_root):
    traces = tmp_path / "traces"
    shutil.copytree(SAMPLE_TRACES, traces)
    environment = cli_env(tmp_path)
    first = _materialize(traces, small_publish_root, environment)
    assert first.returncode == 0, first.stderr
    folder = small_publish_root / SAMPLE_RUN
    published = _files(folder)
    version = next((folder / "data").iterdir()).name
    _add_trial(traces)
    filler = small_publish_root / "filler"
    free = shutil.disk_usage(small_publish_root).free
    filler.write_bytes(b"\0" * (free - 100 * 1024))  # 100 KiB left: less than the new version's files

    again = _materialize(traces, small_publish_root, environment)

    assert again.returncode != 0
    last = again.stderr.strip().splitlines()[-1]
    assert len(last) <= MAX_LAST_LINE, last
    assert "no space left" in last and str(small_publish_root) in last, last
    assert f"the published version {version} is unchanged" in last, last
    assert "Errno" not in last and ".tmp-" not in last
    now = _files(folder)
    assert {name: now.get(name) for name in published} == published  # every file the card names, as it was

    filler.unlink()
    freed = _materialize(traces, small_publish_root, environment)
    assert freed.returncode == 0, freed.stderr
    assert len([p for p in (folder / "data").iterdir() if p.is_dir()]) == 1
    assert len([p for p in (folder / "sessions").iterdir() if p.is_dir()]) == 1
    assert next((folder / "data").iterdir()).name != version
    assert not [p for p in folder.rglob(".*")], "a leftover of the failed publish"


def test_a_dagster_home_too_small_for_the_staging_says_so_in_one_line(tmp_path, small_dagster_home):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TRACE_ASSETS_")}
    environment["DAGSTER_HOME"] = str(small_dagster_home)  # staging under it, by default

    done = _materialize(SAMPLE_TRACES, tmp_path / "published", environment)

    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    named = [line for line in lines if "space" in line and str(small_dagster_home) in line]
    assert named, done.stderr
    assert len(lines[-1]) <= MAX_LAST_LINE and lines[-1] in named
    assert "Traceback" not in done.stderr
    assert not [line for line in lines if line.lstrip().upper().startswith(("INSERT", "SELECT", "UPDATE", "[SQL"))]
    assert "Telemetry" not in done.stderr and "No dagster instance configuration" not in done.stderr
    assert not (tmp_path / "published").exists()


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (errno.EROFS, "read-only file system"),
        (errno.EMFILE, "too many open files"),
        (errno.EACCES, "permission denied"),
    ],
)
def test_a_fault_at_a_publish_write_call_keeps_the_published_version(tmp_path, code, words):
    """Where a tmpfs cannot make the fault: the publish root turned read-only (or out of file handles,
    or refused) after the pre-flight, injected at the publish's file copies (support/faulty_cli.py)."""
    traces = tmp_path / "traces"
    shutil.copytree(SAMPLE_TRACES, traces)
    publish_root = tmp_path / "published"
    environment = cli_env(tmp_path)
    assert _materialize(traces, publish_root, environment).returncode == 0
    folder = publish_root / SAMPLE_RUN
    published = _files(folder)
    _add_trial(traces)
    args = ["materialize", SAMPLE_RUN, "--traces-root", str(traces), "--publish-root", str(publish_root)]
    done = subprocess.run(
        [sys.executable, str(FAULTY_CLI), str(code), str(publish_root), *args, "--on-secret", "redact"],
        capture_output=True,
        text=True,
        env=environment,
        timeout=600,
    )
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert len(last) <= MAX_LAST_LINE and words in last and str(publish_root) in last, last
    assert "is unchanged" in last, last
    now = _files(folder)
    assert {name: now.get(name) for name in published} == published  # the new version's folder may be there, unnamed
