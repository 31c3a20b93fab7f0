"""Settings that are checked when the configuration is built, not when a step first reads them: a bad
value stops the CLI in one line naming the variable, and stops the code location from loading (the
`dagster dev` and `dagster definitions validate` import) with the same words, which `dg dev` logs
and its UI shows; a launchpad override fails the run before its first step. An unset root is no
load error (Dagster's `EnvVar`, read at launch): the CLI, a run and a sensor tick refuse it, naming it."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
import requests

from trace_assets.cli.backfill_api import query
from trace_assets.definitions import build_definitions, export_trace_run, trace_runs
from trace_assets.defs.resources import config_from_env
from trace_assets_tests.support.cli_processes import cli_env, run_cli
from trace_assets_tests.support.helpers import SAMPLE_RUN, SAMPLE_TRACES
from trace_assets_tests.support.service_processes import VENV_BIN, ServiceProcess, free_port, running_service

FINGERPRINT = "0123456789ABCDEF"  # 16 hex digits: how secret_scan.json names a finding (any case)
INTERVAL = "TRACE_ASSETS_SENSOR_INTERVAL_SECONDS"
REFUSED = [
    (INTERVAL, "1m", f"{INTERVAL}='1m': must be a whole number above 0"),
    (INTERVAL, "-5", f"{INTERVAL}='-5': must be a whole number above 0"),
    (
        "TRACE_ASSETS_SECRET_PATTERNS",
        r"ok_key=ok_[0-9]{8};proxy_key=pxk_([0-9a-f]{32}",
        r"TRACE_ASSETS_SECRET_PATTERNS='ok_key=ok_[0-9]{8};proxy_key=pxk_([0-9a-f]{32}': secret pattern "
        r"'proxy_key': 'pxk_([0-9a-f]{32}' is not a valid regex (Rust regex syntax): unclosed group",
    ),
    (
        "TRACE_ASSETS_SECRET_PATTERNS",
        r'{"lookahead_key": "lk_(?=[0-9])\\w+"}',
        "secret pattern 'lookahead_key': 'lk_(?=[0-9])\\\\w+' is not a valid regex (Rust regex syntax): "
        "look-around, including look-ahead and look-behind, is not supported",
    ),
    (
        "TRACE_ASSETS_SECRET_ALLOWLIST",
        f"{FINGERPRINT}, sk-placeholder",
        f"TRACE_ASSETS_SECRET_ALLOWLIST='{FINGERPRINT}, sk-placeholder': allowlist entry 'sk-placeholder' is not "
        "a fingerprint: 16 to 64 hex digits, the start of a secret's sha256 as secret_scan.json names a finding",
    ),
    (
        "TRACE_ASSETS_SECRET_ALLOWLIST",
        "0123456789abcde",
        "allowlist entry '0123456789abcde' is not a fingerprint: 16 to 64 hex digits",
    ),
    (
        "TRACE_ASSETS_HUB_REPO_ID",
        "{org}/traces-{run_idd}",
        "TRACE_ASSETS_HUB_REPO_ID='{org}/traces-{run_idd}': unknown placeholder {run_idd}; known: {org}, {run}, "
        "{step}, {run_id}, {date}, {model}",
    ),
    # an unset root: no default, never a folder inside the installed package
    ("TRACE_ASSETS_PUBLISH_ROOT", "", "TRACE_ASSETS_PUBLISH_ROOT (nor --publish-root) is not set, and has no default"),
    ("TRACE_ASSETS_TRACES_ROOT", "", "TRACE_ASSETS_TRACES_ROOT (nor --traces-root) is not set, and has no default"),
]
IDS = [
    "interval-1m",
    "interval-negative",
    "pattern-unclosed",
    "pattern-lookaround",
    "allowlist-word",
    "allowlist-short",
    "hub-repo-template",
    "publish-root-unset",
    "traces-root-unset",
]


def _roots(tmp_path: Path, variable: str, value: str) -> dict[str, str]:
    """Both roots set in the environment, bar the one a case leaves unset; then the case's value."""
    return {
        "TRACE_ASSETS_TRACES_ROOT": str(SAMPLE_TRACES),
        "TRACE_ASSETS_PUBLISH_ROOT": str(tmp_path / "o"),
        variable: value,
    }


