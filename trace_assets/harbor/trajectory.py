"""Harbor's ATIF trajectories and the conversation rules of Harbor 0.25's exporter.

Pure: bytes in, typed values out; bad input comes back as an `Exclusion`, never raised. The rules
mirror `harbor.utils.traces_utils.export_traces(episodes="last")`, so rows are interchangeable
with `harbor traces export --episodes last`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trace_assets.core.accounting import Exclusion, Reason
from trace_assets.harbor.decoding import as_dict, decode_json

# --------------------------------------------------------------------------- trajectories


@dataclass(frozen=True)
class Trajectory:
    """One ATIF file, checked just enough that row building cannot fail on it."""

    name: str  # file name inside agent/, e.g. "trajectory.cont-1.json"
    agent_name: str | None
    model_name: str | None
    tool_definitions: Any
    steps: list[dict[str, Any]]
    continued_ref: str | None
    repaired: int = 0  # lone surrogates replaced with U+FFFD (see harbor.decoding)


def parse_trajectory(data: bytes, name: str) -> Trajectory | Exclusion:
    decoded = decode_json(data, name)
    if isinstance(decoded, str):
        return Exclusion(Reason.INVALID_TRAJECTORY, decoded)
    raw, repaired = decoded
    if not isinstance(raw, dict):
        return Exclusion(Reason.INVALID_TRAJECTORY, f"{name} holds a {type(raw).__name__}, not an object")
    steps = raw.get("steps", [])
    if not isinstance(steps, list) or not all(isinstance(step, dict) for step in steps):
        return Exclusion(Reason.INVALID_TRAJECTORY, f"{name}: steps is not a list of objects")
    for step in steps:
        observation = step.get("observation")
        if observation is not None and not isinstance(observation, dict):
            return Exclusion(
                Reason.INVALID_TRAJECTORY, f"{name}: step {step.get('step_id')} has a malformed observation"
            )
        if isinstance(observation, dict) and not isinstance(observation.get("results", []), list):
            return Exclusion(Reason.INVALID_TRAJECTORY, f"{name}: step {step.get('step_id')} has malformed results")
        tool_calls = step.get("tool_calls")
        if tool_calls and not (isinstance(tool_calls, list) and all(isinstance(call, dict) for call in tool_calls)):
            return Exclusion(Reason.INVALID_TRAJECTORY, f"{name}: step {step.get('step_id')} has malformed tool_calls")
    agent = as_dict(raw.get("agent"))
    continued_ref = raw.get("continued_trajectory_ref")
    return Trajectory(
        name=name,
        agent_name=agent.get("name") or None,
        model_name=agent.get("model_name") or None,
        tool_definitions=agent.get("tool_definitions"),
        steps=steps,
        continued_ref=continued_ref if isinstance(continued_ref, str) and continued_ref else None,
        repaired=repaired,
    )


class ParsedTrajectories:
    """One trial's trajectory files, each parsed at most once whoever asks first (its rows, its
    sessions): a trajectory's bytes are decoded once per trial. Parsed values are only read."""

    def __init__(self, files: Mapping[str, bytes]) -> None:
        self._files = files
        self._parsed: dict[str, Trajectory | Exclusion] = {}

    def get(self, path: str, name: str) -> Trajectory | Exclusion:
        parsed = self._parsed.get(path)
        if parsed is None:
            parsed = self._parsed[path] = parse_trajectory(self._files[path], name)
        return parsed


