"""Real services for the integration tests: a PostgreSQL server, the Dagster webserver and daemon.

Everything listens on 127.0.0.1 on a free port, lives in a temporary folder, and is stopped
(process group and all) when the test is done, whether it passed or not.
"""

from __future__ import annotations

import dataclasses
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import psycopg2
import pytest
import requests
from dagster import DagsterInstance

from trace_assets_tests.support.helpers import PROJECT_DIR

PG_BIN = Path("/usr/lib/postgresql/15/bin")
CHROMIUM = Path("/usr/bin/chromium")
WORKSPACE = PROJECT_DIR / "workspace.yaml"
VENV_BIN = Path(sys.executable).parent
POSTGRES_OS_USER = "postgres"


def require_binary(path: Path, package: str) -> Path:
    """Fail (not skip) without the binary: CI installs it, so its absence is a broken setup."""
    if not os.access(path, os.X_OK):
        pytest.fail(
            f"{path} is missing: install the Debian package `{package}` with .ci/install-services.sh "
            "(CI runs it before the tests)",
            pytrace=False,
        )
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclasses.dataclass(frozen=True)
class PostgresServer:
    host: str
    port: int
    username: str
    password: str
    db_name: str

    def connect(self):
        return psycopg2.connect(
            host=self.host, port=self.port, user=self.username, password=self.password, dbname=self.db_name
        )

    def create_database(self, db_name: str) -> PostgresServer:
        """A fresh database on this server, so each test starts from empty Dagster tables."""
        connection = self.connect()
        connection.autocommit = True
        connection.cursor().execute(f"CREATE DATABASE {db_name}")
        connection.close()
        return dataclasses.replace(self, db_name=db_name)

    def dagster_storage_config(self) -> dict:
        """The `storage:` section of a dagster.yaml: runs, event logs and schedules in this database."""
        return {
            "postgres": {
                "postgres_db": {
                    "hostname": self.host,
                    "port": self.port,
                    "username": self.username,
                    "password": self.password,
                    "db_name": self.db_name,
                    # SQLAlchemy 2.1 maps a bare `postgresql://` to psycopg 3; dagster-postgres ships psycopg2.
                    "scheme": "postgresql+psycopg2",
                }
            }
        }


def _as_postgres_user(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root; as root, run it as the package's `postgres` user."""
    return ["runuser", "-u", POSTGRES_OS_USER, "--", *command] if os.geteuid() == 0 else command


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A throwaway PostgreSQL 15 cluster on 127.0.0.1 with password auth; tests create their databases."""
    initdb = require_binary(PG_BIN / "initdb", "postgresql")
    pg_ctl = require_binary(PG_BIN / "pg_ctl", "postgresql")
    server = PostgresServer("127.0.0.1", free_port(), "trace_assets", "pg-test-password", "postgres")
    root = Path(tempfile.mkdtemp(prefix="trace-assets-postgres-"))
    data, log, password_file = root / "data", root / "postgres.log", root / "password"
    password_file.write_text(server.password)
    if os.geteuid() == 0:
        owner = pwd.getpwnam(POSTGRES_OS_USER)
        for path in (root, password_file):
            os.chown(path, owner.pw_uid, owner.pw_gid)

    def as_postgres(*command: str) -> None:
        result = subprocess.run(_as_postgres_user(list(command)), capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            server_log = log.read_text() if log.exists() else ""
            pytest.fail(f"{' '.join(command)} failed:\n{result.stdout}{result.stderr}{server_log}", pytrace=False)

    try:
        as_postgres(
            str(initdb), "-D", str(data), "-U", server.username, f"--pwfile={password_file}",
            "--auth=scram-sha-256", "--encoding=UTF8", "--locale=C", "--no-sync",
        )  # fmt: skip
        options = f"-h {server.host} -p {server.port} -k {root} -c fsync=off -c synchronous_commit=off"
        as_postgres(str(pg_ctl), "-D", str(data), "-l", str(log), "-o", options, "-w", "-t", "60", "start")
        yield server
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(_as_postgres_user([str(pg_ctl), "-D", str(data), "-m", "fast", "-w", "stop"]), check=False)
        shutil.rmtree(root, ignore_errors=True)


def service_env(dagster_home: Path, **trace_assets_env: str) -> dict[str, str]:
    """This process's environment without TRACE_ASSETS_*, HF_* or DAGSTER_* settings a developer exported."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACE_ASSETS_", "HF_", "DAGSTER_"))}
    return {**env, "DAGSTER_HOME": str(dagster_home), **trace_assets_env}


def stop_process_group(process: subprocess.Popen, grace_seconds: float = 20) -> None:
    """SIGTERM the process's whole group, then SIGKILL whatever is left of it after the grace period."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace_seconds
    while time.monotonic() < deadline:
        process.poll()  # reaps the leader, which would otherwise keep the group alive as a zombie
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=10)


@dataclasses.dataclass(frozen=True)
class ServiceProcess:
    process: subprocess.Popen
    log: Path

    def log_tail(self, chars: int = 4000) -> str:
        return f"--- {self.log}\n{self.log.read_text(errors='replace')[-chars:]}"

    def require_alive(self) -> None:
        if self.process.poll() is not None:
            pytest.fail(f"{self.process.args[0]} exited with {self.process.returncode}:\n{self.log_tail()}")


@contextmanager
def running_service(command: list[str], env: Mapping[str, str], log: Path) -> Iterator[ServiceProcess]:
    """The command in a process group of its own, so its code servers and run workers stop with it."""
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=PROJECT_DIR, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield ServiceProcess(process, log)
    finally:
        stop_process_group(process)


@dataclasses.dataclass(frozen=True)
class Webserver(ServiceProcess):
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextmanager
def running_webserver(dagster_home: Path, env: Mapping[str, str], timeout: float = 120) -> Iterator[Webserver]:
    """`dagster-webserver` on the project's workspace, once its /server_info answers."""
    # Create the instance's databases up front: processes creating them at once corrupt alembic's stamp.
    DagsterInstance.from_config(str(dagster_home)).dispose()
    port = free_port()
    command = [str(VENV_BIN / "dagster-webserver"), "-h", "127.0.0.1", "-p", str(port), "-w", str(WORKSPACE)]
    with running_service(command, env, dagster_home / "webserver.log") as service:
        webserver = Webserver(service.process, service.log, port)
        deadline = time.monotonic() + timeout
        while True:
            webserver.require_alive()
            try:
                if requests.get(f"{webserver.url}/server_info", timeout=2).ok:
                    break
            except requests.ConnectionError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"{webserver.url}/server_info did not answer within {timeout:.0f}s\n{webserver.log_tail()}")
            time.sleep(0.5)
        yield webserver


@contextmanager
def running_daemon(dagster_home: Path, env: Mapping[str, str]) -> Iterator[ServiceProcess]:
    """`dagster-daemon run`: dequeues queued runs (and ticks sensors) for the instance in dagster_home."""
    command = [str(VENV_BIN / "dagster-daemon"), "run", "-w", str(WORKSPACE)]
    with running_service(command, env, dagster_home / "daemon.log") as daemon:
        yield daemon
