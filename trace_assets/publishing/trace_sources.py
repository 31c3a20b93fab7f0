"""`--subagents separate`: each trace source published as a config of its own, as Harbor's
`merge_subagents=False` returns a dataset per source (`main`, then one per subagent kind).

The rows are staged merged, with `trace_source`; publishing selects each source's rows and drops
the column. `main` is the default config in `data/`, each subagent kind a config in `data/<kind>/`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from trace_assets.harbor.rows import MAIN_TRACE_SOURCE, TRACE_SOURCE_COLUMN
from trace_assets.publishing.shards import DATA_DIR
from trace_assets.steps.staged_rows import RowParts

Transform = Callable[[pa.Table], pa.Table]


def source_counts(rows: RowParts) -> Counter[str]:
    """Rows per trace source, reading that column only; `main` always present (the default config)."""
    counts: Counter[str] = Counter({MAIN_TRACE_SOURCE: 0})
    for path in rows.files:
        counts.update(pq.read_table(path, columns=[TRACE_SOURCE_COLUMN]).column(0).to_pylist())
    return counts


def data_dir(source: str) -> str:
    return DATA_DIR if source == MAIN_TRACE_SOURCE else f"{DATA_DIR}/{source}"


def only_source(source: str, then: Transform | None) -> Transform:
    """The rows of one source, without `trace_source`, then `then` (redaction) if any."""

    def select(table: pa.Table) -> pa.Table:
        chosen = table.filter(pc.equal(table.column(TRACE_SOURCE_COLUMN), source))
        chosen = chosen.drop_columns([TRACE_SOURCE_COLUMN])
        return then(chosen) if then else chosen

    return select
