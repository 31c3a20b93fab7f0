"""Every command the README and docs/ show, run as written: one test per `$ ` line.

The docs write commands in ```console blocks, one per `$ ` prompt line, with the output shown
below it. Each doc gets a sandbox that plays a user's shell: a temporary `$HOME` whose
`~/traces` is a copy of the bundled sample traces, a Dagster home of its own, a bucket on the
test S3 server (moto) holding the same traces under `traces/`, and the Hub stand-in at
`HF_ENDPOINT`, with a private Storage Bucket `my-org/rl-traces` holding them under `traces/` for a
doc that names one. Its commands run in order through bash, in the project folder, each in a shell
that starts from the environment and folder the previous one left (so `export` and `cd` carry
over, as at a prompt). Only the docs' example names are replaced: `s3://my-bucket/` by the
test's bucket, `hf_your_token` by the stand-in's token, `/home/you` (in shown output) by the
sandbox's home. A test run alone first replays the doc's earlier commands.

What is checked, per command: its exit status (0, or what an `<!-- exit: N -->` comment before
the block says, one value per command or one for all) and, when the doc shows output, its shape:
each JSON line's keys and `status`; the `[trace-assets]` stderr lines shown, by their leading
words, in order, among the real ones (progress lines come and go with speed); other lines one
for one with stdout, `…` matching anything. A block after `<!-- not-run: why -->` (servers, or
what .ci/run already runs) is only checked to exist: `make -n TARGET`, or the command's `--help`
naming every option the doc passes; a cluster's tool not installed here (docker, kubectl, helm),
by the project files it names (`deploy/...`) being there.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import s3fs

from trace_assets_tests.support.documented_commands import ALL_COMMANDS, Command
from trace_assets_tests.support.helpers import PROJECT_DIR, SAMPLE_TRACES
from trace_assets_tests.support.hub_server import STAND_IN_TOKEN, HubStandIn
from trace_assets_tests.support.s3_fixtures import FAKE_ACCESS_KEY, FAKE_SECRET_KEY, REGION, upload_tree

VENV_BIN = Path(sys.executable).parent
EXAMPLE_HOME = "/home/you"
EXAMPLE_BUCKET = "my-bucket"
EXAMPLE_TOKEN = "hf_your_token"
EXAMPLE_HUB_BUCKET = "my-org/rl-traces"
LOG_PREFIXES = ("[trace-assets]", "trace-assets:")
# A cluster's tools, not installed here: their commands are checked for the project files they name.
CLUSTER_TOOLS = {"docker", "kubectl", "helm"}


def _param(command: Command) -> Any:
    return pytest.param(command, id=command.id)


# --------------------------------------------------------------------------- the sandbox a doc runs in


@dataclass
class Sandbox:
    """A user's shell for one doc: home, Dagster home, the S3 bucket and the Hub stand-in."""

    root: Path
    bucket: str
    hub: HubStandIn
    done: set[int] = field(default_factory=set)  # lines already run

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def state(self) -> Path:
        return self.root / "shell-state.sh"

    @property
    def cwd_file(self) -> Path:
        return self.root / "shell-cwd"

    def substitute(self, text: str) -> str:
        text = text.replace(f"s3://{EXAMPLE_BUCKET}/", f"s3://{self.bucket}/").replace(EXAMPLE_TOKEN, self.hub.token)
        return text.replace(EXAMPLE_HOME, str(self.home))

    def run(self, command: str) -> subprocess.CompletedProcess:
        """`command` in a bash that starts from the previous command's environment and folder."""
        script = (
            f'source "{self.state}"\ncd "$(cat "{self.cwd_file}")"\n{command}\n__status=$?\n'
            f'export -p > "{self.state}"\npwd > "{self.cwd_file}"\nexit $__status\n'
        )
        return subprocess.run(
            ["bash", "-c", script], capture_output=True, text=True, timeout=900, env={"PATH": os.defpath}
        )

    def run_doc_until(self, target: Command) -> None:
        """The doc's commands before `target` not yet run (a test run alone replays them)."""
        for command in ALL_COMMANDS:
            if command.doc == target.doc and command.line < target.line and command.line not in self.done:
                self.done.add(command.line)
                if command.not_run is None:
                    self.run(self.substitute(command.text))


