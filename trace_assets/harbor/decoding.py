"""JSON from bytes a trial folder holds, with a one-line reason instead of an exception.

Hostile input, decided here once for every file: a lone UTF-16 surrogate (`"\\ud800"`, which
no UTF-8 encoder takes) becomes U+FFFD and is counted, as the rest of the file is good data;
an integer beyond float range (a 401-digit reward) is kept as its digits, as text
(`NumberText`), since Python can neither make a float of it nor print one past 4,300 digits;
nesting too deep to parse is a reason like any other malformed JSON.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

LONE_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"
FLOAT_DIGITS = 308  # integers of more digits than this overflow a float


class NumberText(str):
    """A JSON number kept as its text: too large for a float."""


def _number(digits: str) -> int | str:
    return int(digits) if len(digits) <= FLOAT_DIGITS else NumberText(digits)


def _repaired_text(text: str) -> tuple[str, int]:
    if text.isascii():
        return text, 0
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return LONE_SURROGATE.subn(REPLACEMENT, text)
    return text, 0


def _repaired(value: Any) -> tuple[Any, int]:
    """The value with lone surrogates replaced in every string and key, and how many were."""
    if isinstance(value, str):
        return _repaired_text(value)
    if isinstance(value, list):
        total = 0
        for index, item in enumerate(value):
            value[index], count = _repaired(item)
            total += count
        return value, total
    if isinstance(value, dict):
        total = 0
        repaired = {}
        for key, item in value.items():
            new_key, key_count = _repaired_text(key)
            repaired[new_key], count = _repaired(item)
            total += key_count + count
        return repaired, total
    return value, 0


def decode_json(data: bytes, what: str) -> tuple[Any, int] | str:
    """Parse JSON bytes into (value, lone surrogates replaced); on failure a one-line reason.

    orjson does the work; what it refuses (and Python's json accepts: NaN, lone surrogates,
    huge integers) gets a second try with json, which also words the reason.
    """
    try:
        return orjson.loads(data), 0
    except orjson.JSONDecodeError:
        pass
    if not data.strip():
        return f"{what} is empty"
    try:
        return _repaired(json.loads(data.decode("utf-8"), parse_int=_number))
    except UnicodeDecodeError as err:
        return f"{what} is not UTF-8 (byte {err.start})"
    except json.JSONDecodeError as err:
        return f"{what} is not valid JSON: {err.msg} at line {err.lineno} column {err.colno}"
    except RecursionError:
        return f"{what} is nested too deeply to parse"
    except ValueError as err:
        return f"{what} could not be read: {err}"


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
