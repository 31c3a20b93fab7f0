"""`trace-assets --help` and each command's, as the console script prints them: what the command
does, examples, only the options it uses, and each option's environment variable and default;
`backfill --webserver-header` as the GraphQL requests carry it."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from trace_assets_tests.support.cli_processes import run_cli
from trace_assets_tests.support.helpers import SAMPLE_RUN, SAMPLE_TRACES

EXPORT = {
    "--publish-root",
    "--allow-shrink",
    "--on-secret",
    "--on-unverified",
    "--on-near-miss",
    "--on-private",
    "--scrub-literal",
    "--raw-scan",
    "--episodes",
    "--sharegpt",
    "--filter",
    "--no-instruction-metadata",
    "--no-verifier-metadata",
    "--subagents",
    "--card-framework",
    "--card-task-source",
    "--card-model",
    "--card-license",
    "--card-pretty-name",
}
OPTIONS = {
    "runs": {"--traces-root", "--scope"},
    "materialize": {"--traces-root", "--scope", "--dry-run", *EXPORT},
    "backfill": {"--traces-root", "--scope", "--all", "--wait", "--webserver", "--webserver-header", *EXPORT},
    "status": {"--traces-root"},
    "forget": {"--traces-root"},
    "recheck": set(),
}


def _help(tmp_path, *command: str) -> str:
    done = run_cli([*command, "--help"], tmp_path, COLUMNS="100")
    assert done.returncode == 0, done.stderr
    return done.stdout


def _flat(text: str) -> str:
    """The help with argparse's line wrapping undone."""
    return " ".join(text.split())


def test_the_top_level_help_says_what_the_tool_does_and_lists_every_command(tmp_path):
    text = _help(tmp_path)
    flat = _flat(text)
    assert "queue a backfill of them for the daemon" in flat and "ask the sensor to re-check scopes." in flat
    assert "Exit status: 0 when every scope succeeded, 1 when" in flat
    for command in OPTIONS:
        assert re.search(rf"^    {command} +\S", text, re.MULTILINE), command
    assert "examples:\n  trace-assets runs" in text and "`trace-assets COMMAND --help`" in text


@pytest.mark.parametrize("command", list(OPTIONS))
def test_each_command_shows_only_its_options_a_description_and_examples(tmp_path, command):
    text = _help(tmp_path, command)
    usage, _, rest = text.partition("\n\n")
    assert set(re.findall(r"--[a-z][a-z-]+", usage)) == OPTIONS[command]
    description = rest.split("\n\n")[0]
    assert len(_flat(description)) > 100, description  # prose, not a fragment
    assert f"examples:\n  trace-assets {command}" in text
    assert "[-v]" not in usage  # accepted after the command too, but shown once, at the top


def test_options_name_their_environment_variable_and_default(tmp_path):
    flat = _flat(_help(tmp_path, "backfill"))
    for stated in (
        "(env TRACE_ASSETS_TRACES_ROOT; default: none, required)",
        "(env TRACE_ASSETS_SCOPE; default: step)",
        "(env TRACE_ASSETS_ON_SECRET; default: block)",
        "(env TRACE_ASSETS_ON_UNVERIFIED; default: redact)",
        "(env TRACE_ASSETS_RAW_SCAN; default: off)",
        "(env TRACE_ASSETS_EPISODES; default: last)",
        "(env TRACE_ASSETS_SUBAGENTS; default: none)",
        "(env TRACE_ASSETS_DAGSTER_URL; default: start a private one on 127.0.0.1)",
        "(env TRACE_ASSETS_DAGSTER_HEADERS; default: empty)",
        "(env TRACE_ASSETS_CARD_MODEL; default: empty)",
    ):
        assert stated in flat, stated


def test_an_option_of_another_command_is_refused(tmp_path):
    done = run_cli(["forget", "gone-run", "--publish-root", str(tmp_path)], tmp_path)
    assert done.returncode == 2 and "unrecognized arguments: --publish-root" in done.stderr


@pytest.fixture
def graphql_stand_in() -> Iterator[tuple[str, list[dict[str, str]]]]:
    """A webserver's /graphql that queues every backfill, recording each request's headers."""
    seen: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            seen.append(dict(self.headers))
            body = {"data": {"launchPartitionBackfill": {"__typename": "LaunchBackfillSuccess", "backfillId": "b1"}}}
            payload = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        thread.join()


def test_backfill_sends_the_webserver_headers_of_the_environment_and_the_flags(tmp_path, graphql_stand_in):
    url, seen = graphql_stand_in
    done = run_cli(
        [
            "backfill",
            SAMPLE_RUN,
            "--traces-root",
            str(SAMPLE_TRACES),
            "--webserver",
            url,
            "--webserver-header",
            "Authorization=Bearer flag-token",
            "--webserver-header",
            "X-Team = traces",
        ],
        tmp_path,
        TRACE_ASSETS_DAGSTER_HEADERS="Authorization=Bearer env-token; X-Proxy=on;",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["backfill_id"] == "b1"
    [request] = seen
    assert (request["Authorization"], request["X-Team"], request["X-Proxy"]) == ("Bearer flag-token", "traces", "on")
    assert "token" not in done.stderr


def test_a_malformed_header_is_refused_without_repeating_its_value(tmp_path):
    done = run_cli(["backfill", "--all", "--webserver-header", "Bearer secret-token"], tmp_path)
    assert done.returncode == 2 and "NAME=VALUE" in done.stderr and "secret-token" not in done.stderr
    done = run_cli(["backfill", "--all"], tmp_path, TRACE_ASSETS_DAGSTER_HEADERS="Authorization: secret-token")
    assert done.returncode == 2 and "TRACE_ASSETS_DAGSTER_HEADERS" in done.stderr
    assert "secret-token" not in done.stderr
