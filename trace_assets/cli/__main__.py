"""`python -m trace_assets.cli`: the console script from a checkout (the benchmarks run it so)."""

import sys

from trace_assets.cli import main

sys.exit(main())
