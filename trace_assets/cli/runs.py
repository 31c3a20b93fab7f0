"""`trace-assets runs`: the scope keys under the traces root, one a line, for scripts and for
checking what `backfill --all` would take."""

from __future__ import annotations

import argparse

from trace_assets.cli.config import config_from_args
from trace_assets.cli.scopes import listed_scopes


def run(args: argparse.Namespace) -> int:
    for scope in listed_scopes(config_from_args(args)):
        print(scope)
    return 0
