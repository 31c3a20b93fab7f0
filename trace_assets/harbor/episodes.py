"""Which episodes of a main trajectory become rows: Harbor's `--episodes last|all`."""

from __future__ import annotations

from trace_assets.harbor.options import Episodes
from trace_assets.harbor.trajectory import LastEpisode, Trajectory, conversation, episode_ends, last_episode


def all_episodes(chain: list[Trajectory]) -> list[LastEpisode]:
    """One episode per episode-ending agent step, each the conversation up to and including that step,
    numbered across the continuation chain (Harbor's `extract_conversations_from_trajectory` plus its
    per-file episode offset). The last of them is `last_episode`'s."""
    episodes: list[LastEpisode] = []
    for trajectory in chain:
        for index in episode_ends(trajectory):
            episodes.append(
                LastEpisode(
                    index=len(episodes),
                    conversations=conversation(trajectory.steps[: index + 1], trajectory.tool_definitions),
                    agent_name=trajectory.agent_name,
                    model_name=trajectory.model_name,
                )
            )
    return episodes


def select_episodes(chain: list[Trajectory], episodes: Episodes) -> list[LastEpisode]:
    """The rows' episodes in order; empty when the agent never took a turn."""
    if episodes == "all":
        return all_episodes(chain)
    last = last_episode(chain)
    return [] if last is None else [last]
