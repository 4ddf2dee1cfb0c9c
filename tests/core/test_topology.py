"""Tests for critique-round topologies and anonymous peer labels."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freemad.core.topology import TopologyKind, assign_peers, peer_labels

AGENTS = ["claude", "codex", "gemini", "local", "extra"]


def test_all_to_all_sees_every_other_agent_in_input_order() -> None:
    peers = assign_peers(AGENTS, TopologyKind.ALL_TO_ALL)
    assert list(peers) == AGENTS
    assert peers["gemini"] == ("claude", "codex", "local", "extra")
    assert all(len(seen) == len(AGENTS) - 1 and agent not in seen for agent, seen in peers.items())


def test_ring_sees_the_next_agent() -> None:
    assert assign_peers(["a", "b", "c"], "ring") == {"a": ("b",), "b": ("c",), "c": ("a",)}
    assert assign_peers(["a", "b"], "ring") == {"a": ("b",), "b": ("a",)}


def test_star_spokes_see_hub_and_hub_sees_spokes() -> None:
    peers = assign_peers(AGENTS, "star", hub="gemini")
    assert peers["gemini"] == ("claude", "codex", "local", "extra")
    assert all(peers[a] == ("gemini",) for a in AGENTS if a != "gemini")


def test_star_needs_a_hub_among_the_agents() -> None:
    with pytest.raises(ValueError, match="needs a hub"):
        assign_peers(AGENTS, "star")
    with pytest.raises(ValueError, match="not one of the agents"):
        assign_peers(AGENTS, "star", hub="nobody")


@pytest.mark.parametrize("n", range(2, 13))
def test_k_reviewers_is_balanced(n: int) -> None:
    agents = [f"agent-{i}" for i in range(n)]
    for k in range(1, n):
        for seed in range(6):
            peers = assign_peers(agents, TopologyKind.K_REVIEWERS, k=k, seed=seed)
            assert list(peers) == agents
            seen_by = Counter(peer for seen in peers.values() for peer in seen)
            for agent, seen in peers.items():
                assert len(seen) == k
                assert len(set(seen)) == k
                assert agent not in seen
                assert set(seen) <= set(agents)
                assert seen_by[agent] == k


def test_k_reviewers_is_deterministic_per_seed_and_varies_across_seeds() -> None:
    agents = [f"agent-{i}" for i in range(10)]
    first = assign_peers(agents, "k_reviewers", k=3, seed=42)
    assert first == assign_peers(agents, "k_reviewers", k=3, seed=42)
    assignments = {
        tuple(sorted(assign_peers(agents, "k_reviewers", k=3, seed=s).items())) for s in range(10)
    }
    assert len(assignments) > 1


def test_k_reviewers_with_all_others_equals_all_to_all_as_sets() -> None:
    peers = assign_peers(AGENTS, "k_reviewers", k=len(AGENTS) - 1, seed=5)
    full = assign_peers(AGENTS, "all_to_all")
    assert {a: set(s) for a, s in peers.items()} == {a: set(s) for a, s in full.items()}


@pytest.mark.parametrize("k", [None, 0, -1, 5, 6])
def test_k_reviewers_rejects_bad_k(k: int | None) -> None:
    with pytest.raises(ValueError, match=r"1 <= k <= 4"):
        assign_peers(AGENTS, "k_reviewers", k=k)


def test_k_reviewers_rejects_bool_k() -> None:
    with pytest.raises(ValueError, match="k="):
        assign_peers(AGENTS, "k_reviewers", k=True)


@pytest.mark.parametrize("kind", list(TopologyKind))
def test_single_agent_sees_nothing(kind: TopologyKind) -> None:
    assert assign_peers(["solo"], kind, hub="solo") == {"solo": ()}
    assert assign_peers(["solo"], kind.value, hub="solo", k=None) == {"solo": ()}


def test_single_agent_k_reviewers_ignores_k() -> None:
    assert assign_peers(["solo"], "k_reviewers", k=7) == {"solo": ()}


def test_no_agents_gives_empty_mapping() -> None:
    assert assign_peers([], "all_to_all") == {}
    assert assign_peers([], "k_reviewers", k=3) == {}


def test_duplicate_ids_rejected() -> None:
    with pytest.raises(ValueError, match="duplicate agent ids: 'a'"):
        assign_peers(["a", "b", "a"], "all_to_all")


def test_unknown_kind_rejected() -> None:
    with pytest.raises(ValueError, match="unknown topology 'mesh'"):
        assign_peers(AGENTS, "mesh")


def test_peer_labels_by_position() -> None:
    assert peer_labels(["codex", "claude"]) == {"codex": "Peer A", "claude": "Peer B"}
    assert peer_labels([]) == {}
    labels = list(peer_labels([f"p{i}" for i in range(800)]).values())
    assert labels[25] == "Peer Z"
    assert labels[26] == "Peer AA"
    assert labels[27] == "Peer AB"
    assert labels[51] == "Peer AZ"
    assert labels[52] == "Peer BA"
    assert labels[701] == "Peer ZZ"
    assert labels[702] == "Peer AAA"


def test_peer_labels_reject_duplicates() -> None:
    with pytest.raises(ValueError, match="distinct"):
        peer_labels(["a", "a"])


@given(st.integers(0, 2000))
def test_peer_labels_are_unique_and_hide_ids(n: int) -> None:
    peers = [f"agent-{i}" for i in range(n)]
    labels = peer_labels(peers)
    assert len(set(labels.values())) == n
    assert all(label.startswith("Peer ") and label[5:].isalpha() for label in labels.values())
    assert all(label[5:].isupper() for label in labels.values())


@given(
    n=st.integers(2, 40),
    data=st.data(),
    seed=st.integers(0, 2**32),
)
def test_k_reviewers_balance_property(n: int, data: st.DataObject, seed: int) -> None:
    k = data.draw(st.integers(1, n - 1))
    agents = [f"a{i}" for i in range(n)]
    peers = assign_peers(agents, "k_reviewers", k=k, seed=seed)
    seen_by = Counter(peer for seen in peers.values() for peer in seen)
    assert all(len(set(seen)) == k and a not in seen for a, seen in peers.items())
    assert all(seen_by[a] == k for a in agents)
