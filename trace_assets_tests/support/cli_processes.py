"""The `trace-assets` console script as a user runs it: a subprocess on a temporary Dagster home."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from trace_assets_tests.support.helpers import PROJECT_DIR

CLI = str(Path(sys.executable).with_name("trace-assets"))
KILLED_CLI = Path(__file__).with_name("killed_cli.py")


def cli_env(tmp_path: Path, fresh_home: bool = False, **env: str) -> dict[str, str]:
    """Environment for a CLI on `tmp_path/dagster_home` (initialised unless `fresh_home`)."""
    home = tmp_path / "dagster_home"
    home.mkdir(exist_ok=True)
    if not fresh_home or not (home / "dagster.yaml").exists():
        shutil.copyfile(PROJECT_DIR / "dagster.yaml", home / "dagster.yaml")
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TRACE_ASSETS_")}
    # the roots have no defaults: a test's own publish root unless it passes one (or "" for unset)
    environment.update(DAGSTER_HOME=str(home), TRACE_ASSETS_STAGING_ROOT=str(tmp_path / "staging"))
    environment.update({"TRACE_ASSETS_PUBLISH_ROOT": str(tmp_path / "published"), **env})
    return environment


def run_cli(args: list[str], tmp_path: Path, timeout: float = 600, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=cli_env(tmp_path, **env), timeout=timeout)


def start_cli(args: list[str], environment: dict[str, str], killed_at: int | None = None) -> subprocess.Popen:
    """A CLI in a process group of its own; with `killed_at`, one that kill -9s that group at its
    `killed_at`-th publish file operation (see killed_cli.py)."""
    command = [CLI, *args] if killed_at is None else [sys.executable, str(KILLED_CLI), str(killed_at), *args]
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment, start_new_session=True
    )