@pytest.mark.parametrize(("variable", "value", "message"), REFUSED, ids=IDS)
def test_the_cli_refuses_it_in_one_line_before_anything_is_written(tmp_path, variable, value, message):
    done = run_cli(["materialize", SAMPLE_RUN], tmp_path, **_roots(tmp_path, variable, value))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("trace-assets: ") and done.stderr.count("\n") == 1, done.stderr
    assert message in done.stderr
    assert not (tmp_path / "staging").exists() and not (tmp_path / "o").exists()
    assert [p.name for p in (tmp_path / "dagster_home").iterdir()] == ["dagster.yaml"]


UNSET_ROOTS = ("publish-root-unset", "traces-root-unset")  # refused by the CLI, a run and a tick; not at load
REFUSED_AT_LOAD = [case for case, name in zip(REFUSED, IDS) if name not in UNSET_ROOTS]
IDS_AT_LOAD = [name for name in IDS if name not in UNSET_ROOTS]


def test_the_cli_without_any_setting_names_the_traces_root(tmp_path):
    """A fresh shell, nothing set: one line naming the variable, no traceback."""
    done = run_cli(["materialize", SAMPLE_RUN], tmp_path, TRACE_ASSETS_PUBLISH_ROOT="", TRACE_ASSETS_STAGING_ROOT="")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("trace-assets: TRACE_ASSETS_TRACES_ROOT (nor --traces-root) is not set")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr


