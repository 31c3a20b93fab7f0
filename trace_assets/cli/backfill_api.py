"""Asset backfills through Dagster's GraphQL API, the interface its UI uses and the one public way
to launch one (the Python classes behind it are Dagster's internals, which break on upgrades).

GraphQL needs a webserver: a given URL (the team's, or `make dev`'s), else a private
`dagster-webserver` on 127.0.0.1 for the command's duration, stopped with its process group.
A webserver behind an authenticating proxy gets extra HTTP headers on every call, from the
headers setting (`ProcessSettings.dagster_headers`: `Authorization=Bearer x;X-Other=y`) and the
caller's `headers`.

`query` is the one way this project (and its tests) talk GraphQL: a POST of the document and its
variables with `requests`, which the rest of the project already uses. dagster-graphql's client
keeps its raw call private (`_execute`), and `gql` would add a schema-aware client for what is
one POST.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Any

import requests
from requests.structures import CaseInsensitiveDict

from trace_assets.core.run_tags import CODE_LOCATION, failure_line
from trace_assets.settings import ProcessSettings, env_name, load

START_SECONDS = 180.0
CODE_LOCATION_MODULE = "trace_assets.definitions"  # as workspace.yaml and [tool.dagster] name it
HEADERS_ENV = env_name(ProcessSettings, "dagster_headers")
HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP field name (RFC 9110's token)

LAUNCH = """
mutation($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on Error { message }
  }
}
"""
# Dagster's `...OrError` lookups share one shape: the object's fields when found, else an Error's message.
LOOKUP = """
query($key: {key_type}!) {{
  {field}({argument}: $key) {{
    __typename
    ... on {found} {{ {selection} }}
    ... on Error {{ message }}
  }}
}}
"""
BACKFILL_STATUS = "status"
RUN_FAILURE = """
eventConnection {
  events {
    __typename
    ... on ExecutionStepFailureEvent { stepKey error { message cause { message } } failureMetadata { description } }
    ... on RunFailureEvent { message }
  }
}
"""


class BackfillStatus(StrEnum):
    """Dagster's BulkActionStatus, as GraphQL names it."""

    REQUESTED = "REQUESTED"
    CANCELING = "CANCELING"
    FAILING = "FAILING"
    COMPLETED = "COMPLETED"
    COMPLETED_SUCCESS = "COMPLETED_SUCCESS"
    COMPLETED_FAILED = "COMPLETED_FAILED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"

    @property
    def finished(self) -> bool:
        return self in FINISHED_BACKFILL

    @property
    def succeeded(self) -> bool:
        """Done well, or still going (without --wait nothing has failed yet)."""
        return self in (BackfillStatus.REQUESTED, BackfillStatus.COMPLETED_SUCCESS)


FINISHED_BACKFILL = {
    BackfillStatus.COMPLETED,
    BackfillStatus.COMPLETED_SUCCESS,
    BackfillStatus.COMPLETED_FAILED,
    BackfillStatus.FAILED,
    BackfillStatus.CANCELED,
}


class GraphQLError(RuntimeError):
    """The webserver answered with an error (the message is Dagster's), or refused the call (its HTTP status)."""


def parse_headers(text: str, setting: str = HEADERS_ENV) -> dict[str, str]:
    """`Name=value;Name2=value2` as a dict (a value may hold `=`, as base64 does); a malformed
    entry names the setting, never the values, which are often credentials."""
    headers: dict[str, str] = {}
    for number, item in enumerate(text.split(";"), 1):
        if not item.strip():
            continue
        name, equals, value = item.partition("=")
        name = name.strip()
        if not equals or not HEADER_NAME.fullmatch(name):
            raise ValueError(f"{setting}: entry {number} is not NAME=VALUE with an HTTP header name")
        headers[name] = value.strip()
    return headers


def request_headers(headers: Mapping[str, str] | None = None) -> CaseInsensitiveDict[str]:
    """The environment's headers (`ProcessSettings.dagster_headers`), overridden by name by the caller's (a CLI option)."""
    merged: CaseInsensitiveDict[str] = CaseInsensitiveDict(
        parse_headers(load(ProcessSettings, os.environ).dagster_headers)
    )
    merged.update(headers or {})
    return merged


