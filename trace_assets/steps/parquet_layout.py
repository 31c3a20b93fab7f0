"""How every published Parquet file is written (shards, the staged parts copied as shards, and
`trials.parquet`): as `datasets` 5.x's Parquet writer writes them, and so the Hub's own uploads.

`datasets.arrow_writer.ParquetWriter` (and `Dataset.to_parquet`) pass pyarrow
`use_content_defined_chunking=config.DEFAULT_CDC_OPTIONS` and `write_page_index=True`, and record
the chunking options in the file's key-value metadata under `content_defined_chunking`. Content-
defined chunking cuts data pages where the content says, not every so many bytes, so rows that did
not change give the same page bytes in the next version even when rows were inserted before them,
which the Hub's Xet storage then does not upload again; the page index (offset and column indexes)
lets readers fetch single pages. Compression (snappy) and dictionaries stay pyarrow's defaults, as
`datasets` sets them for columns that embed no files. These need pyarrow 21 or newer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

# datasets.config.DEFAULT_CDC_OPTIONS in datasets 5.x
CDC_OPTIONS: dict[str, int] = {"min_chunk_size": 256 * 1024, "max_chunk_size": 1024 * 1024, "norm_level": 0}
CDC_METADATA_KEY = "content_defined_chunking"


def writer_options() -> dict[str, Any]:
    return {"use_content_defined_chunking": CDC_OPTIONS, "write_page_index": True}


def published_writer(where: Path | str, schema: pa.Schema) -> pq.ParquetWriter:
    """A ParquetWriter laid out as the Hub writes Parquet (see the module)."""
    options = writer_options()
    writer = pq.ParquetWriter(where, schema, **options)
    if options.get("use_content_defined_chunking"):
        writer.add_key_value_metadata({CDC_METADATA_KEY: json.dumps(options["use_content_defined_chunking"])})
    return writer


def write_published_table(table: pa.Table, where: Path | str) -> None:
    writer = published_writer(where, table.schema)
    try:
        writer.write_table(table)
    finally:
        writer.close()


def written_so(path: Path) -> bool:
    """Whether the file was written with today's layout (staged by an earlier version, it was not)."""
    metadata = pq.read_metadata(path).metadata or {}
    options = writer_options().get("use_content_defined_chunking")
    if not options:
        return CDC_METADATA_KEY.encode() not in metadata
    return metadata.get(CDC_METADATA_KEY.encode()) == json.dumps(options).encode()
