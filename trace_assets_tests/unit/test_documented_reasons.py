"""The docs' tables of reason codes say what the code says: each code once, with its description.

README.md's table of exclusion reasons is `accounting.REASON_DESCRIPTIONS`; docs/dataset-format.md's
table of session skips is `harbor.sessions.SESSION_SKIP_DESCRIPTIONS`. Each table follows an HTML
comment naming its source, so a table that moves is still found.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from trace_assets.core.accounting import REASON_DESCRIPTIONS, Reason
from trace_assets.harbor.sessions import SESSION_SKIP_DESCRIPTIONS, SessionSkip

PROJECT_DIR = Path(__file__).resolve().parents[2]
ROW = re.compile(r"\|\s*`(?P<code>[^`]+)`\s*\|\s*(?P<meaning>.*?)\s*\|")


def documented_table(doc: str, marker: str) -> dict[str, str]:
    """The rows of the first Markdown table after `<!-- marker: ... -->` in `doc`."""
    lines = (PROJECT_DIR / doc).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(f"<!-- {marker}:"))
    rows: dict[str, str] = {}
    for line in lines[start + 3 :]:  # the comment, the header, the rule
        if not line.startswith("|"):
            break
        found = ROW.fullmatch(line.strip())
        assert found, f"{doc}: not a `code` | meaning row: {line}"
        assert found["code"] not in rows, f"{doc}: {found['code']} twice"
        rows[found["code"]] = found["meaning"]
    return rows


@pytest.mark.parametrize(
    ("doc", "marker", "codes", "descriptions"),
    [
        ("README.md", "reasons-table", Reason, REASON_DESCRIPTIONS),
        ("docs/dataset-format.md", "session-skips-table", SessionSkip, SESSION_SKIP_DESCRIPTIONS),
    ],
)
def test_a_docs_table_of_codes_is_the_codes_descriptions(doc, marker, codes, descriptions) -> None:
    assert set(descriptions) == set(codes), "every code has a description"
    assert documented_table(doc, marker) == {code.value: text for code, text in descriptions.items()}
