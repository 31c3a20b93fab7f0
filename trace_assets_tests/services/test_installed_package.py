"""The package as a user installs it (a wheel in a fresh virtualenv, not this editable checkout),
run from a folder of the user's with no DAGSTER_HOME: the CLI keeps its instance in that folder and
writes nothing inside the installed package.

Needs uv (installed by `make venv`) and the package registry, or uv's cache, for the pinned versions.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trace_assets_tests.support.helpers import PROJECT_DIR, SAMPLE_RUN, SAMPLE_TRACES

UV = Path(sys.executable).with_name("uv")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with the project's wheel and its pinned dependencies; its bin folder."""
    root = tmp_path_factory.mktemp("installed")
    build = root / "build"
    shutil.copytree(PROJECT_DIR, build, ignore=shutil.ignore_patterns(".venv", ".git", ".dagster_home", "published"))
    subprocess.run([str(UV), "build", "--wheel", "--quiet", "-o", str(root / "dist"), str(build)], check=True)
    venv = root / "venv"
    subprocess.run([str(UV), "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    wheel = next((root / "dist").glob("trace_assets-*.whl"))
    install = [str(UV), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python")]
    subprocess.run([*install, "-c", str(PROJECT_DIR / "constraints.txt"), str(wheel)], check=True)
    return venv / "bin"


def _user_env() -> dict[str, str]:
    """This process's environment without the project's Dagster home or roots."""
    return {key: value for key, value in os.environ.items() if key != "DAGSTER_HOME" and not key.startswith("TRACE_")}


def _package_files(bin_dir: Path) -> set[Path]:
    site = next(bin_dir.parent.glob("lib/python*/site-packages"))
    return {path for path in site.rglob("*") if "__pycache__" not in path.parts}


def test_the_installed_cli_keeps_its_instance_in_the_working_folder(installed, tmp_path):
    shutil.copytree(SAMPLE_TRACES, tmp_path / "traces")
    before = _package_files(installed)
    done = subprocess.run(
        [str(installed / "trace-assets"), "materialize", SAMPLE_RUN, "--traces-root", "traces"]
        + ["--publish-root", "published", "--on-secret", "redact"],
        cwd=tmp_path,
        env=_user_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / ".dagster_home" / "dagster.yaml").read_bytes() == (PROJECT_DIR / "dagster.yaml").read_bytes()
    assert (tmp_path / ".dagster_home" / "trace_assets_staging").is_dir()
    assert (tmp_path / "published" / SAMPLE_RUN / "README.md").is_file()
    assert _package_files(installed) == before


def test_the_installed_cli_refuses_an_unset_publish_root(installed, tmp_path):
    done = subprocess.run(
        [str(installed / "trace-assets"), "materialize", SAMPLE_RUN, "--traces-root", str(SAMPLE_TRACES)],
        cwd=tmp_path,
        env=_user_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert done.stderr.startswith("trace-assets: TRACE_ASSETS_PUBLISH_ROOT (nor --publish-root) is not set")
    assert not (tmp_path / ".dagster_home").exists()