def message_text(content: Any) -> str:
    """Harbor's `normalize_message_content`: text as is, the first text part of a list, else JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content:
        first = content[0]
        if isinstance(first, dict) and "text" in first:
            text = first.get("text")
            return text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
    try:
        return json.dumps(content, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(content)


def _has_media(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(part, dict) and part.get("type") in ("image", "audio") for part in content
    )


def is_multimodal(trajectory: Trajectory) -> bool:
    for step in trajectory.steps:
        if _has_media(step.get("message")):
            return True
        for result in as_dict(step.get("observation")).get("results", []):
            if isinstance(result, dict) and _has_media(result.get("content")):
                return True
    return False


def _assistant_content(step: dict[str, Any]) -> str:
    """`<think>reasoning</think>`, the message, then each tool call as a `<tool_call>` block."""
    parts = []
    if step.get("reasoning_content"):
        parts.append(f"<think>{step['reasoning_content']}</think>")
    message = message_text(step.get("message"))
    if message:
        if "</think>" in message and "<think>" not in message:
            message = "<think>" + message  # vLLM drops the opening tag the prompt supplied
        parts.append(message)
    for call in step.get("tool_calls") or []:
        call_json = json.dumps(
            {"name": call.get("function_name"), "arguments": call.get("arguments", {})}, ensure_ascii=False
        )
        parts.append(f"<tool_call>\n{call_json}\n</tool_call>")
    return "\n".join(parts)


def _observation_text(step: dict[str, Any]) -> str | None:
    results = as_dict(step.get("observation")).get("results") or []
    texts = [message_text(r["content"]) for r in results if isinstance(r, dict) and "content" in r]
    return "\n".join(texts) if texts else None


def conversation(
    steps: list[dict[str, Any]],
    tool_definitions: Any = None,
    observe_last_agent_step: bool = False,
) -> list[dict[str, str]]:
    """Steps as OpenAI-style messages: system and user steps become `user`, agent steps `assistant`.

    An agent step's observation becomes the next user message, except after the episode's final
    agent step (it belongs to the next episode) unless `observe_last_agent_step` (subagent rows).
    """
    last_agent_index = max((i for i, s in enumerate(steps) if s.get("source") == "agent"), default=-1)
    messages: list[dict[str, str]] = []
    tools_pending = bool(tool_definitions)
    for index, step in enumerate(steps):
        source = step.get("source")
        if source in ("system", "user"):
            text = message_text(step.get("message", ""))
            if source == "system" and tools_pending:
                tools_json = json.dumps(tool_definitions, ensure_ascii=False, indent=2)
                text = f"<tools>\n{tools_json}\n</tools>\n\n{text}"
                tools_pending = False
            messages.append({"content": text, "role": "user"})
        elif source == "agent":
            messages.append({"content": _assistant_content(step), "role": "assistant"})
            if index != last_agent_index or observe_last_agent_step:
                observation = _observation_text(step)
                if observation is not None:
                    messages.append({"content": observation, "role": "user"})
    return messages


def episode_ends(trajectory: Trajectory) -> list[int]:
    """Indices of agent steps that end an episode: copied context starts none."""
    return [
        i
        for i, step in enumerate(trajectory.steps)
        if step.get("source") == "agent" and not step.get("is_copied_context")
    ]


@dataclass(frozen=True)
class LastEpisode:
    index: int
    conversations: list[dict[str, str]]
    agent_name: str | None
    model_name: str | None


def last_episode(chain: list[Trajectory]) -> LastEpisode | None:
    """The final episode across a continuation chain, numbered across all of its files."""
    episode_counts = [len(episode_ends(t)) for t in chain]
    for position in range(len(chain) - 1, -1, -1):
        ends = episode_ends(chain[position])
        if ends:
            trajectory = chain[position]
            return LastEpisode(
                index=sum(episode_counts[:position]) + len(ends) - 1,
                conversations=conversation(trajectory.steps[: ends[-1] + 1], trajectory.tool_definitions),
                agent_name=trajectory.agent_name,
                model_name=trajectory.model_name,
            )
    return None


def instruction(trajectories: list[Trajectory]) -> str | None:
    """First non-blank text message of the first main trajectory file in name order (Harbor's rule)."""
    if not trajectories:
        return None
    first = min(trajectories, key=lambda t: t.name)
    for step in first.steps:
        message = step.get("message")
        if isinstance(message, str) and message.strip():
            return message.strip()
    return None


def subagent_conversation(trajectory: Trajectory) -> list[dict[str, str]] | None:
    """A subagent file is one complete conversation; None when the subagent never answered."""
    messages = conversation(trajectory.steps, observe_last_agent_step=True)
    return messages if any(m["role"] == "assistant" for m in messages) else None


def subagent_source(file_name: str) -> str:
    """`trajectory.summarization-1-summary.json` -> `summarization-1-summary`."""
    return file_name[len("trajectory.") : -len(".json")]
