"""The layer line is the folder line: each package imports only the layers below it, no module
imports itself back through others, and only `defs/`, `definitions.py` and the CLI import Dagster.
Beside the package, one direction: benchmarks may import test support, tests never import benchmarks.

Every import counts, those inside functions too: an import moved into a function still ties the
two modules together, it only hides the tie from a reader. Imports are absolute: the checks read
module names, so a relative import would pass them unseen.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import trace_assets

PACKAGE = Path(trace_assets.__file__).resolve().parent
TESTS = PACKAGE.parent / "trace_assets_tests"
BENCHMARKS = PACKAGE.parent / "benchmarks"
# Bottom to top, as docs/architecture.md draws them: a module imports only from its own layer and
# the layers before it. A top-level module (`settings.py`) is a layer of its own.
LAYERS = (
    "core",
    "runtime",
    "harbor",
    "secret_scan",
    "store",
    "steps",
    "publishing",
    "sweep",
    "settings",
    "orchestration",
    "defs",
    "definitions",
    "cli",
)
DAGSTER_LAYER = {"defs", "definitions", "cli"}
# Imports inside functions that are not the CLI's, each kept for start-up time, counted per import:
# (file, what it loads: a third party's package or one of ours) -> (how many imports, why).
HUB = "huggingface_hub loads only when a run publishes to the Hub"
DEFERRED_IMPORTS = {
    ("publishing/hub/base.py", "huggingface_hub"): (2, HUB),
    ("publishing/hub/batched.py", "huggingface_hub"): (4, HUB),
    ("publishing/hub/batched.py", "httpx2"): (1, "the Hub client's transport loads with it, only to publish"),
    ("publishing/hub/commit.py", "huggingface_hub"): (5, HUB),
    ("publishing/hub/reads.py", "huggingface_hub"): (4, HUB),
    ("publishing/hub/naming.py", "huggingface_hub"): (2, HUB),
    ("defs/sensors.py", "trace_assets.store.event_queue"): (
        1,
        "boto3 loads only when the sensor reads an SQS queue, not with the code location",
    ),
    ("publishing/blocked_version.py", "pyarrow"): (1, "`trace-assets status` reads PreviousVersion without pyarrow"),
    ("store/trace_store.py", "botocore"): (1, "only for an S3 root"),
    ("store/trace_store.py", "s3fs"): (1, "only for an S3 root"),
    ("store/trace_store.py", "trace_assets.store.hub_bucket"): (1, "huggingface_hub only for a bucket root"),
}
# Listing workers start with only these: they must import nothing heavy.
STDLIB_ONLY = {"store/local_walk.py", "runtime/process_pool.py", "store/__init__.py"}
HEAVY = {"dagster", "dagster_aws", "polars", "pyarrow", "fsspec", "s3fs", "huggingface_hub", "orjson", "trace_assets"}


@dataclass(frozen=True)
class Import:
    module: str  # the module the statement names, `a.b` for `from a.b import c`
    names: tuple[str, ...]  # with `from`: what it takes; else ()
    line: int
    in_function: bool


def _imports(path: Path) -> list[Import]:
    """Every absolute import of a file, at any depth, marked when it stands inside a function."""
    found = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.Import):
                found.extend(Import(alias.name, (), child.lineno, in_function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                names = tuple(alias.name for alias in child.names)
                found.append(Import(child.module, names, child.lineno, in_function))
            visit(child, inner)

    visit(ast.parse(path.read_text()), False)
    return found


def relative_imports(root: Path) -> list[str]:
    """`file:line` of every relative import under `root` (`_imports` reads absolute ones only)."""
    return [
        f"{path.relative_to(root.parent)}:{node.lineno}"
        for path in sorted(root.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.level
    ]


def imports_of(root: Path, package: str) -> list[str]:
    """`file:line -> module` for every import under `root` of `package` or a module inside it."""
    return [
        f"{path.relative_to(root.parent)}:{imported.line} -> {imported.module}"
        for path in sorted(root.rglob("*.py"))
        for imported in _imports(path)
        if imported.module.split(".")[0] == package
    ]


def deferred_imports(package: Path) -> dict[tuple[str, str], int]:
    """(file, what it loads) -> how many imports inside its functions load it, the CLI's left out:
    a third party's module is counted under its package, one of ours under its own name."""
    found: dict[tuple[str, str], int] = {}
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        for imported in _imports(path):
            if imported.in_function and not relative.startswith("cli/"):
                top = imported.module.split(".")[0]
                key = (relative, imported.module if top == package.name else top)
                found[key] = found.get(key, 0) + 1
    return found


