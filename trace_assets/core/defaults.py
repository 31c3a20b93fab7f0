"""The defaults of the settings that the domain's code falls back to without settings (tests,
benchmarks, a caller of the library), each written once: `settings.py` declares its fields with them.

They live here, below every layer, because the settings may not import the modules that use them
(those load polars, pyarrow or fsspec, and the CLI's `--help` reads the settings), and those modules
may not import the settings (a layer above theirs).
"""

DEFAULT_LEASE_SECONDS = 600.0  # a dead holder's lease on a scope staged on object storage blocks it this long
DEFAULT_WRAP_WIDTH = 160  # Terminus-2's terminal width, whose hard wraps the secret scan joins
DEFAULT_ROWS_PER_SHARD = 2000
DEFAULT_BATCH_BYTES = 128 * 2**20  # parsed JSON takes a few times its bytes: well under 1 GB RSS
DEFAULT_FETCH_AHEAD = 1  # one batch in flight while one is parsed hides a round trip per batch
DEFAULT_PUBLISH_CONCURRENCY = 64  # object-storage PUTs in flight at once while a phase's files go up
