"""The layer line is the folder line: only `defs/`, `definitions.py` and the CLI may import Dagster."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import trace_assets

PACKAGE = Path(trace_assets.__file__).resolve().parent
DAGSTER_LAYER = {"defs", "definitions.py", "cli"}
# Listing workers start with only these: they must import nothing heavy.
STDLIB_ONLY = {"store/local_walk.py", "store/process_pool.py", "store/__init__.py"}
HEAVY = {"dagster", "dagster_aws", "polars", "pyarrow", "fsspec", "s3fs", "huggingface_hub", "orjson", "trace_assets"}


def _imports(path: Path) -> set[str]:
    """Top-level names of every module a file imports, at any depth of the file."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)  # `from dagster import _core`
    return names


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_no_domain_module_imports_dagster():
    offenders = {}
    for path in _modules():
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] in DAGSTER_LAYER:
            continue
        dagster = sorted(name for name in _imports(path) if name.split(".")[0] in ("dagster", "dagster_aws"))
        if dagster:
            offenders[relative.as_posix()] = dagster
    assert offenders == {}
    assert len(_modules()) > 20, "the walk found the package's modules"


# Dagster exports its run launcher interface and a run worker's body only from its internals
# (dagster-aws's ECS launcher and dagster-k8s's import them there too). Tests launch, cancel and
# kill runs through this launcher with the real daemon, so an upgrade that moves them fails there.
PRIVATE_DAGSTER_ALLOWED = {"defs/warm_run_launcher.py"}


def test_no_module_imports_dagster_private_modules():
    """`dagster._*` modules are Dagster's internals: they move between releases, so upgrades break."""
    offenders = {}
    for path in _modules():
        if path.relative_to(PACKAGE).as_posix() in PRIVATE_DAGSTER_ALLOWED:
            continue
        private = sorted(name for name in _imports(path) if name.split(".")[0].startswith("dagster") and "._" in name)
        if private:
            offenders[path.relative_to(PACKAGE).as_posix()] = private
    assert offenders == {}


def test_domain_never_imports_the_dagster_layer():
    offenders = {}
    for path in _modules():
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] in DAGSTER_LAYER:
            continue
        upward = sorted(
            name
            for name in _imports(path)
            if name.startswith(("trace_assets.defs", "trace_assets.definitions", "trace_assets.cli"))
        )
        if upward:
            offenders[relative.as_posix()] = upward
    assert offenders == {}


# Settings are a high layer: they import no domain module that builds from them, and only these
# modules (the layers that turn settings into options and runs) import them.
SETTINGS_USERS = ("orchestration/", "defs/", "cli/", "definitions.py", "sweep.py", "backfill_api.py")
SETTINGS_USERS += ("steps/context.py",)  # orchestration's, moving into orchestration/ with the pipeline
BELOW_SETTINGS = ("trace_assets.publishing", "trace_assets.steps", "trace_assets.secret_scan.scanner")
BELOW_SETTINGS += ("trace_assets.secret_scan.privacy",)


def test_settings_import_no_layer_that_builds_from_them():
    below = sorted(name for name in _imports(PACKAGE / "settings.py") if name.startswith(BELOW_SETTINGS))
    assert below == []


def test_only_the_layers_above_the_domain_import_settings():
    offenders = []
    for path in _modules():
        relative = path.relative_to(PACKAGE).as_posix()
        if relative != "settings.py" and not relative.startswith(SETTINGS_USERS):
            if any(name.startswith("trace_assets.settings") for name in _imports(path)):
                offenders.append(relative)
    assert offenders == []


def test_defs_modules_are_the_only_dagster_users_and_all_use_it():
    """Every `defs/` module (bar the package marker) is a Dagster layer file."""
    for path in sorted((PACKAGE / "defs").glob("*.py")):
        if path.name != "__init__.py":
            assert any(name.split(".")[0] == "dagster" for name in _imports(path)), path.name


def test_listing_workers_start_on_the_standard_library():
    for relative in sorted(STDLIB_ONLY):
        heavy = sorted(name for name in _imports(PACKAGE / relative) if name.split(".")[0] in HEAVY)
        assert heavy == [], relative


def test_the_cli_parses_arguments_without_importing_dagster():
    """`--help` and argument errors answer in a fraction of a second: Dagster loads only to run."""
    import subprocess
    import sys

    code = (
        "import sys, contextlib, io\n"
        "from trace_assets import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    cli.main(['--help'])\n"
        "with contextlib.redirect_stderr(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    cli.main(['materialize'])\n"
        "print(sorted(m for m in ('dagster', 'pyarrow', 'fsspec') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_definitions_load_without_the_hub_client():
    """huggingface_hub loads only when a run publishes to the Hub: a tenth of a second or more of every
    other run's start-up."""
    import subprocess
    import sys

    code = "import sys, trace_assets.definitions as d; d.defs(); print('huggingface_hub' in sys.modules)"
    roots = {"TRACE_ASSETS_TRACES_ROOT": "/data/traces", "TRACE_ASSETS_PUBLISH_ROOT": "/data/published"}
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("TRACE_ASSETS_")}, **roots}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert done.stdout.strip() == "False"
