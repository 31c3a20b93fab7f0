"""JSON from bytes a trial folder holds, with a one-line reason instead of an exception."""

from __future__ import annotations

import json
from typing import Any

import orjson


def decode_json(data: bytes, what: str) -> Any | str:
    """Parse JSON bytes; on failure return a one-line reason instead of raising.

    orjson does the work; what it refuses (and Python's json accepts: NaN, lone surrogates,
    huge integers) gets a second try with json, which also words the reason.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    if not data.strip():
        return f"{what} is empty"
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as err:
        return f"{what} is not UTF-8 (byte {err.start})"
    except json.JSONDecodeError as err:
        return f"{what} is not valid JSON: {err.msg} at line {err.lineno} column {err.colno}"
    except RecursionError:
        return f"{what} is nested too deeply to parse"


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