def query(
    url: str, document: str, variables: Mapping[str, Any] | None = None, headers: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The `data` of a GraphQL call to the webserver at `url`, with `request_headers(headers)`; an
    HTTP refusal or a GraphQL error is a GraphQLError."""
    response = requests.post(
        f"{url}/graphql",
        json={"query": document, "variables": dict(variables or {})},
        headers=request_headers(headers),
        timeout=120,
    )
    if not response.ok:
        hint = (
            f" (behind authentication? {HEADERS_ENV} sets the headers it needs)"
            if response.status_code in (401, 403, 407)
            else ""
        )
        raise GraphQLError(f"{url}/graphql answered HTTP {response.status_code} {response.reason}{hint}")
    body = response.json()
    if body.get("errors"):
        raise GraphQLError("; ".join(e.get("message", "?") for e in body["errors"]))
    return body["data"]


def lookup(
    url: str,
    field: str,
    argument: tuple[str, str, str],
    found: str,
    selection: str,
    headers: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One object by id (`argument` is its name, GraphQL type and value), or a GraphQLError with
    Dagster's message when the answer is another type (not found, a Python error)."""
    name, key_type, value = argument
    document = LOOKUP.format(key_type=key_type, field=field, argument=name, found=found, selection=selection)
    result = query(url, document, {"key": value}, headers)[field]
    if result["__typename"] != found:
        raise GraphQLError(f"{result['__typename']}: {result.get('message', '')}")
    return result


def launch_backfill(
    url: str,
    asset_paths: list[list[str]],
    partitions: list[str],
    *,
    tags: dict[str, str],
    run_config: dict[str, Any],
    title: str,
    headers: Mapping[str, str] | None = None,
) -> str:
    """Queue an asset backfill of `partitions`; returns its id (the daemon launches the runs)."""
    params = {
        "assetSelection": [{"path": path} for path in asset_paths],
        "partitionNames": partitions,
        "tags": [{"key": k, "value": v} for k, v in tags.items()],
        "runConfigData": run_config,
        "title": title,
        "description": ", ".join(partitions[:20]),
    }
    result = query(url, LAUNCH, {"params": params}, headers)["launchPartitionBackfill"]
    if result["__typename"] != "LaunchBackfillSuccess":
        raise GraphQLError(f"{result['__typename']}: {result.get('message', '')}")
    return str(result["backfillId"])


def backfill_status(url: str, backfill_id: str, headers: Mapping[str, str] | None = None) -> BackfillStatus:
    """REQUESTED while running, then COMPLETED_SUCCESS, COMPLETED_FAILED, ..."""
    backfill = lookup(
        url,
        "partitionBackfillOrError",
        ("backfillId", "String", backfill_id),
        "PartitionBackfill",
        BACKFILL_STATUS,
        headers,
    )
    try:
        return BackfillStatus(backfill["status"])
    except ValueError:
        raise GraphQLError(
            f"backfill {backfill_id} has a status this version does not know: {backfill['status']!r}"
        ) from None


def failure_reason(url: str, run_id: str, headers: Mapping[str, str] | None = None) -> str:
    """The first failed step's description (a machine fault's line) or root error (a blocking check
    names itself there), else the run's message."""
    run = lookup(url, "runOrError", ("runId", "ID", run_id), "Run", RUN_FAILURE, headers)
    events = run["eventConnection"]["events"]
    for event in events:
        if event["__typename"] == "ExecutionStepFailureEvent":
            described = (event.get("failureMetadata") or {}).get("description")  # a dg.Failure's own line
            error = event["error"] or {}
            while error.get("cause"):
                error = error["cause"]
            return f"step {event['stepKey']} failed: {failure_line(described or error.get('message'))}"
    for event in events:
        if event["__typename"] == "RunFailureEvent":
            return str(event["message"])
    return "run failed"


def _workspace_text(working_directory: str) -> str:
    """The code location as workspace.yaml loads it, named as `dg dev` names it (`-m` alone would
    name it after the module): the UI lists a job's runs by their location's name."""
    location = {
        "module_name": CODE_LOCATION_MODULE,
        "attribute": "defs",
        "location_name": CODE_LOCATION,
        "working_directory": working_directory,
    }
    return json.dumps({"load_from": [{"python_module": location}]})  # JSON is YAML


@contextmanager
def webserver(url: str | None, say: Any) -> Iterator[str]:
    """`url` as given, or a private `dagster-webserver` on the code location (same environment,
    working directory and DAGSTER_HOME as this process, so relative roots mean the same) until the
    block ends."""
    request_headers()  # a malformed headers variable fails here, before a webserver starts
    if url:
        yield url.rstrip("/")
        return
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    command = [str(Path(sys.executable).with_name("dagster-webserver")), "-h", "127.0.0.1", "-p", str(port)]
    say(f"starting dagster-webserver on {base} for the GraphQL API (--webserver URL uses a running one)")
    with tempfile.TemporaryFile("w+") as log, tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder, "workspace.yaml")
        workspace.write_text(_workspace_text(os.getcwd()))
        process = subprocess.Popen(
            [*command, "-w", str(workspace)],
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
        )
        try:
            _wait_until_up(base, process, log)
            yield base
        finally:
            _stop(process)


def _wait_until_up(base: str, process: subprocess.Popen, log: Any) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"dagster-webserver exited with {process.returncode}: {log.read()[-2000:]}")
        try:
            if requests.get(f"{base}/server_info", timeout=2).ok:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"dagster-webserver did not answer on {base} within {START_SECONDS:.0f}s")


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM the webserver's process group (it has code-server children), SIGKILL after a grace."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        return
