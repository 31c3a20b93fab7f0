"""Harbor's ShareGPT conversion (`openai_to_sharegpt`): the `conversations_sharegpt` column."""

from __future__ import annotations

import pyarrow as pa

SHAREGPT_COLUMN = "conversations_sharegpt"
SHAREGPT_TYPE = pa.list_(pa.struct([("from", pa.string()), ("value", pa.string())]))
_ROLES = {"user": "human", "assistant": "gpt", "system": "system"}  # any other role is dropped, as Harbor does


def to_sharegpt(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """OpenAI-style `{role, content}` messages as ShareGPT `{from, value}` ones."""
    return [{"from": _ROLES[m["role"]], "value": m["content"]} for m in messages if m["role"] in _ROLES]
