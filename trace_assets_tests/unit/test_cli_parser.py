"""The command line without running a command: a parser for every command, and the defaults the
help states are the ones the configuration takes."""

from __future__ import annotations

import argparse
import re

from trace_assets.cli.parser import Command, build_parser
from trace_assets.defs.resources import config_from_env

# option dest -> the configuration field whose default its help states
STATED = {
    "scope": "scope_unit",
    "on_secret": "on_secret",
    "on_unverified": "on_unverified",
    "on_private": "on_private",
    "episodes": "episodes",
    "filter": "success_filter",
    "subagents": "subagents",
}


def _command_parsers() -> dict[str, argparse.ArgumentParser]:
    [commands] = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(commands.choices)


def test_every_command_has_a_parser():
    assert set(_command_parsers()) == {command.value for command in Command}


def test_the_stated_defaults_are_the_configurations(tmp_path):
    config = config_from_env({"DAGSTER_HOME": str(tmp_path)})
    checked = set()
    for parser in _command_parsers().values():
        for action in parser._actions:
            if action.dest in STATED:
                [stated] = re.findall(r"default: (\w+)\)", action.help or "")
                assert stated == str(getattr(config, STATED[action.dest])), action.dest
                checked.add(action.dest)
    assert checked == set(STATED)


def test_the_header_flag_repeats():
    args = build_parser().parse_args(
        ["backfill", "--all", "--webserver-header", "Authorization=Bearer a=b", "--webserver-header", "X-Team=t"]
    )
    assert args.webserver_headers == ["Authorization=Bearer a=b", "X-Team=t"]
    assert build_parser().parse_args(["backfill", "--all"]).webserver_headers == []
