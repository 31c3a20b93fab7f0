"""The command line: each command takes only the options it uses, and its `--help` says what it
does, gives examples, and names each option's environment variable and default.

An unset option leaves the environment's value (`TRACE_ASSETS_*`, read in `config.py`), so the
argparse defaults are None and each help text states the real default itself. This module imports
nothing heavy: `--help` and argument errors answer at once (`unit/test_layers.py`).
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Callable
from enum import StrEnum
from typing import Any

from pydantic import BaseModel

from trace_assets.settings import (
    Group,
    PipelineSettings,
    ProcessSettings,
    choices,
    declared,
    default_text,
    env_name,
    meta,
    plain,
)

WIDTH = 78  # argparse's own on an 80-column terminal


class Command(StrEnum):
    """The commands as typed; `trace_assets.cli.main` runs each with its module's `run`."""

    RUNS = "runs"
    MATERIALIZE = "materialize"
    BACKFILL = "backfill"
    STATUS = "status"
    FORGET = "forget"
    RECHECK = "recheck"


DESCRIPTION = """\
Turn Harbor RL trace folders into published datasets (a folder, an S3 prefix or the Hugging Face
Hub) through the same Dagster job and instance (DAGSTER_HOME) as the UI, so every run shows there:
list the runs under a traces root, materialize them here and now, queue a backfill of them for the
daemon, print the sweep view of what is published, forget runs gone from the traces root, or ask
the sensor to re-check scopes.

Settings come from TRACE_ASSETS_* environment variables; a command's options override them, and a
bad value of either is refused before any work. Progress goes to stderr, one line a message;
stdout carries one JSON line per scope, for scripts (`runs` and `status` print plain lines).
Exit status: 0 when every scope succeeded, 1 when one failed, was blocked or was refused, 2 when
the command could not start (a usage or settings error; for `runs` and `backfill`, a traces root or
run that is not there)."""

EPILOG = """\
examples:
  trace-assets runs --traces-root s3://bucket/traces
  trace-assets materialize rl-sample-run --dry-run
  trace-assets materialize rl-sample-run --publish-root hf://datasets/org/traces --on-secret redact
  trace-assets backfill --all --wait
  trace-assets status

`trace-assets COMMAND --help` gives a command's options, their defaults and examples."""


def _paragraphs(text: str) -> str:
    """Prose filled to the width argparse wraps options to, paragraphs kept apart (the formatter
    keeps descriptions and examples as given, so the examples' lines stay whole)."""
    return "\n\n".join(
        textwrap.fill(" ".join(p.split()), WIDTH, break_on_hyphens=False)
        for p in textwrap.dedent(text).strip().split("\n\n")
    )


def _env(variable: str, default: str) -> str:
    """The suffix every settable option's help ends with: where else it is set, and its default."""
    return f" (env {variable}; default: {default})"


def _setting(parser: argparse._ActionsContainer, model: type[BaseModel], name: str) -> None:
    """A setting's option, as declared: an unset option leaves the environment's value (None)."""
    field = model.model_fields[name]
    found = meta(field)
    kwargs: dict[str, Any] = {"dest": name, "help": plain(field.description or "")}
    kwargs["help"] += _env(found.env, plain(default_text(field)))
    if field.annotation is bool:
        kwargs.update(action="store_false" if field.default else "store_true", default=None)
    elif found.repeatable:
        kwargs.update(action="append", metavar=found.metavar)
    else:
        kwargs["choices" if choices(field) else "metavar"] = choices(field) or found.metavar or None
        if found.bare_value:
            kwargs.update(nargs="?", const=found.bare_value)
    parser.add_argument(found.flag, **kwargs)


def _traces_root(parser: argparse.ArgumentParser) -> None:
    _setting(parser, PipelineSettings, "traces_root")


def _root_shown(parser: argparse.ArgumentParser) -> None:
    """`status`'s root, optional: it only narrows the view."""
    parser.add_argument(
        "--traces-root",
        metavar="URL",
        help=f"show only the scopes listed from this root (env {env_name(PipelineSettings, 'traces_root')}); "
        "without one, every scope",
    )


def _scope(parser: argparse.ArgumentParser) -> None:
    _traces_root(parser)
    _setting(parser, PipelineSettings, "scope_unit")


def _publishing(parser: argparse.ArgumentParser) -> None:
    """What `materialize` and `backfill` publish, where, and what stops them: every pipeline
    setting that has an option, a group of options per group of settings."""
    groups: dict[Group, argparse._ActionsContainer] = {Group.ROOTS: parser}
    for model, name, field in declared():
        found = meta(field)
        if model is PipelineSettings and found.flag:
            if found.group not in groups:
                groups[found.group] = parser.add_argument_group(f"{found.group.value} options")
            _setting(groups[found.group], model, name)


