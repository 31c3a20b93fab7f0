"""Hypothesis strategies for the values a trial folder's JSON can hold, and a run written from them.

Every field the rows, card and metadata read (reward, task, agent, model, started_at, trial name,
message contents, tool call arguments) is drawn from ordinary text and from what attacks it: NaN,
infinities, 1e308s and 400-digit integers, negatives, empty and 100k-character strings, control
characters, Markdown/HTML/YAML-significant text, lone surrogates, and lists, objects and booleans
where a string or number belongs. Files are written with Python's json (`NaN`, `Infinity`, big
integers, `\\ud800` escapes), sometimes unescaped, lone surrogates then as the bytes they encode to.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from trace_assets_tests.support.bad_input import GOOD, result_json

LONG = "x" * 100_000
MARKUP = [
    "",
    " ",
    "---",
    "\n---\nlicense: evil\n---\n",
    "| a | b |\n|---|---|",
    "<script>alert(1)</script>",
    "{{ config }}",
    "{% raw %}",
    "key: value",
    "- item\n## Heading",
    "`code` ``two``",
    "]]><!--",
    "&amp; &#0;",
    "\x00\x01\x1b[31m\r\x7f\u2028\ufeff",
    "\ud800",
    "a\udc00b",
    "🙂" * 3,
    LONG,
    "<|" * 50_000,
]
NUMBERS = [float("nan"), float("inf"), float("-inf"), 1e308, -1e308, 1.7976931348623157e308, 10**400, -(10**400), -1, 0]

texts = st.one_of(
    st.sampled_from(MARKUP),
    st.text(st.characters(codec=None, categories=["L", "N", "P", "S", "Z", "Cc", "Cs"]), max_size=20),
)
numbers = st.one_of(
    st.sampled_from(NUMBERS),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**400), max_value=10**400),
)
scalars = st.one_of(texts, numbers, st.booleans(), st.none())
values = st.one_of(
    scalars, st.lists(scalars, max_size=3), st.dictionaries(st.sampled_from(MARKUP[:12]), scalars, max_size=2)
)
# A field: mostly an ordinary string, often something hostile.
fields = st.one_of(st.text("abcdefghij-_ ", min_size=1, max_size=12), values)
folder_names = st.text(
    st.characters(codec="utf-8", exclude_characters="/\x00", categories=["L", "N", "P", "S", "Zs", "Cc"]),
    max_size=40,
)


def _trial(draw: Any, folder: str, ensure_ascii: bool, exception: Any) -> dict[str, Any]:
    """A trial folder: its name's tail, result.json and trajectory as objects, and how to write
    them; `draw(kind)` gives each field's value, `kind` being `fields` or `values`."""
    agent_step = {
        "step_id": 2,
        "source": "agent",
        "message": draw(fields),
        "tool_calls": [{"tool_call_id": draw(fields), "function_name": draw(fields), "arguments": draw(values)}],
        "observation": {"results": [{"content": draw(fields)}]},
    }
    return {
        "folder": folder,
        "ensure_ascii": ensure_ascii,
        "result": {
            "task_name": draw(fields),
            "trial_name": draw(fields),
            "config": {"agent": {"name": draw(fields), "model_name": draw(fields)}, "job_id": draw(fields)},
            "agent_info": {"name": "terminus-2", "model_info": {"name": draw(fields), "provider": draw(fields)}},
            "verifier_result": {"rewards": {"reward": draw(values)}},
            "exception_info": exception,
            "started_at": draw(fields),
        },
        "trajectory": {
            "schema_version": "ATIF-v1.5",
            "agent": {"name": draw(fields), "model_name": draw(fields)},
            "steps": [{"step_id": 1, "source": "user", "message": draw(fields)}, agent_step],
        },
    }


@st.composite
def trials(draw: st.DrawFn) -> dict[str, Any]:
    """One trial folder, every field drawn."""
    exception = draw(st.one_of(st.none(), st.fixed_dictionaries({"exception_type": fields})))
    return _trial(draw, draw(folder_names), draw(st.booleans()), exception)


def every_value_everywhere() -> list[dict[str, Any]]:
    """A trial per hostile value, that value in every field (and in the folder's name where a
    folder can be so named): the example every run of the property test starts with."""
    drawn = []
    for index, value in enumerate([*MARKUP, *NUMBERS, True, None, [1, "a"], {"k": float("nan")}]):
        name = value if isinstance(value, str) and _folder_name(value) else ""
        drawn.append(
            _trial(lambda _, value=value: value, name, index % 2 == 0, {"exception_type": value} if index % 3 else None)
        )
    return drawn


def _folder_name(text: str) -> bool:
    try:
        return "/" not in text and "\x00" not in text and len(text.encode()) <= 200
    except UnicodeEncodeError:  # a lone surrogate
        return False


def _json(value: Any, ensure_ascii: bool) -> bytes:
    """Python's json text: NaN, Infinity and big integers as it writes them; lone surrogates escaped,
    or unescaped as the bytes they encode to (not UTF-8)."""
    return json.dumps(value, ensure_ascii=ensure_ascii).encode("utf-8", "surrogatepass")


def write_trials(trace_jobs: Path, drawn: list[dict[str, Any]]) -> list[str]:
    """The trial folders (`t<i>-<name>`, so each is its own) and one ordinary trial (a run with no
    row is refused by the shrink guard, by design), returned by name."""
    (trace_jobs / "ordinary__0" / "agent").mkdir(parents=True)
    (trace_jobs / "ordinary__0" / "result.json").write_bytes(result_json("ordinary__0"))
    (trace_jobs / "ordinary__0" / "agent" / "trajectory.json").write_bytes(GOOD)
    names = ["ordinary__0"]
    for index, trial in enumerate(drawn):
        name = f"t{index}-{trial['folder']}"
        (trace_jobs / name / "agent").mkdir(parents=True)
        (trace_jobs / name / "result.json").write_bytes(_json(trial["result"], trial["ensure_ascii"]))
        (trace_jobs / name / "agent" / "trajectory.json").write_bytes(_json(trial["trajectory"], trial["ensure_ascii"]))
        names.append(name)
    return names
