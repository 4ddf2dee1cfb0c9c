"""Tests for who may start or steer a FREE-MAD run."""

from __future__ import annotations

from typing import cast, get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freemad.core.commands import VERBS
from freemad.core.permissions import Actor, Decision, Permission, may_act

PERMISSIONS: tuple[Permission, ...] = get_args(Permission)
WRITERS = ("admin", "maintain", "write")
STEERING = [verb for verb in VERBS if verb not in ("help", "status")]
alice = Actor("alice", "User")


def test_permission_levels() -> None:
    assert PERMISSIONS == ("admin", "maintain", "write", "triage", "read", "none")


@pytest.mark.parametrize("verb", [*VERBS, "unknown-verb"])
@pytest.mark.parametrize("permission", WRITERS)
def test_writers_may_do_anything(verb: str, permission: Permission) -> None:
    assert may_act(alice, permission, verb).allowed


@pytest.mark.parametrize("verb", STEERING)
@pytest.mark.parametrize("permission", ["triage", "read", "none", None])
def test_others_may_not_start_or_steer(verb: str, permission: Permission | None) -> None:
    decision = may_act(alice, permission, verb)
    assert not decision.allowed
    assert decision.reason == (
        "Only people with write access to this repository can start or steer FREE-MAD runs; "
        "ask a maintainer to run the command for you."
    )
    assert f"alice has {permission or 'none'}" in decision.detail


@pytest.mark.parametrize("permission", [*PERMISSIONS, None])
def test_help_is_for_everyone(permission: Permission | None) -> None:
    assert may_act(alice, permission, "help").allowed


@pytest.mark.parametrize(
    ("permission", "allowed"),
    [("admin", True), ("triage", True), ("read", True), ("none", False), (None, False)],
)
def test_status_needs_read(permission: Permission | None, allowed: bool) -> None:
    decision = may_act(alice, permission, "status")
    assert decision.allowed is allowed
    if not allowed:
        assert (
            decision.reason == "`/freemad status` is only for people who can read this repository."
        )


def test_an_unknown_permission_counts_as_none() -> None:
    decision = may_act(alice, cast(Permission, "security-manager"), "debate")
    assert not decision.allowed
    assert decision.reason


@pytest.mark.parametrize(
    ("login", "kind", "self_login"),
    [
        ("freemad[bot]", "Bot", "freemad[bot]"),
        ("freemad[bot]", "Bot", "freemad"),  # an App's comments come from <slug>[bot]
        ("FreeMAD[bot]", "Bot", "freemad"),
        ("github-actions[bot]", "Bot", "github-actions[bot]"),
        ("ci-user", "User", "ci-user"),  # a personal token's own account
        ("CI-User", "User", "ci-user"),
    ],
)
def test_own_comments_are_ignored_silently(login: str, kind: str, self_login: str) -> None:
    for permission in ("admin", None):
        decision = may_act(
            Actor(login, kind), permission, "debate", self_login=self_login, allowed_bots=[login]
        )
        assert decision == Decision(False, "", f"{login} is FREE-MAD itself")


def test_a_person_named_like_the_app_is_not_the_app() -> None:
    assert may_act(Actor("freemad", "User"), "write", "debate", self_login="freemad[bot]").allowed
    assert may_act(Actor("freemad-fan", "User"), "write", "debate", self_login="freemad").allowed


@pytest.mark.parametrize(
    ("actor", "permission", "allowed_bots", "allowed"),
    [
        (Actor("renovate[bot]", "Bot"), "write", (), False),
        (Actor("renovate[bot]", "Bot"), "admin", ("dependabot[bot]",), False),
        (Actor("sneaky[bot]", "User"), "write", (), False),  # the login gives a bot away
        (Actor("helper", "Bot"), "write", (), False),
        (Actor("renovate[bot]", "Bot"), "write", ("renovate[bot]",), True),
        (Actor("renovate[bot]", "Bot"), "write", ("renovate",), True),
        (Actor("Renovate[bot]", "Bot"), "write", ("RENOVATE[BOT]",), True),
        (Actor("renovate[bot]", "Bot"), "read", ("renovate[bot]",), False),
        (Actor("renovate[bot]", "Bot"), None, ("renovate[bot]",), False),
    ],
)
def test_bots(
    actor: Actor, permission: Permission | None, allowed_bots: tuple[str, ...], allowed: bool
) -> None:
    decision = may_act(actor, permission, "debate", allowed_bots=allowed_bots, self_login="freemad")
    assert decision.allowed is allowed
    if not allowed:
        assert (
            decision.reason == ""
        )  # never reply to a bot: two bots could answer each other forever
        assert actor.login in decision.detail


def test_bots_are_never_answered_even_for_help() -> None:
    assert may_act(Actor("renovate[bot]", "Bot"), "admin", "help") == Decision(
        False, "", "renovate[bot] is a bot not in allowed_bots"
    )


def test_actor_is_bot() -> None:
    assert Actor("x[bot]", "User").is_bot
    assert Actor("x", "Bot").is_bot
    assert not Actor("x", "User").is_bot
    assert not Actor("bot", "Organization").is_bot


@given(
    st.sampled_from([*VERBS, "other"]),
    st.sampled_from(PERMISSIONS),
    st.sampled_from(PERMISSIONS),
)
def test_more_permission_never_allows_less(verb: str, a: Permission, b: Permission) -> None:
    rank = {p: len(PERMISSIONS) - i for i, p in enumerate(PERMISSIONS)}
    low, high = sorted((a, b), key=rank.__getitem__)
    if may_act(alice, low, verb).allowed:
        assert may_act(alice, high, verb).allowed


@given(st.sampled_from([*VERBS, "other"]), st.sampled_from([*PERMISSIONS, None]))
def test_a_refused_person_always_gets_one_polite_line(
    verb: str, permission: Permission | None
) -> None:
    decision = may_act(alice, permission, verb)
    if not decision.allowed:
        assert decision.reason
        assert "\n" not in decision.reason