def _command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    command: Command,
    summary: str,
    description: str,
    examples: list[str],
    options: Callable[[argparse.ArgumentParser], None] | None = None,
) -> argparse.ArgumentParser:
    """A command with its one-line summary (in the command list), description and examples."""
    epilog = "examples:\n" + "\n".join(f"  {example}" for example in examples)
    parser = commands.add_parser(
        command,
        help=summary,
        description=_paragraphs(description),
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # `trace-assets COMMAND -v` as well as `trace-assets -v COMMAND`
    parser.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    if options:
        options(parser)
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trace-assets",
        description=_paragraphs(DESCRIPTION),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="Dagster's full log, and stack traces on failure (default: off)"
    )
    commands = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")

    _command(
        commands,
        Command.RUNS,
        "list the scopes (runs, or runs' steps) under the traces root",
        """
        Print the scope keys under the traces root, one a line: with --scope step, a run whose
        trace_jobs/ holds only step folders as RUN/step-N, one line a step; any other run as
        itself. Folders whose names cannot be run ids are named on stderr and skipped.
        """,
        ["trace-assets runs", "trace-assets runs --traces-root s3://bucket/traces --scope run"],
        _scope,
    )

    materialize = _command(
        commands,
        Command.MATERIALIZE,
        "export runs now, in this process (--dry-run: say what would be published)",
        """
        Run the export graph (listing, scores, rows, secret scan, publish) for each RUN_ID now, in
        this process, on the instance the UI shows. A run stands for its steps under --scope step;
        RUN/step-N names one step. Every scope is checked first (that it is under the traces root,
        that its publish target takes writes); then one JSON line a scope: coverage, and where it
        was published or why not. Exit 1 if any scope failed, was blocked or was refused.
        """,
        [
            "trace-assets materialize rl-sample-run",
            "trace-assets materialize sweep-run/step-3 --dry-run --raw-scan",
            "trace-assets materialize run-a run-b --traces-root s3://bucket/traces \\\n"
            "      --publish-root hf://datasets/org/traces --on-secret redact --episodes all",
        ],
        _publishing,
    )
    materialize.add_argument("run_ids", nargs="+", metavar="RUN_ID", help="a run, or one step of it (RUN/step-N)")
    materialize.add_argument(
        "--dry-run",
        action="store_true",
        help="list, score and scan into staging, and print coverage, the scan verdict and what would be "
        "published; publish nothing, record no Dagster run (default: off)",
    )

    backfill = _command(
        commands,
        Command.BACKFILL,
        "queue a Dagster backfill (one run per scope) for the daemon to run",
        """
        Queue a Dagster asset backfill of the given runs, or of every run under the traces root
        (--all): one run per scope, launched by the daemon (dagster-daemon, or `make dev`) within
        dagster.yaml's limits, shown on the UI's backfill page. The runs take this command's
        settings (environment and options). The backfill goes through Dagster's GraphQL API: of
        the webserver at --webserver, else of a private one started for the command. Prints the
        backfill's id; with --wait, one JSON line a run once all have finished, exit 1 if any failed.
        """,
        [
            "trace-assets backfill --all",
            "trace-assets backfill run-a run-b/step-2 --on-secret redact --wait",
            "trace-assets backfill --all --webserver https://dagster.example.org \\\n"
            '      --webserver-header "Authorization=Bearer $DAGSTER_TOKEN"',
        ],
        _publishing,
    )
    chosen = backfill.add_mutually_exclusive_group(required=True)
    chosen.add_argument("--all", action="store_true", help="every run under the traces root")
    chosen.add_argument(
        "run_ids", nargs="*", metavar="RUN_ID", default=[], help="a run, or one step of it (RUN/step-N)"
    )
    daemon = backfill.add_argument_group("backfill options")
    daemon.add_argument(
        "--wait",
        action="store_true",
        help="wait until every run has finished; one line per run, exit 1 if any failed (default: off)",
    )
    _setting(daemon, ProcessSettings, "dagster_url")
    _setting(daemon, ProcessSettings, "dagster_headers")

    _command(
        commands,
        Command.STATUS,
        "the sweep view: every scope tried, its state and why, from the instance",
        """
        Print the sweep view: one line per scope tried (its state: published, blocked, refused,
        failed, exporting, canceled or not exported yet; trial folders, scored, exported, export
        ratio, mean reward, rows, secret verdict and when, of what is published), the reason of a
        scope that did not publish on the line under it, and per-run and sweep totals; the
        sweep_coverage asset's table. Needs no staging. With a traces root (the option or the
        environment's), only the scopes listed from it, and a line counting those of other roots
        on the instance; without one, every scope.
        """,
        ["trace-assets status", "DAGSTER_HOME=/srv/dagster trace-assets status --traces-root s3://bucket/traces"],
        _root_shown,
    )

    forget = _command(
        commands,
        Command.FORGET,
        "remove the partitions and staging of runs gone from the traces root",
        """
        Remove the partitions and staging folders of runs that are gone from the traces root, so
        the UI and the sweep view stop listing them; their published datasets stay. A
        run stands for all its step partitions. A run still under the traces root is refused
        (the sensor would list it again).
        """,
        ["trace-assets forget old-run", "trace-assets forget old-run/step-2 --traces-root s3://bucket/traces"],
        _traces_root,
    )
    forget.add_argument("run_ids", nargs="+", metavar="RUN_ID", help="a run, or one step of it (RUN/step-N)")

    recheck = _command(
        commands,
        Command.RECHECK,
        "make the sensor list these scopes again at its next tick, whatever their back-off",
        """
        Make the sensor list these scopes again at its next tick, whatever their back-off (after
        fixing a run's files, or a setting). The request is recorded on the instance, as the UI's
        recheck_scopes job records it. Exit 1 if a key names no partition the sensor knows.
        """,
        ["trace-assets recheck sweep-run", "trace-assets recheck sweep-run/step-3 other-run"],
    )
    recheck.add_argument(
        "run_ids", nargs="+", metavar="SCOPE", help="a scope key (RUN/step-N), or a run: all its steps"
    )
    return parser
