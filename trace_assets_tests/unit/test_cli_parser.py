"""The command line without running a command: a parser for every command, and the defaults the
help states are the ones the configuration takes."""

from __future__ import annotations

import argparse
import re

from trace_assets.cli.parser import Command, build_parser
from trace_assets.defs.resources import config_from_env
from trace_assets.settings import PipelineSettings


def _command_parsers() -> dict[str, argparse.ArgumentParser]:
    [commands] = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(commands.choices)


def test_every_command_has_a_parser():
    assert set(_command_parsers()) == {command.value for command in Command}


def test_the_stated_defaults_are_the_configurations(tmp_path):
    """Each closed choice's help states the default the configuration takes (an option's dest is
    its setting's field)."""
    config = config_from_env({"DAGSTER_HOME": str(tmp_path)}, ())
    checked = set()
    for parser in _command_parsers().values():
        for action in parser._actions:
            if action.choices and action.dest in PipelineSettings.model_fields:
                [stated] = re.findall(r"default: (\w+)\)", action.help or "")
                assert stated == str(getattr(config, action.dest)), action.dest
                checked.add(action.dest)
    assert checked == {
        "scope_unit",
        "on_secret",
        "on_unverified",
        "on_near_miss",
        "on_private",
        "episodes",
        "success_filter",
        "subagents",
    }


def test_the_header_flag_repeats():
    args = build_parser().parse_args(
        ["backfill", "--all", "--webserver-header", "Authorization=Bearer a=b", "--webserver-header", "X-Team=t"]
    )
    assert args.dagster_headers == ["Authorization=Bearer a=b", "X-Team=t"]
    assert build_parser().parse_args(["backfill", "--all"]).dagster_headers is None
