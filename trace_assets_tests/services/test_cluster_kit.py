"""The cluster kit in deploy/: the image's install, replayed, and the Helm chart's values.

The image: deploy/Dockerfile's build stage is replayed on this machine (no container engine
here): the files its COPY lines name go to a folder laid out as its WORKDIR, and the RUN line
that installs the project runs there, `deploy/install.sh` into a fresh virtualenv of this Python
(3.11, as the image's). uv is this checkout's, which `make venv` brought at constraints.txt's
version as the Dockerfile's first RUN does. In that virtualenv the definitions load (`dagster
definitions validate`, what `dg check defs` runs; dg itself is not in the image and loads the
definitions in its own interpreter) and the image's CMD, on a free local port, answers a health check.

The values: deploy/helm/values.yaml checked against the chart's own schema (data/helm/), every key
we set a key of the chart with the right type; the chart's defaults fill the rest, so what it
requires is not asked of our file, and its Kubernetes types (remote references) are taken as given.
The queue, monitoring and run Jobs match deploy/k8s/dagster.yaml's, and the ConfigMap and Secrets
they name are those docs/operations.md creates.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from trace_assets.core.run_tags import CODE_LOCATION
from trace_assets.settings import variables
from trace_assets_tests.support.helpers import PROJECT_DIR
from trace_assets_tests.support.service_processes import free_port, stop_process_group

DEPLOY = PROJECT_DIR / "deploy"
DOCKERFILE = DEPLOY / "Dockerfile"
VALUES = DEPLOY / "helm" / "values.yaml"
ENV_CONFIG_MAP = DEPLOY / "helm" / "trace-assets-env.yaml"
CHART_SCHEMA = PROJECT_DIR / "trace_assets_tests" / "data" / "helm" / "dagster-values.schema.json"
SECRETS = {"trace-assets-secrets"}  # docs/operations.md's `kubectl create secret` names
POSTGRES_SECRET = "trace-assets-postgresql"


# --------------------------------------------------------------------------- the image


def _stages() -> list[list[tuple[str, str]]]:
    """The Dockerfile's instructions per stage, as (instruction, arguments), continuations joined."""
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    stages: list[list[tuple[str, str]]] = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        instruction, _, arguments = line.strip().partition(" ")
        if instruction == "FROM":
            stages.append([])
        stages[-1].append((instruction, arguments.strip()))
    return stages