@pytest.fixture(scope="module")
def sandboxes(s3_endpoint: str, s3_admin_client: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """One sandbox per doc, made when its first command is tested."""
    made: dict[str, Sandbox] = {}
    hubs: list[HubStandIn] = []
    buckets: list[str] = []

    def sandbox(doc: str) -> Sandbox:
        if doc in made:
            return made[doc]
        root = tmp_path_factory.mktemp(doc.replace("/", "-"))
        (root / "home").mkdir()
        shutil.copytree(SAMPLE_TRACES, root / "home" / "traces")
        (root / "dagster_home").mkdir()
        shutil.copyfile(PROJECT_DIR / "dagster.yaml", root / "dagster_home" / "dagster.yaml")
        bucket = f"docs-{uuid.uuid4().hex[:16]}"
        s3_admin_client.create_bucket(Bucket=bucket)
        buckets.append(bucket)
        if f"s3://{EXAMPLE_BUCKET}/" in (PROJECT_DIR / doc).read_text():
            fs = s3fs.S3FileSystem(endpoint_url=s3_endpoint, key=FAKE_ACCESS_KEY, secret=FAKE_SECRET_KEY)
            upload_tree(SAMPLE_TRACES, fs, f"s3://{bucket}/traces")
        hub = HubStandIn(token=STAND_IN_TOKEN).__enter__()
        hubs.append(hub)
        if f"hf://buckets/{EXAMPLE_HUB_BUCKET}/" in (PROJECT_DIR / doc).read_text():
            hub.create_bucket(EXAMPLE_HUB_BUCKET, private=True)
            hub.put_bucket_files(
                EXAMPLE_HUB_BUCKET,
                {
                    f"traces/{p.relative_to(SAMPLE_TRACES).as_posix()}": p.read_bytes()
                    for p in SAMPLE_TRACES.rglob("*")
                    if p.is_file()
                },
            )
        environment = {k: v for k, v in os.environ.items() if not k.startswith(("TRACE_ASSETS_", "AWS_", "HF_"))}
        environment.update(
            HOME=str(root / "home"),
            DAGSTER_HOME=str(root / "dagster_home"),
            PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', os.defpath)}",
            AWS_ACCESS_KEY_ID=FAKE_ACCESS_KEY,
            AWS_SECRET_ACCESS_KEY=FAKE_SECRET_KEY,
            AWS_DEFAULT_REGION=REGION,
            AWS_ENDPOINT_URL_S3=s3_endpoint,
            HF_ENDPOINT=hub.url,
            HF_HUB_DISABLE_XET="1",  # the stand-in speaks LFS only (see hub_server.py)
            HF_HUB_DISABLE_UPDATE_CHECK="1",
            HF_HUB_DISABLE_TELEMETRY="1",
        )
        environment.pop("VIRTUAL_ENV", None)
        subprocess.run(
            ["bash", "-c", f'export -p > "{root / "shell-state.sh"}"'], env=environment, check=True, timeout=60
        )
        (root / "shell-cwd").write_text(str(PROJECT_DIR))
        made[doc] = Sandbox(root, bucket, hub)
        return made[doc]

    yield sandbox
    for hub in hubs:
        hub.__exit__(None, None, None)
    for bucket in buckets:
        for page in s3_admin_client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
            if keys:
                s3_admin_client.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
        s3_admin_client.delete_bucket(Bucket=bucket)


# --------------------------------------------------------------------------- comparing output


def leading_words(line: str) -> list[str]:
    """A log line's words up to the first holding a digit, at most 4: what stays from run to run."""
    words = []
    for word in line.split():
        if any(character.isdigit() for character in word) or len(words) == 4:
            break
        words.append(word)
    return words


def check_output(shown: list[str], result: subprocess.CompletedProcess) -> None:
    shown_json = [json.loads(line) for line in shown if line.startswith("{")]
    shown_log = [line for line in shown if line.startswith(LOG_PREFIXES)]
    shown_plain = [line.rstrip() for line in shown if not line.startswith(("{", *LOG_PREFIXES))]
    real_json = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    if shown_json:
        assert len(real_json) == len(shown_json), result.stdout
        for doc_line, real_line in zip(shown_json, real_json, strict=True):
            assert sorted(real_line) == sorted(doc_line), real_line
            assert real_line.get("status") == doc_line.get("status"), real_line
    if shown_log:
        real_log = iter(leading_words(line) for line in result.stderr.splitlines() if line.startswith(LOG_PREFIXES))
        for line in shown_log:
            assert leading_words(line) in real_log, f"not in stderr, in this order: {line}\n{result.stderr}"
    if shown_plain:
        real_plain = [line.rstrip() for line in result.stdout.splitlines() if line.strip() and line[0] != "{"]
        assert len(real_plain) == len(shown_plain), result.stdout
        for doc_line, real_line in zip(shown_plain, real_plain, strict=True):
            pattern = ".*".join(re.escape(part) for part in doc_line.split("…"))
            assert re.fullmatch(pattern, real_line), f"{real_line!r} is not {doc_line!r}"


def check_exists(command: str, sandbox: Sandbox) -> None:
    """A command not run: its make target, or its program and subcommand with every option it passes."""
    words = shlex.split(command)
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):  # VAR=value before the program
        words.pop(0)
    if words[0] == "make":
        result = sandbox.run(f"make -n {shlex.join(words[1:])}")
        assert result.returncode == 0, result.stderr
        return
    if words[0] in CLUSTER_TOOLS and shutil.which(words[0]) is None:
        for path in (word.rpartition("=")[2] for word in words if "deploy/" in word):
            assert (PROJECT_DIR / path).is_file(), f"{path} (in `{command}`) is not a file of the project"
        return
    program = []
    for word in words:
        if not re.fullmatch(r"[a-z][a-z-]*", word):
            break
        program.append(word)
    result = sandbox.run(f"{shlex.join(program)} --help")
    assert result.returncode == 0, result.stderr
    for option in (word.split("=")[0] for word in words if word.startswith("-")):
        assert option in result.stdout, f"{option} is not an option of {' '.join(program)}"


# --------------------------------------------------------------------------- the tests


@pytest.mark.parametrize("command", [_param(command) for command in ALL_COMMANDS])
def test_documented_command(command: Command, sandboxes: Any) -> None:
    sandbox = sandboxes(command.doc)
    sandbox.run_doc_until(command)
    sandbox.done.add(command.line)
    if command.not_run is not None:
        check_exists(command.text, sandbox)
        return
    result = sandbox.run(sandbox.substitute(command.text))
    assert result.returncode == command.exit_code, (
        f"{command.id}: exit {result.returncode}\n{result.stdout}\n{result.stderr[-4000:]}"
    )
    check_output([sandbox.substitute(line) for line in command.output], result)
