"""Topologies at their edges: the exact k-reviewer circle, the default seed, the error texts."""

from __future__ import annotations

import random

import pytest

from freemad.core.topology import assign_peers, peer_labels


def test_k_reviewers_see_their_successors_on_the_seeded_circle() -> None:
    ids = ["a", "b", "c", "d"]
    circle = list(ids)
    random.Random(0).shuffle(circle)  # the default seed is 0
    expected = {
        agent: (circle[(circle.index(agent) + 1) % 4], circle[(circle.index(agent) + 2) % 4])
        for agent in ids
    }
    assert assign_peers(ids, "k_reviewers", k=2) == expected
    assert assign_peers(ids, "k_reviewers", k=2, seed=0) == expected
    assert expected == {"a": ("b", "d"), "b": ("d", "c"), "c": ("a", "b"), "d": ("c", "a")}


def test_the_errors_say_what_is_wrong() -> None:
    with pytest.raises(ValueError) as caught:
        assign_peers(["a"], "mesh")
    assert str(caught.value) == (
        "unknown topology 'mesh'; expected one of: all_to_all, k_reviewers, ring, star"
    )
    with pytest.raises(ValueError) as caught:
        assign_peers(["b", "a", "b", "a", "c"], "ring")
    assert str(caught.value) == "duplicate agent ids: 'a', 'b'"
    with pytest.raises(ValueError) as caught:
        assign_peers(["a", "b"], "star")
    assert str(caught.value) == "star topology needs a hub that is one of the agents"
    with pytest.raises(ValueError) as caught:
        peer_labels(["x", "x"])
    assert str(caught.value) == "peer ids must be distinct to get distinct labels"
