"""The command grammar at its edges: exact replies to malformed commands, the help text as a
person reads it, and the limits of option values and echoed words."""

from __future__ import annotations

import pytest

from freemad.core.commands import Command, CommandError, help_text, parse_comment


def error(body: str) -> str:
    with pytest.raises(CommandError) as caught:
        parse_comment(body)
    return str(caught.value)


def test_an_option_value_of_six_digits_is_read_and_seven_are_refused() -> None:
    assert parse_comment("/freemad evolve max_iterations=000010 go") == Command(
        "evolve", text="go", options={"max_iterations": 10}
    )
    assert error("/freemad evolve max_iterations=0000010 go") == (
        "Option `max_iterations` of `/freemad evolve` must be a whole number from 1 to 1000, "
        "not `0000010`."
    )


def test_an_option_value_is_one_shell_word_with_no_comment() -> None:
    assert parse_comment('/freemad debate rounds="3" q') == Command(
        "debate", text="q", options={"rounds": 3}
    )
    assert error("/freemad debate rounds=2#x q") == (
        "Option `rounds` of `/freemad debate` must be a whole number from 0 to 10, not `2#x`."
    )
    assert error("/freemad debate rounds= q") == (
        "Option `rounds` of `/freemad debate` must be a whole number from 0 to 10, not ``."
    )


def test_an_unknown_option_names_the_accepted_ones() -> None:
    assert error("/freemad debate depth=2 q") == (
        "Unknown option `depth` for `/freemad debate` (accepted: `rounds`); "
        "put `--` before text that starts with `key=value`."
    )
    assert error("/freemad plan depth=2 q") == (
        "Unknown option `depth` for `/freemad plan` (accepted: none); "
        "put `--` before text that starts with `key=value`."
    )
    assert parse_comment("/freemad plan -- depth=2 q") == Command("plan", text="depth=2 q")


def test_an_echoed_word_is_cut_after_forty_characters() -> None:
    forty, more = "v" * 40, "v" * 41
    assert error(f"/freemad {forty}") == (
        f"Unknown command `{forty}`; the verbs are debate, plan, code, evolve, review, answer, "
        "approve, "
        "reject, resume, pause, stop, status, decline, help (`/freemad help`)."
    )
    assert error(f"/freemad {more}").startswith(f"Unknown command `{forty}…`;")


def test_approve_takes_one_stage_and_a_hash_is_part_of_a_word() -> None:
    assert parse_comment("/freemad approve publish") == Command("approve", stage="publish")
    assert parse_comment("/freemad approve") == Command("approve")
    assert error("/freemad approve publish #now") == (
        "`/freemad approve` takes at most one STAGE, such as `publish`."
    )
    assert error("/freemad approve Publish!") == (
        "`Publish!` is not a stage name; try `/freemad approve publish`."
    )


def test_a_verb_that_needs_text_says_how_to_give_it() -> None:
    assert error("/freemad reject") == ("`/freemad reject` needs text: `/freemad reject REASON`.")
    assert error("/freemad evolve max_iterations=5") == (
        "`/freemad evolve` needs text: `/freemad evolve [max_iterations=N] GOAL`."
    )
    assert parse_comment("/freemad reject\n\nbecause") == Command("reject", body="because")


def test_the_help_text_is_the_grammar_and_every_verb_with_an_example() -> None:
    assert help_text() == (
        "### FREE-MAD commands\n"
        "\n"
        "Write the command on the **first line** of a comment: `/freemad VERB [key=value ...] "
        "[TEXT]`. Text may go on past the first line. Only people with write access can start "
        "or steer a run; `help` works for everyone and `status` for anyone who can read the "
        "repository.\n"
        "\n"
        "| command | what it does | example |\n"
        "|---|---|---|\n"
        "| `/freemad debate [rounds=N] [REQUIREMENT]` | debate the requirement, or the issue's "
        "title and body | `/freemad debate rounds=2 Write a CSV parser` |\n"
        "| `/freemad plan [GOAL]` | start a planning task on the goal, or on the issue | "
        "`/freemad plan` |\n"
        "| `/freemad code [GOAL]` | start a coding task; its branch becomes a PR after "
        "`approve publish` | `/freemad code Add a --verbose flag` |\n"
        "| `/freemad evolve [max_iterations=N] GOAL` | evolve this pull request's head toward a "
        "measurable goal | `/freemad evolve max_iterations=20 Make the test suite faster` |\n"
        "| `/freemad review [rounds=N] [FOCUS]` | review this pull request's diff by debate; "
        "posted as a review with inline comments | "
        "`/freemad review rounds=2 Check the error handling` |\n"
        "| `/freemad answer TEXT` | answer the question the waiting run asked | "
        '`/freemad answer Use SQLite, not "Postgres"` |\n'
        "| `/freemad approve [STAGE]` | approve the waiting stage; `approve publish` opens the "
        "pull request | `/freemad approve publish` |\n"
        "| `/freemad reject REASON` | send the waiting stage back with a reason | "
        "`/freemad reject The plan skips migrations` |\n"
        "| `/freemad resume` | resume a paused or interrupted run | `/freemad resume` |\n"
        "| `/freemad pause` | pause the run after its current step | `/freemad pause` |\n"
        "| `/freemad stop` | stop the run for good | `/freemad stop` |\n"
        "| `/freemad status` | reply with the run's current state | `/freemad status` |\n"
        "| `/freemad decline` | decline to answer; the run goes on without an answer | "
        "`/freemad decline` |\n"
        "| `/freemad help` | reply with this help | `/freemad help` |\n"
        "\n"
        "Options are `key=value` words right after the verb (quote a value with spaces: "
        '`key="two words"`); put `--` before text that itself starts with `key=value`. '
        "Everything after the options is taken as written, quotes included.\n"
    )
