"""`trace-assets recheck`: record, for each scope, a request the sensor reads at its next tick (see
`defs/recheck.py`, shared with the UI's `recheck_scopes` job); a run stands for its step partitions."""

from __future__ import annotations

import argparse
import getpass
import json
import socket

from trace_assets.cli.console import say
from trace_assets.cli.instance import get_instance
from trace_assets.core.scope import validate_scope_keys


def run(args: argparse.Namespace) -> int:
    from trace_assets.defs.recheck import request_rechecks, unknown_scope_reason

    keys = validate_scope_keys(args.run_ids)
    requested_by = f"trace-assets recheck ({getpass.getuser()}@{socket.gethostname()})"
    asked = request_rechecks(get_instance(), keys, requested_by)
    for key, scopes in asked.items():
        if not scopes:
            reason = unknown_scope_reason(key)
            say(reason)
            print(json.dumps({"run_id": key, "status": "unknown", "reason": reason}), flush=True)
        for scope in scopes:
            say(f"{scope}: re-check requested; the sensor lists it at its next tick")
            print(json.dumps({"run_id": scope, "status": "recheck_requested"}), flush=True)
    return 1 if not all(asked.values()) else 0