def _replay_build_stage(context: Path, venv: Path) -> None:
    """The build stage's COPY lines into `context` (its WORKDIR), then its RUN of deploy/install.sh."""
    build, final = _stages()
    assert build[0] == ("FROM", "python:3.11-slim AS builder") and final[0] == ("FROM", "python:3.11-slim")
    workdir = next(arguments for instruction, arguments in build if instruction == "WORKDIR")
    installs = [arguments for instruction, arguments in build if instruction == "RUN" and "install.sh" in arguments]
    assert len(installs) == 1, installs
    command = shlex.split(installs[0])
    command = [word for word in command if not word.startswith("--mount=")]
    assert command[:2] == ["sh", "deploy/install.sh"] and len(command) == 3, command
    image_venv = command[2]
    assert ("COPY", f"--from=builder {image_venv} {image_venv}") in final, "the final stage takes the build's venv"
    for instruction, arguments in build:
        if instruction != "COPY":
            continue
        *sources, target = arguments.split()
        destination = context / workdir.lstrip("/") / target
        for source in sources:
            origin = PROJECT_DIR / source
            into = destination / origin.name if target.endswith("/") else destination
            into.parent.mkdir(parents=True, exist_ok=True)
            if origin.is_dir():
                shutil.copytree(origin, into, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(origin, into)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env["PYTHON"] = sys.executable
    subprocess.run([*command[:2], str(venv)], cwd=context / workdir.lstrip("/"), env=env, check=True, timeout=600)


def _image_cmd() -> list[str]:
    final = _stages()[-1]
    cmd = [json.loads(arguments) for instruction, arguments in final if instruction == "CMD"]
    assert len(cmd) == 1
    return cmd[0]


@pytest.fixture(scope="module")
def image_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("image")
    _replay_build_stage(root / "context", root / "venv")
    return root / "venv"


def _app_dir(tmp_path: Path) -> Path:
    """The final stage's WORKDIR: workspace.yaml and no sources, so the installed package is the one imported."""
    final = _stages()[-1]
    assert ("COPY", "workspace.yaml ./") in final
    app = tmp_path / "app"
    app.mkdir()
    shutil.copy2(PROJECT_DIR / "workspace.yaml", app)
    return app


def _image_env(venv: Path, dagster_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACE_ASSETS_", "DAGSTER_", "VIRTUAL_ENV"))}
    dagster_home.mkdir(exist_ok=True)
    return {**env, "PATH": f"{venv / 'bin'}{os.pathsep}{env['PATH']}", "DAGSTER_HOME": str(dagster_home)}


def test_the_image_installs_the_project_not_editable(image_venv, tmp_path):
    app = _app_dir(tmp_path)
    found = subprocess.run(
        [
            str(image_venv / "bin" / "python"),
            "-c",
            "import trace_assets, dagster_k8s, dagster_postgres; print(trace_assets.__file__)",
        ],
        cwd=app,
        env=_image_env(image_venv, tmp_path / "home"),
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(found.stdout.strip()).is_relative_to(image_venv / "lib"), found.stdout


def test_the_image_loads_the_definitions(image_venv, tmp_path):
    app = _app_dir(tmp_path)
    module = _image_cmd()[-1]
    done = subprocess.run(
        [str(image_venv / "bin" / "dagster"), "definitions", "validate", "-m", module],
        cwd=app,
        env=_image_env(image_venv, tmp_path / "home"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_image_cmd_serves_the_code_location(image_venv, tmp_path):
    cmd = _image_cmd()
    assert cmd[:3] == ["dagster", "code-server", "start"] and cmd[cmd.index("-p") + 1] == "3030"
    port = free_port()
    served = [*cmd]
    served[served.index("-p") + 1] = str(port)
    served[served.index("-h") + 1] = "127.0.0.1"
    env = _image_env(image_venv, tmp_path / "home")
    log = tmp_path / "code-server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            served, cwd=_app_dir(tmp_path), env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + 120
        while True:
            check = subprocess.run(
                ["dagster", "api", "grpc-health-check", "-p", str(port)], env=env, capture_output=True, text=True
            )
            if check.returncode == 0:
                break
            assert server.poll() is None, log.read_text()
            assert time.monotonic() < deadline, check.stdout + check.stderr + log.read_text()
            time.sleep(1)
    finally:
        stop_process_group(server)


# --------------------------------------------------------------------------- the Helm values


def _values() -> dict[str, Any]:
    return yaml.safe_load(VALUES.read_text())


def _k8s_instance() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "k8s" / "dagster.yaml").read_text())


def _without_remote_refs(schema: Any) -> Any:
    """The schema with its references to Kubernetes' definitions (remote, not fetched here) dropped:
    those values keep only what the chart itself says of them (an object, a list)."""
    if isinstance(schema, dict):
        return {
            key: _without_remote_refs(value)
            for key, value in schema.items()
            if not (key == "$ref" and not value.startswith("#"))
        }
    if isinstance(schema, list):
        return [_without_remote_refs(value) for value in schema]
    return schema


def _chart_validator() -> Any:
    """The chart's schema without `required`: the chart's defaults supply what our file leaves out."""
    schema = _without_remote_refs(json.loads(CHART_SCHEMA.read_text()))
    base = jsonschema.validators.validator_for(schema)
    return jsonschema.validators.extend(base, {"required": lambda *_: None})(schema)


def test_the_values_fit_the_charts_schema():
    validator = _chart_validator()
    errors = [
        f"{'.'.join(map(str, error.absolute_path))}: {error.message}" for error in validator.iter_errors(_values())
    ]
    assert errors == []
    # The schema is no empty shell: a misspelt key of ours would be refused.
    assert list(validator.iter_errors({"dagsterDaemon": {"runCordinator": {}}}))


def test_the_values_keep_the_k8s_instance_queue_and_run_jobs():
    values, instance = _values(), _k8s_instance()
    daemon = values["dagsterDaemon"]
    queue = daemon["runCoordinator"]["config"]["queuedRunCoordinator"]
    wanted = instance["run_coordinator"]["config"]
    assert instance["run_coordinator"]["class"] == daemon["runCoordinator"]["type"] == "QueuedRunCoordinator"
    assert queue == {
        "dequeueIntervalSeconds": wanted["dequeue_interval_seconds"],
        "maxConcurrentRuns": wanted["max_concurrent_runs"],
        "tagConcurrencyLimits": wanted["tag_concurrency_limits"],
    }
    monitoring = instance["run_monitoring"]
    assert daemon["runMonitoring"] == {
        "enabled": monitoring["enabled"],
        "startTimeoutSeconds": monitoring["start_timeout_seconds"],
        "maxResumeRunAttempts": monitoring["max_resume_run_attempts"],
        "freeSlotsAfterRunEndSeconds": monitoring["free_slots_after_run_end_seconds"],
    }
    launcher, wanted_launcher = values["runLauncher"]["config"]["k8sRunLauncher"], instance["run_launcher"]["config"]
    assert values["runLauncher"]["type"] == instance["run_launcher"]["class"] == "K8sRunLauncher"
    for ours, theirs in [("volumes", "volumes"), ("volumeMounts", "volume_mounts"), ("resources", "resources")]:
        assert launcher[ours] == wanted_launcher[theirs], ours
    assert launcher["labels"] == wanted_launcher["labels"]
    assert launcher["failPodOnRunFailure"] is wanted_launcher["fail_pod_on_run_failure"] is True
    logs = values["computeLogManager"]["config"]["s3ComputeLogManager"]
    wanted_logs = instance["compute_logs"]["config"]
    assert (logs["bucket"], logs["prefix"], logs["uploadInterval"], logs["skipEmptyFiles"]) == (
        wanted_logs["bucket"],
        wanted_logs["prefix"],
        wanted_logs["upload_interval"],
        wanted_logs["skip_empty_files"],
    )
    assert values["postgresql"]["postgresqlScheme"] == instance["storage"]["postgres"]["postgres_db"]["scheme"]
    assert values["telemetry"] == instance["telemetry"] == {"enabled": False}


def test_the_values_serve_the_image_as_the_code_location():
    values = _values()
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    cmd = _image_cmd()
    assert deployment["port"] == int(cmd[cmd.index("-p") + 1])
    assert deployment["dagsterApiGrpcArgs"] == ["-m", cmd[cmd.index("-m") + 1]]
    workspace = yaml.safe_load((PROJECT_DIR / "workspace.yaml").read_text())["load_from"][0]["python_module"]
    assert cmd[cmd.index("-m") + 1] == workspace["module_name"]
    (server,) = values["dagsterWebserver"]["workspace"]["servers"]
    assert server == {"host": deployment["name"], "port": deployment["port"], "name": CODE_LOCATION}
    images = {
        yaml.safe_dump(part["image"]) for part in (values["dagsterWebserver"], values["dagsterDaemon"], deployment)
    }
    assert len(images) == 1, "the webserver, the daemon and the code server run one image"


def test_the_values_name_the_documented_config_map_and_secrets():
    values = _values()
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    config_map = yaml.safe_load(ENV_CONFIG_MAP.read_text())
    parts = [
        values["dagsterWebserver"],
        values["dagsterDaemon"],
        deployment,
        values["runLauncher"]["config"]["k8sRunLauncher"],
    ]
    for part in parts:
        assert [ref["name"] for ref in part["envConfigMaps"]] == [config_map["metadata"]["name"]]
        assert {ref["name"] for ref in part["envSecrets"]} == SECRETS
    assert values["global"]["postgresqlSecretName"] == POSTGRES_SECRET
    assert values["postgresql"]["enabled"] is False and values["generatePostgresqlPasswordSecret"] is False
    settings = set(variables().values())
    bucket = values["computeLogManager"]["config"]["s3ComputeLogManager"]["bucket"]["env"]
    assert set(config_map["data"]) - settings == {bucket}, "every key is a setting the code or the instance reads"
    operations = (PROJECT_DIR / "docs" / "operations.md").read_text()
    for name in [config_map["metadata"]["name"], *SECRETS, POSTGRES_SECRET]:
        assert name in operations, name
