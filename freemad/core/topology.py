"""Critique-round topologies (who sees whose answer) and the anonymous labels peers get."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from enum import Enum

__all__ = ["TopologyKind", "assign_peers", "peer_labels"]


class TopologyKind(str, Enum):
    """How agents are wired to each other in critique rounds."""

    ALL_TO_ALL = "all_to_all"
    K_REVIEWERS = "k_reviewers"
    RING = "ring"
    STAR = "star"


def _kind(kind: TopologyKind | str) -> TopologyKind:
    try:
        return TopologyKind(kind)
    except ValueError:
        choices = ", ".join(k.value for k in TopologyKind)
        raise ValueError(f"unknown topology {kind!r}; expected one of: {choices}") from None


def assign_peers(
    agent_ids: Sequence[str],
    kind: TopologyKind | str,
    *,
    k: int | None = None,
    hub: str | None = None,
    seed: int = 0,
) -> dict[str, tuple[str, ...]]:
    """Map each agent (in input order) to the peers whose answers it sees, never itself.

    - ``all_to_all``: every other agent, in input order.
    - ``k_reviewers``: a balanced assignment, seeded by ``seed``: every agent sees exactly ``k``
      peers and is seen by exactly ``k``. Agents are shuffled into a circle and each sees the
      ``k`` that follow it, listed in circle order (so no agent is always shown first).
    - ``ring``: agent ``i`` sees agent ``i + 1`` (wrapping), in input order.
    - ``star``: spokes see ``hub``; ``hub`` sees every spoke in input order.

    With a single agent everyone sees nothing, whatever the kind (``k`` is then ignored).
    """
    topology = _kind(kind)
    ids = list(agent_ids)
    duplicates = sorted(agent for agent, count in Counter(ids).items() if count > 1)
    if duplicates:
        raise ValueError(f"duplicate agent ids: {', '.join(map(repr, duplicates))}")
    n = len(ids)
    if topology is TopologyKind.STAR and (hub is None or hub not in ids):
        raise ValueError(
            "star topology needs a hub that is one of the agents"
            if hub is None
            else f"star hub {hub!r} is not one of the agents"
        )
    if n <= 1:
        return dict.fromkeys(ids, ())

    if topology is TopologyKind.ALL_TO_ALL:
        return {agent: tuple(peer for peer in ids if peer != agent) for agent in ids}
    if topology is TopologyKind.RING:
        return {agent: (ids[(i + 1) % n],) for i, agent in enumerate(ids)}
    if topology is TopologyKind.STAR:
        spokes = tuple(agent for agent in ids if agent != hub)
        return {agent: spokes if agent == hub else (str(hub),) for agent in ids}
    return _k_reviewers(ids, k, seed)


def _k_reviewers(ids: list[str], k: int | None, seed: int) -> dict[str, tuple[str, ...]]:
    n = len(ids)
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= n - 1:
        raise ValueError(
            f"k_reviewers needs 1 <= k <= {n - 1} (the number of other agents) for {n} agents, "
            f"got k={k!r}"
        )
    circle = list(ids)
    random.Random(seed).shuffle(circle)  # noqa: S311 - fairness, not security
    # Seeing the k successors on a circle makes a k-regular digraph: each agent is also the
    # successor of exactly k agents, so review load is even.
    position = {agent: i for i, agent in enumerate(circle)}
    return {
        agent: tuple(circle[(position[agent] + step) % n] for step in range(1, k + 1))
        for agent in ids
    }


def _letters(index: int) -> str:
    # Spreadsheet-column numbering: A..Z, AA..AZ, BA.., so labels never collide.
    letters = ""
    index += 1
    while index:
        index, remainder = divmod(index - 1, 26)
        letters = chr(ord("A") + remainder) + letters
    return letters


def peer_labels(peers: Sequence[str]) -> dict[str, str]:
    """Map each peer id to ``"Peer A"``, ``"Peer B"``, … by position, so prompts hide agent ids."""
    if len(set(peers)) != len(peers):
        raise ValueError("peer ids must be distinct to get distinct labels")
    return {peer: f"Peer {_letters(i)}" for i, peer in enumerate(peers)}
