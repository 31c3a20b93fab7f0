"""Harbor's `result.json` (TrialResult), read the way Harbor's exporter reads it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trace_assets.core.accounting import Exclusion, Reason
from trace_assets.harbor.decoding import NumberText, as_dict, decode_json


@dataclass(frozen=True)
class TrialSummary:
    """The parts of Harbor's `TrialResult` that rows and coverage need."""

    trial_name: str
    task: str
    agent: str
    model: str
    model_provider: str
    started_at: str
    job_id: str
    reward: float | None
    exception_type: str | None
    result: str | None  # Harbor's `result` column: exception type, else reward as text
    success: bool = False  # Harbor's `--filter` verdict (`_trial_is_success`)
    reward_valid: bool | None = None  # Harbor 0.26's `reward_valid`; None when result.json has none
    repaired: int = 0  # lone surrogates replaced with U+FFFD (see harbor.decoding)


def _reward_text(value: Any) -> str:
    """Harbor's `_coerce_reward_value`: numbers become `str(float(x))`, anything else `str(x)`;
    a number too large for a float keeps its digits."""
    if isinstance(value, NumberText):
        return str(value)
    try:
        return str(float(value))
    except (TypeError, ValueError, OverflowError):
        return str(value)


def above_zero(value: Any) -> bool:
    """Harbor's success test of a value: `float(value) > 0.0`, and False when it is no number."""
    try:
        return float(value) > 0.0
    except (TypeError, ValueError, OverflowError):
        return False


def _own_success(result: str | None, verifier_result: dict[str, Any]) -> bool:
    """Harbor's `_trial_is_success` from the trial's own file: its `result` value above 0, or with
    none, a legacy `verifier_result.reward` above 0."""
    if result is not None:
        return above_zero(result)
    reward = verifier_result.get("reward")
    return reward is not None and above_zero(reward)


def parse_trial_result(data: bytes, folder_name: str) -> TrialSummary | Exclusion:
    """Read a trial's `result.json` the way Harbor's exporter does (`_normalize_run_metadata`)."""
    decoded = decode_json(data, "result.json")
    if isinstance(decoded, str):
        return Exclusion(Reason.INVALID_RESULT_JSON, decoded)
    raw, repaired = decoded
    if not isinstance(raw, dict):
        return Exclusion(Reason.INVALID_RESULT_JSON, f"result.json holds a {type(raw).__name__}, not an object")

    config = as_dict(raw.get("config"))
    agent_config = as_dict(config.get("agent"))
    if not agent_config and isinstance(config.get("agents"), list) and config["agents"]:
        agent_config = as_dict(config["agents"][0])
    agent_info = as_dict(raw.get("agent_info"))
    model_info = as_dict(agent_info.get("model_info"))

    agent = agent_config.get("name") or agent_info.get("name") or config.get("agent_name") or raw.get("agent_name")
    if not agent:
        return Exclusion(Reason.INVALID_RESULT_JSON, "result.json names no agent")
    model = (
        model_info.get("name")
        or agent_config.get("model_name")
        or agent_info.get("model_name")
        or config.get("engine")
        or "unknown-model"
    )
    provider = (
        model_info.get("provider")
        or agent_config.get("provider")
        or agent_info.get("provider")
        or config.get("engine")
        or "unknown-provider"
    )
    job_id = (
        config.get("job_id")
        or config.get("job_name")
        or raw.get("job_id")
        or raw.get("run_id")
        or raw.get("trial_name")
        or "unknown-run"
    )

    exception_type = as_dict(raw.get("exception_info")).get("exception_type") or None
    verifier_result = as_dict(raw.get("verifier_result"))
    reward_value = as_dict(verifier_result.get("rewards")).get("reward")
    try:
        reward = None if reward_value is None or isinstance(reward_value, NumberText) else float(reward_value)
    except (TypeError, ValueError, OverflowError):
        reward = None
    if exception_type:
        result = str(exception_type)
    elif reward_value is not None:
        result = _reward_text(reward_value)
    else:
        result = None

    return TrialSummary(
        trial_name=str(raw.get("trial_name") or config.get("trial_name") or folder_name),
        task=str(raw.get("task_name") or config.get("task_name") or "unknown-task"),
        agent=str(agent),
        model=str(model),
        model_provider=str(provider),
        started_at=str(raw.get("started_at") or raw.get("startedAt") or ""),
        job_id=str(job_id),
        reward=reward,
        exception_type=None if exception_type is None else str(exception_type),
        result=result,
        success=_own_success(result, verifier_result),
        reward_valid=raw["reward_valid"] if isinstance(raw.get("reward_valid"), bool) else None,
        repaired=repaired,
    )