def test_the_code_location_loads_without_any_setting(tmp_path):
    """A fresh clone with no TRACE_ASSETS_* set: the definitions load (`dg check defs`, `dagster dev`)."""
    env = {k: v for k, v in cli_env(tmp_path).items() if not k.startswith("TRACE_ASSETS_")}
    done = subprocess.run(
        [str(Path(sys.executable).with_name("dagster")), "definitions", "validate", "-m", "trace_assets.definitions"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_run_and_a_sensor_tick_without_a_root_fail_naming_it(tmp_path):
    """Dagster reads the root's EnvVar as the run or tick starts, and refuses it unset, naming it."""
    unset = 'environment variable "TRACE_ASSETS_TRACES_ROOT" which is not set'
    config = config_from_env({"DAGSTER_HOME": str(tmp_path)}, require=())
    defs = build_definitions(config)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(trace_runs.name, [SAMPLE_RUN])
        with pytest.raises(dg.DagsterInvalidConfigError, match=unset):
            defs.resolve_job_def(export_trace_run.name).execute_in_process(instance=instance, partition_key=SAMPLE_RUN)
        assert not instance.fetch_materializations(dg.AssetKey("raw_trial_listing"), limit=1).records
        context = dg.build_sensor_context(instance=instance, definitions=defs, resources=defs.resources)
        with pytest.raises(dg.DagsterInvalidConfigError, match=unset), context:
            defs.resolve_sensor_def("new_trace_runs_sensor").evaluate_tick(context)
    assert not Path(config.staging_root).exists()


@pytest.mark.parametrize(("variable", "value", "message"), REFUSED_AT_LOAD, ids=IDS_AT_LOAD)
def test_the_code_location_does_not_load(tmp_path, variable, value, message):
    """What `dagster dev`, `dg check defs` and `dagster definitions validate` do first: load the
    definitions. They stop with the CLI's words after `ConfigError:`, the stack under it one line of
    definitions.py (Dagster's frames hidden), no Python traceback."""
    done = subprocess.run(
        [str(Path(sys.executable).with_name("dagster")), "definitions", "validate", "-m", "trace_assets.definitions"],
        capture_output=True,
        text=True,
        env=cli_env(tmp_path, **_roots(tmp_path, variable, value)),
        timeout=300,
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "Traceback" not in output
    [reason] = [line for line in output.splitlines() if "ConfigError: " in line]
    assert reason.startswith("trace_assets.settings.ConfigError: ") and message in reason, output
    frames = [line for line in output.splitlines() if line.startswith('  File "')]
    assert len(frames) == 1 and frames[0].endswith(", in defs"), output
    assert not (tmp_path / "staging").exists() and not (tmp_path / "o").exists()


LOCATION_QUERY = """
{ workspaceOrError { ... on Workspace { locationEntries {
    loadStatus locationOrLoadError { __typename ... on PythonError { message causes { message } } }
} } } }
"""


def _loaded_location(url: str, server: ServiceProcess, timeout: float = 120) -> dict:
    """The code location as the UI reads it, once the webserver has tried to load it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        server.require_alive()
        try:
            entries = query(url, LOCATION_QUERY)["workspaceOrError"]["locationEntries"]
        except requests.ConnectionError:
            entries = []  # the webserver starts after the code server
        if entries and entries[0]["loadStatus"] == "LOADED":
            return entries[0]["locationOrLoadError"]
        time.sleep(0.5)
    raise AssertionError(f"no code location within {timeout:.0f}s\n{server.log_tail()}")


def test_dg_dev_shows_the_reason_and_serves_the_ui(tmp_path):
    """`make dev` (`dg dev`, which runs `dagster dev`'s code) with a refused setting: the terminal shows the
    reason once, and the UI comes up with it as the code location's load error. (SystemExit ended the
    code server: the reason sat above pages of "gRPC server exited" tracebacks and no UI came up.)"""
    env = cli_env(tmp_path, **_roots(tmp_path, "TRACE_ASSETS_ON_SECRET", "bogus"), VIRTUAL_ENV=str(VENV_BIN.parent))
    port = free_port()
    command = [str(VENV_BIN / "dg"), "dev", "-h", "127.0.0.1", "-p", str(port)]
    with running_service(command, env, tmp_path / "dev.log") as dev:
        location = _loaded_location(f"http://127.0.0.1:{port}", dev)
        log = dev.log.read_text()
    reason = "ConfigError: TRACE_ASSETS_ON_SECRET='bogus': must be one of block, redact, allow"
    assert location["__typename"] == "PythonError", location
    assert [cause["message"].strip() for cause in location["causes"]] == [f"trace_assets.settings.{reason}"]
    assert log.count(reason) == 1, log
    assert "gRPC server exited" not in log and "Traceback" not in log, log


def test_good_values_are_taken(tmp_path):
    done = run_cli(
        ["runs", "--traces-root", str(SAMPLE_TRACES)],  # a command without a publish root needs none
        tmp_path,
        TRACE_ASSETS_SENSOR_INTERVAL_SECONDS="30",
        TRACE_ASSETS_SECRET_PATTERNS=r"ok_key=ok_[0-9]{8}",
        TRACE_ASSETS_SECRET_ALLOWLIST=f"{FINGERPRINT}, {'ab' * 32}",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [SAMPLE_RUN]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("secret_patterns", "bad_key=bk_(", "secret pattern 'bad_key': 'bk_(' is not a valid regex"),
        ("secret_allowlist", "deadbeef", "allowlist entry 'deadbeef' is not a fingerprint"),
        ("publish_root", "", "TRACE_ASSETS_PUBLISH_ROOT (nor --publish-root) is not set, and has no default"),
    ],
)
def test_a_launchpad_override_fails_the_run_before_its_first_step(tmp_path, field, value, message):
    config = config_from_env(
        {"DAGSTER_HOME": str(tmp_path)}, traces_root=str(SAMPLE_TRACES), publish_root=str(tmp_path / "out")
    )
    roots = {name: getattr(config, name) for name in ("traces_root", "publish_root", "staging_root")}
    job = build_definitions(config).resolve_job_def(export_trace_run.name)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(trace_runs.name, [SAMPLE_RUN])
        with pytest.raises(dg.DagsterResourceFunctionError) as raised:
            job.execute_in_process(
                instance=instance,
                partition_key=SAMPLE_RUN,
                run_config={"resources": {"trace_config": {"config": {**roots, field: value}}}},
            )
        assert message in str(raised.value.__cause__)
        assert not instance.fetch_materializations(dg.AssetKey("raw_trial_listing"), limit=1).records
    assert not Path(config.staging_root).exists() and not (tmp_path / "out").exists()
