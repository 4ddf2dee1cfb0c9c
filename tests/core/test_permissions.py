"""The permission rules at their edges: an unknown permission string, the exact ranks per verb."""

from __future__ import annotations

import pytest

from freemad.core.permissions import Actor, Decision, may_act

PERSON = Actor("octocat", "User")
WRITE_ONLY = (
    "Only people with write access to this repository can start or steer FREE-MAD runs; "
    "ask a maintainer to run the command for you."
)


@pytest.mark.parametrize("permission", ["custom-role", "READ", "Write", ""])
def test_an_unknown_permission_string_counts_as_none(permission: str) -> None:
    # GitHub's custom repository roles have names of their own; one passed by mistake grants nothing.
    status = may_act(PERSON, permission, "status")  # type: ignore[arg-type]
    assert status == Decision(
        False,
        "`/freemad status` is only for people who can read this repository.",
        f"octocat has {permission or 'none'}; status needs read",
    )
    assert may_act(PERSON, permission, "help").allowed is True  # type: ignore[arg-type]
    assert may_act(PERSON, permission, "debate").reason == WRITE_ONLY  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("permission", "status", "debate"),
    [
        (None, False, False),
        ("none", False, False),
        ("read", True, False),
        ("triage", True, False),
        ("write", True, True),
        ("maintain", True, True),
        ("admin", True, True),
    ],
)
def test_each_rank_against_each_verbs_least_permission(
    permission: str | None, status: bool, debate: bool
) -> None:
    assert may_act(PERSON, permission, "help").allowed is True  # type: ignore[arg-type]
    assert may_act(PERSON, permission, "status").allowed is status  # type: ignore[arg-type]
    assert may_act(PERSON, permission, "debate").allowed is debate  # type: ignore[arg-type]
    assert may_act(PERSON, permission, "no-such-verb").allowed is debate  # type: ignore[arg-type]


def test_a_listed_bot_without_write_is_refused_silently() -> None:
    bot = Actor("helper[bot]", "Bot")
    decision = may_act(bot, "read", "debate", allowed_bots=["helper"])
    assert decision == Decision(False, "", "helper[bot] has read; debate needs write")
    assert may_act(bot, "write", "debate", allowed_bots=["HELPER[bot]"]).allowed is True


def test_a_login_ending_in_bot_is_a_bot_whatever_its_type() -> None:
    assert may_act(Actor("Sneaky[BOT]", "User"), "admin", "debate") == Decision(
        False, "", "Sneaky[BOT] is a bot not in allowed_bots"
    )


def test_freemad_itself_is_ignored_with_or_without_the_bot_suffix() -> None:
    for login in ("FreeMAD", "freemad[bot]"):
        decision = may_act(Actor(login, "Bot"), "admin", "debate", self_login="freemad")
        assert decision == Decision(False, "", f"{login} is FREE-MAD itself")
    # An empty self_login matches nobody.
    assert may_act(Actor("octocat", "User"), "admin", "debate", self_login="").allowed is True


def test_an_allowed_person_gets_no_reply_and_the_reason_in_the_log() -> None:
    assert may_act(PERSON, "write", "debate") == Decision(
        True, "", "octocat has write; debate needs write"
    )
    assert may_act(PERSON, None, "help") == Decision(True, "", "octocat has none; help needs none")
