"""Tests for the /freemad comment-command grammar."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freemad.core.commands import VERBS, Command, CommandError, help_text, parse_comment
from freemad.core.untrusted import clean


def test_verbs_follow_the_design_mapping() -> None:
    assert VERBS == (
        "debate", "plan", "code", "evolve", "review", "answer", "approve", "reject",
        "resume", "pause", "stop", "status", "decline", "help",
    )  # fmt: skip


@pytest.mark.parametrize(
    "body",
    [
        "",
        "   \n\n  ",
        "Thanks, looks good!",
        "/freemadx debate",
        "/freemad-debate",
        "/FreeMAD debate",
        "/FREEMAD debate",
        "freemad debate",
        " / freemad debate",
        "／freemad debate",  # fullwidth solidus
        "/freem\u0430d debate",  # Cyrillic a
        "> /freemad debate",  # a quote reply does not rerun the command
        "`/freemad debate`",
        "    /freemad debate",  # indented code block
        "\t/freemad debate",
        "```\n/freemad debate\n```",
        "Please run this:\n/freemad debate",  # only the first line counts
        "<!-- /freemad debate -->",
        "<!--\n/freemad debate\n-->",
        "<!-- /freemad stop",
        "hi <!--\n-->\n/freemad debate",
    ],
)
def test_ordinary_comments_are_not_commands(body: str) -> None:
    assert parse_comment(body) is None


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("/freemad debate", Command("debate")),
        ("/freemad debate Write a parser", Command("debate", text="Write a parser")),
        (
            "/freemad debate rounds=2 Write a parser",
            Command("debate", text="Write a parser", options={"rounds": 2}),
        ),
        ("/freemad debate rounds=0", Command("debate", options={"rounds": 0})),
        ('/freemad debate rounds="10" x', Command("debate", text="x", options={"rounds": 10})),
        ("/freemad debate rounds='3'", Command("debate", options={"rounds": 3})),
        ("/freemad debate -- rounds=2 is a phrase", Command("debate", text="rounds=2 is a phrase")),
        ("/freemad debate rounds=1 -- a=b", Command("debate", text="a=b", options={"rounds": 1})),
        ('/freemad debate "a=b" quoted', Command("debate", text='"a=b" quoted')),
        ("/freemad debate Rounds=2 x", Command("debate", text="Rounds=2 x")),
        ("/freemad debate x rounds=2", Command("debate", text="x rounds=2")),
        ("/freemad debate --verbose flag", Command("debate", text="--verbose flag")),
        ("/freemad plan", Command("plan")),
        ("/freemad plan Add caching", Command("plan", text="Add caching")),
        ("/freemad code Add a --verbose flag", Command("code", text="Add a --verbose flag")),
        (
            "/freemad evolve max_iterations=20 Make tests faster",
            Command("evolve", text="Make tests faster", options={"max_iterations": 20}),
        ),
        (
            "/freemad evolve max-iterations=1 g",
            Command("evolve", text="g", options={"max_iterations": 1}),
        ),
        (
            '/freemad answer Use SQLite, not "Postgres"',
            Command("answer", text='Use SQLite, not "Postgres"'),
        ),
        ("/freemad answer timeout=30 is fine", Command("answer", text="timeout=30 is fine")),
        ("/freemad answer it's 'odd \"quotes", Command("answer", text="it's 'odd \"quotes")),
        ("/freemad answer    spaced   out   ", Command("answer", text="spaced   out")),
        (
            "/freemad reject No tests for the parser",
            Command("reject", text="No tests for the parser"),
        ),
        ("/freemad approve", Command("approve")),
        ("/freemad approve publish", Command("approve", stage="publish")),
        ("/freemad approve 'plan_review'", Command("approve", stage="plan_review")),
        ("/freemad resume", Command("resume")),
        ("/freemad pause", Command("pause")),
        ("/freemad stop", Command("stop")),
        ("/freemad status", Command("status")),
        ("/freemad decline", Command("decline")),
        ("/freemad help", Command("help")),
        ("/freemad\thelp", Command("help")),
        ("/freemad\u00a0help", Command("help")),  # a no-break space from a phone keyboard
        ("   /freemad help", Command("help")),  # up to three spaces is still a paragraph
        ("\n\n  \n/freemad status", Command("status")),  # leading blank lines are skipped
        ("<!-- template -->\n/freemad status", Command("status")),  # hidden first line
    ],
)
def test_commands(body: str, expected: Command) -> None:
    assert parse_comment(body) == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("/free\u200bmad debate", Command("debate")),  # the author typed a command
        ("\u202e/freemad debate", Command("debate")),
        ("/freemad \u202edebate\u202c", Command("debate")),
        ("\ufeff/freemad help", Command("help")),
        ("/freemad answer yes\u200b", Command("answer", text="yes")),
        ("/freemad answer a\u2066b\u2069c", Command("answer", text="abc")),
        ("/freemad stop\r\n", Command("stop")),
        ("/freemad answer yes \r\nand more\r\n", Command("answer", text="yes", body="and more")),
        (
            "/freemad answer yes\u2028/freemad stop",
            Command("answer", text="yes", body="/freemad stop"),
        ),
        ("/freemad help   \t ", Command("help")),
        ("/freemad answer <!-- hidden -->shown", Command("answer", text="shown")),
        ("/freemad debate rounds=2<!-- -->", Command("debate", options={"rounds": 2})),
    ],
)
def test_unicode_tricks_and_line_endings(body: str, expected: Command) -> None:
    assert parse_comment(body) == expected


def test_body_is_the_lines_below_the_command() -> None:
    command = parse_comment(
        "/freemad answer Use SQLite\n\n  because it ships with Python\n\n    and it is fast\n\n"
    )
    assert command == Command(
        "answer", text="Use SQLite", body="  because it ships with Python\n\n    and it is fast"
    )
    assert command.full_text == "Use SQLite\n  because it ships with Python\n\n    and it is fast"


@pytest.mark.parametrize("verb", ["answer", "reject", "evolve"])
def test_required_text_may_be_in_the_body(verb: str) -> None:
    command = parse_comment(f"/freemad {verb}\nThe text, on its own line.")
    assert command is not None
    assert (command.text, command.body) == ("", "The text, on its own line.")
    assert command.full_text == "The text, on its own line."


def test_control_verbs_carry_a_body() -> None:
    assert parse_comment("/freemad stop\nThis is going nowhere.") == Command(
        "stop", body="This is going nowhere."
    )
    assert parse_comment("/freemad approve publish\n/freemad stop") == Command(
        "approve", stage="publish", body="/freemad stop"
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("/freemad", "Say what FREE-MAD should do"),
        ("/freemad   \nhelp", "Say what FREE-MAD should do"),
        ("/freemad foo", "Unknown command `foo`; the verbs are debate, plan,"),
        ("/freemad Debate", "Unknown command `Debate`"),
        ("/freemad debate,", "Unknown command `debate,`"),
        ("/freemad answer", "`/freemad answer` needs text"),
        ("/freemad answer   \n\n  ", "`/freemad answer` needs text"),
        ("/freemad reject", "`/freemad reject` needs text"),
        ("/freemad evolve max_iterations=5", "`/freemad evolve` needs text"),
        ("/freemad debate rounds=11", "must be a whole number from 0 to 10, not `11`"),
        ("/freemad debate rounds=-1", "whole number"),
        ("/freemad debate rounds=two", "whole number"),
        ("/freemad debate rounds=", "whole number"),
        ("/freemad debate rounds=٣", "whole number"),  # an Arabic-Indic digit
        ("/freemad debate rounds=1_0", "whole number"),
        ("/freemad debate rounds=2x Write", "whole number"),
        ("/freemad debate rounds=" + "9" * 5000, "whole number"),
        ("/freemad evolve max_iterations=0 g", "from 1 to 1000"),
        ("/freemad evolve max_iterations=1001 g", "from 1 to 1000"),
        ("/freemad debate rounds=1 rounds=2", "Option `rounds` is given twice"),
        ("/freemad evolve max_iterations=1 max-iterations=2 g", "given twice"),
        (
            "/freemad debate color=red x",
            "Unknown option `color` for `/freemad debate` (accepted: `rounds`)",
        ),
        (
            "/freemad plan rounds=2 x",
            "Unknown option `rounds` for `/freemad plan` (accepted: none)",
        ),
        ("/freemad code a=b", "Unknown option `a`"),
        ('/freemad debate rounds="2', "Unbalanced quote"),
        ("/freemad debate rounds='2 x", "Unbalanced quote"),
        ("/freemad debate rounds=2\\", "Unbalanced quote or trailing backslash"),
        ("/freemad approve plan publish", "at most one STAGE"),
        ('/freemad approve "publish', "Cannot read the arguments of `/freemad approve`"),
        ("/freemad approve Publish", "`Publish` is not a stage name"),
        ("/freemad approve 'a b'", "`a b` is not a stage name"),
        ("/freemad stop now", "`/freemad stop` takes nothing on its line"),
        ("/freemad status please", "`/freemad status` takes nothing"),
        ('/freemad help "', "`/freemad help` takes nothing"),
    ],
)
def test_malformed_commands(body: str, message: str) -> None:
    with pytest.raises(CommandError) as caught:
        parse_comment(body)
    text = str(caught.value)
    assert message in text
    assert "\n" not in text


@pytest.mark.parametrize(
    ("body", "echo"),
    [
        ("/freemad @everyone", "`@everyone`"),
        ("/freemad a`b", "`a'b`"),
        ("/freemad " + "x" * 500, "`" + "x" * 40 + "…`"),
    ],
)
def test_errors_echo_input_safely(body: str, echo: str) -> None:
    with pytest.raises(CommandError, match=re.escape(echo)):
        parse_comment(body)


def test_command_error_is_one_line() -> None:
    assert str(CommandError("first\nsecond\r\n  third")) == "first second third"
    assert isinstance(CommandError("x"), ValueError)


@pytest.mark.parametrize(
    ("body", "verb"),
    [
        ("/freemad answer " + "x" * 10_000, "answer"),
        ("/freemad debate " + "a" * 10_000, "debate"),
        ("/freemad debate " + "a-" * 5_000 + " text", "debate"),
        ("/freemad " + " " * 10_000 + "status", "status"),
        ("/freemad debate" + " " * 10_000 + "x", "debate"),
        ("/freemad debate -- " + '"' * 10_000, "debate"),
        ("/freemad approve " + "a" * 10_000, "approve"),
        ("\n" * 10_000 + "/freemad help", "help"),
    ],
)
def test_long_lines_parse(body: str, verb: str) -> None:
    command = parse_comment(body)
    assert command is not None
    assert command.verb == verb


@pytest.mark.parametrize(
    "body",
    [
        '/freemad debate rounds="' + "a" * 10_000,
        "/freemad debate rounds=" + "\\a" * 5_000 + '"',
        "/freemad debate " + "rounds=1 " * 2_000,
        '/freemad approve "' + "a" * 10_000,
        "/freemad stop " + "x" * 10_000,
    ],
)
def test_long_malformed_lines_fail_cleanly(body: str) -> None:
    with pytest.raises(CommandError):
        parse_comment(body)


def test_help_text_lists_every_verb_with_a_working_example() -> None:
    text = help_text()
    assert text.startswith("### FREE-MAD commands")
    examples = re.findall(r"^\| `/freemad (\w+)[^|]*\| [^|]+ \| `(/freemad [^`]+)` \|$", text, re.M)
    assert [verb for verb, _ in examples] == list(VERBS)
    for verb, example in examples:
        command = parse_comment(example)
        assert command is not None
        assert command.verb == verb


@given(st.text(max_size=200))
def test_never_raises_anything_but_command_error(body: str) -> None:
    for candidate in (
        body,
        "/freemad " + body,
        "/freemad debate " + body,
        "/freemad approve " + body,
    ):
        try:
            parse_comment(candidate)
        except CommandError as exc:
            assert "\n" not in str(exc)


@given(st.sampled_from(VERBS), st.text(max_size=60))
def test_a_later_line_is_never_a_command(verb: str, first: str) -> None:
    visible = clean(first)
    if visible.strip() and "\n" not in visible and not visible.lstrip().startswith("/freemad"):
        assert parse_comment(f"{first}\n/freemad {verb}") is None
