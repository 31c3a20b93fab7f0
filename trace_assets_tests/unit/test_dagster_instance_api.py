"""The package calls `DagsterInstance` through Dagster's public API (the members Dagster marks
`@public`, those its API docs show), except the calls listed in `OUTSIDE_PUBLIC_API`, each with no
public path; docs/architecture.md ("Dagster calls outside its public API") says why for each.

A call counts when its receiver is an instance (a name or attribute ending in `instance`, or a
local bound to one), or one of the instance's storages (`instance.event_log_storage`, or a local
bound to it): the storages have no public member at all.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import dagster as dg

# Dagster's own marker of its public API; it has no public accessor (the one private import here).
from dagster._annotations import is_public

import trace_assets

PACKAGE = Path(trace_assets.__file__).resolve().parent
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"
SECTION = "## Dagster calls outside its public API"
STORAGES = {"event_log_storage", "run_storage", "schedule_storage"}

# Each non-public member the package uses, and the modules that use it. The doc section lists the
# same names, with why no public path exists and what breaks if Dagster moves it.
OUTSIDE_PUBLIC_API = {
    "report_run_failed": {"cli/instance.py"},
    "event_log_storage": {"cli/instance.py", "cli/materialize.py"},
    "get_concurrency_keys": {"cli/instance.py", "cli/materialize.py"},
    "get_concurrency_info": {"cli/instance.py", "cli/materialize.py"},
    "free_concurrency_slots_for_run": {"cli/instance.py"},
    "all_logs": {"defs/assets.py", "defs/sweep.py"},
    "add_run_tags": {"defs/sweep_coverage.py"},
}


def _is_instance(node: ast.expr, instances: set[str]) -> bool:
    text = ast.unparse(node)
    return text.lower().endswith("instance") or text in instances


def _is_storage(node: ast.expr, storages: set[str]) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr in STORAGES) or ast.unparse(node) in storages


def non_public_uses(tree: ast.AST) -> set[str]:
    """The non-public instance and storage members a module uses."""
    instances: set[str] = set()  # locals bound to an instance or a storage, e.g. `storage = instance.event_log_storage`
    storages: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if _is_storage(node.value, storages):
                storages.add(name)
            elif isinstance(node.value, ast.Attribute) and node.value.attr == "instance":
                instances.add(name)
    used = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or node.attr.startswith("_"):
            continue
        if _is_storage(node.value, storages):
            used.add(node.attr)  # the storages have no public member
        elif _is_instance(node.value, instances) and hasattr(dg.DagsterInstance, node.attr):
            if not is_public(getattr(dg.DagsterInstance, node.attr)):
                used.add(node.attr)
    return used


def package_uses() -> dict[str, set[str]]:
    uses: dict[str, set[str]] = defaultdict(set)
    for path in sorted(PACKAGE.rglob("*.py")):
        for name in non_public_uses(ast.parse(path.read_text(), str(path))):
            uses[name].add(path.relative_to(PACKAGE).as_posix())
    return dict(uses)


def test_the_package_calls_the_instance_outside_its_public_api_only_where_listed():
    assert package_uses() == OUTSIDE_PUBLIC_API


def test_the_architecture_doc_lists_the_same_calls():
    text = ARCHITECTURE.read_text()
    assert SECTION in text
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    listed = {name for row in rows for name in re.findall(r"`(\w+)`", row.split("|")[1])}
    assert listed == set(OUTSIDE_PUBLIC_API)


def test_a_new_non_public_call_is_caught_through_any_receiver():
    module = ast.parse(
        "def sensor(context):\n"
        "    context.instance.get_runs()\n"
        "    instance = context.instance\n"
        "    instance.wipe()\n"
        "    storage = instance.run_storage\n"
        "    storage.delete_run('x')\n"
        "    instance.get_run_records()\n"  # public
        "    context.instance.fetch_materializations('a')\n"  # public
        "    objects.storage_options\n"  # not an instance's
    )
    assert non_public_uses(module) == {"get_runs", "wipe", "run_storage", "delete_run"}