def _module_names(imported: Import) -> set[str]:
    """The dotted names an import brings in, `from dagster import _core` as `dagster._core` too."""
    return {imported.module, *(f"{imported.module}.{name}" for name in imported.names)}


def _module_of(package: Path, path: Path) -> str:
    relative = path.relative_to(package.parent).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(parts)


def _layer(package: Path, path: Path) -> str:
    return path.relative_to(package).parts[0].removesuffix(".py")


def _project_edges(package: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (`from a.b import c` is `a.b.c` where c is a module)."""
    modules = {_module_of(package, path): path for path in package.rglob("*.py")}
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for imported in _imports(path):
            for target in _module_names(imported):
                if target in modules and target != name:
                    edges[name].add(target)
    # a package's __init__ is imported with any of its modules: keep only what names a module
    return edges


def edges_up(package: Path) -> list[str]:
    """`file:line (layer) -> module (layer)` for every import of a higher layer."""
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.parent == package and path.name == "__init__.py":
            continue
        mine = _layer(package, path)
        for imported in _imports(path):
            named = [imported.module] if "." in imported.module else sorted(_module_names(imported) - {imported.module})
            for target in named:
                parts = target.split(".")
                if parts[0] != package.name or len(parts) < 2 or parts[1] == mine:
                    continue
                theirs = parts[1]
                if theirs in LAYERS and LAYERS.index(theirs) > LAYERS.index(mine):
                    found.append(f"{path.relative_to(package)}:{imported.line} ({mine}) -> {target} ({theirs})")
    return found


def unplaced(package: Path) -> list[str]:
    """Top-level modules and packages that no layer names: a new one must be given its place."""
    return sorted(
        {
            _layer(package, path)
            for path in package.rglob("*.py")
            if path.relative_to(package).as_posix() != "__init__.py"
        }
        - set(LAYERS)
    )


def cycles(package: Path) -> list[list[str]]:
    """Groups of modules that import each other, directly or through others (Tarjan's components)."""
    edges = _project_edges(package)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(edges[node]):
            if successor not in index:
                connect(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            connect(node)
    return found


def test_every_module_has_a_layer():
    assert unplaced(PACKAGE) == []


def test_no_edge_up():
    assert edges_up(PACKAGE) == []


def test_no_import_cycle():
    assert cycles(PACKAGE) == []


def test_tests_never_import_benchmarks():
    """Benchmarks build on test support (the trace generator, the stand-in servers); were tests to
    import benchmarks too, the two would move as one."""
    assert imports_of(TESTS, "benchmarks") == []


@pytest.mark.parametrize("root", [PACKAGE, TESTS, BENCHMARKS], ids=lambda root: root.name)
def test_no_relative_imports(root):
    assert relative_imports(root) == []


def _fake_package(root: Path, files: dict[str, str]) -> Path:
    package = root / "trace_assets"
    for relative, text in {"__init__.py": "", **files}.items():
        (package / relative).parent.mkdir(parents=True, exist_ok=True)
        (package / relative).write_text(text)
    return package


def test_the_checks_catch_a_new_cycle_and_an_edge_up(tmp_path):
    """The two checks above fail on the kind of change they guard against."""
    package = _fake_package(
        tmp_path,
        {
            "core/__init__.py": "",
            "core/scope.py": "def f():\n    from trace_assets.steps.rows import g  # hidden in a function\n",
            "steps/__init__.py": "",
            "steps/rows.py": "from trace_assets.core.scope import f\n",
            "publishing/__init__.py": "",
            "publishing/card.py": "from trace_assets.publishing import shards\n",
            "publishing/shards.py": "import trace_assets.publishing.card\n",
            "loose.py": "",
        },
    )
    assert edges_up(package) == ["core/scope.py:2 (core) -> trace_assets.steps.rows (steps)"]
    assert cycles(package) == [
        ["trace_assets.core.scope", "trace_assets.steps.rows"],
        ["trace_assets.publishing.card", "trace_assets.publishing.shards"],
    ]
    assert unplaced(package) == ["loose"]


def test_the_checks_catch_a_relative_import_a_benchmark_and_one_more_deferred_import(tmp_path):
    """The direction, relative-import and per-import checks fail on what they guard against."""
    package = _fake_package(
        tmp_path,
        {
            "store/trace_store.py": "def f():\n    import s3fs\n    import s3fs.core\n",
            "store/hub_bucket.py": "from .trace_store import f\n",
        },
    )
    tests = tmp_path / "trace_assets_tests"
    tests.mkdir()
    (tests / "test_x.py").write_text("def test():\n    from benchmarks.generate_traces import generate_run\n")
    assert relative_imports(package) == ["trace_assets/store/hub_bucket.py:1"]
    assert imports_of(tests, "benchmarks") == ["trace_assets_tests/test_x.py:2 -> benchmarks.generate_traces"]
    assert deferred_imports(package) == {("store/trace_store.py", "s3fs"): 2}


def test_imports_inside_functions_only_for_start_up_time():
    """An import inside a function hides a tie between modules; the CLI's keep `--help` and
    argument errors free of Dagster, and the others are listed above, each counted, with their reason:
    a second deferred import in a listed file is a new tie too."""
    assert deferred_imports(PACKAGE) == {key: count for key, (count, _) in DEFERRED_IMPORTS.items()}


def test_no_domain_module_imports_dagster():
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if _layer(PACKAGE, path) in DAGSTER_LAYER:
            continue
        dagster = sorted(
            name
            for imported in _imports(path)
            for name in _module_names(imported)
            if name.split(".")[0] in ("dagster", "dagster_aws")
        )
        if dagster:
            offenders[path.relative_to(PACKAGE).as_posix()] = dagster
    assert offenders == {}


def test_no_module_imports_dagster_private_modules():
    """`dagster._*` modules are Dagster's internals: they move between releases, so upgrades break."""
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        private = sorted(
            name
            for imported in _imports(path)
            for name in _module_names(imported)
            if name.split(".")[0].startswith("dagster") and "._" in name
        )
        if private:
            offenders[path.relative_to(PACKAGE).as_posix()] = private
    assert offenders == {}


def test_defs_modules_are_the_only_dagster_users_and_all_use_it():
    """Every `defs/` module (bar the package marker) is a Dagster layer file."""
    for path in sorted((PACKAGE / "defs").glob("*.py")):
        if path.name != "__init__.py":
            assert any(imported.module.split(".")[0] == "dagster" for imported in _imports(path)), path.name


@pytest.mark.parametrize("relative", sorted(STDLIB_ONLY))
def test_listing_workers_start_on_the_standard_library(relative):
    heavy = sorted(
        name
        for imported in _imports(PACKAGE / relative)
        for name in _module_names(imported)
        if name.split(".")[0] in HEAVY
    )
    assert heavy == []


def test_the_cli_parses_arguments_without_importing_dagster():
    """`--help` and argument errors answer in a fraction of a second: Dagster loads only to run."""
    code = (
        "import sys, contextlib, io\n"
        "from trace_assets import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    cli.main(['--help'])\n"
        "with contextlib.redirect_stderr(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    cli.main(['materialize'])\n"
        "print(sorted(m for m in ('dagster', 'pyarrow', 'fsspec') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_definitions_load_without_the_hub_client():
    """huggingface_hub loads only when a run publishes to the Hub: a tenth of a second or more of every
    other run's start-up."""
    code = "import sys, trace_assets.definitions as d; d.defs(); print('huggingface_hub' in sys.modules)"
    roots = {"TRACE_ASSETS_TRACES_ROOT": "/data/traces", "TRACE_ASSETS_PUBLISH_ROOT": "/data/published"}
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("TRACE_ASSETS_")}, **roots}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert done.stdout.strip() == "False"


def test_status_loads_dagster_without_the_pipeline():
    """`trace-assets status` reads the instance only: the pipeline's modules (polars, pyarrow, the
    assets and the secret scan) were 0.8 s of its start-up."""
    code = (
        "import sys\n"
        "from trace_assets import cli\n"
        "from trace_assets.cli import instance, status\n"
        "from trace_assets.defs import sweep\n"
        "heavy = ('polars', 'pyarrow', 'huggingface_hub', 'fsspec', 'trace_assets.defs.assets')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "status._store('.')\n"  # with a traces root: its store, to mark the scopes whose traces are gone
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == ["[]", "['fsspec']"]


def test_the_sweep_view_names_what_the_definitions_define():
    """The view names the assets and job it reads of (so `status` need not load them): the same."""
    from trace_assets.defs import assets, jobs, sweep

    assert sweep.PUBLISHED_SHARDS == assets.published_shards.key
    assert sweep.RAW_TRIAL_LISTING == assets.raw_trial_listing.key
    assert sweep.SECRET_SCAN_REPORT == assets.secret_scan_report.key
    assert sweep.EXPORT_JOB == jobs.export_trace_run.name
