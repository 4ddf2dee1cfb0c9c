"""Replies that parse and are still no answer (an echo of the prompt, one line repeated), and
replies with no marker at all, read as an answer where an agent allows it (`recover`)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freemad.core.replies import (
    ReplyFormatError,
    degenerate,
    echoes,
    parse_critique,
    parse_generation,
    prompt_lines,
    recover,
)

PROMPT = prompt_lines("Reply with two sections.\n\nSOLUTION:\n24\n\n  A spider has   8 legs.\n")


def test_prompt_lines_are_the_worded_lines_folded() -> None:
    assert frozenset({"reply with two sections.", "solution:", "a spider has 8 legs."}) == PROMPT
    assert prompt_lines("\x1b[1mBold\x1b[0m\n12\n") == frozenset({"bold"})


@pytest.mark.parametrize(
    ("texts", "problem"),
    [
        (["24", "A SPIDER has 8 legs."], "(1 of its 1 lines)"),  # "24" has no word in it
        (["Solution:\nmine", "reply with two sections."], "(2 of its 3 lines)"),
        (["two lines\nof mine", "a spider has 8 legs."], None),  # 1 of 3: an answer
        (["one of mine", "a spider has 8 legs."], "(1 of its 2 lines)"),  # half is enough
        (["", ""], None),
        ([], None),
    ],
)
def test_echoes(texts: list[str], problem: str | None) -> None:
    found = echoes(texts, PROMPT)
    if problem is None:
        assert found is None
    else:
        assert found == f"the reply repeats the prompt's own text {problem} instead of answering"


@pytest.mark.parametrize(
    ("solution", "problem"),
    [
        ("...\n```\n```", "the solution has no words or numbers in it"),
        ("42", None),
        ("no\nno\nno", None),  # three times is not yet repetition
        ("no\nno\nno\nno", "the solution repeats one line 4 times ('no')"),
        ("a\nb\nc\nd\nx\nx\nx\nx", "the solution repeats one line 4 times ('x')"),  # half
        ("a\nb\nc\nd\ne\nx\nx\nx\nx", None),  # under half
        ("  x \n x\nx  \n\tx", "the solution repeats one line 4 times ('x')"),
        ("}\n}\n}\n}\n}\nreturn 1", None),  # lines with no letter do not count
        (("y" * 80 + "\n") * 5, f"the solution repeats one line 5 times ({'y' * 60!r})"),
    ],
)
def test_degenerate(solution: str, problem: str | None) -> None:
    assert degenerate(solution) == problem


@pytest.mark.parametrize(
    ("reply", "read"),
    [
        ("def f():\n    return 1", "def f():\n    return 1"),
        (
            "\n\n  Here it is.\n\n```python\nx = 1\n```\n\n",
            "  Here it is.\n\n```python\nx = 1\n```",
        ),
        ("\x1b[32mgreen\x1b[0m text", "green text"),
        ("\ufeffwith a mark", "with a mark"),
        ("```\nSOLUTION:\nfenced\n```", None),  # a marker inside a whole-reply fence counts
        ("intro\nREASONING: why", None),  # it tried the contract
        ("DECISION: maybe", None),
        ("   \n\t\n", None),
        ("", None),
    ],
)
def test_recover(reply: str, read: str | None) -> None:
    assert recover(reply) == read


worded = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300)
malformed = st.lists(
    st.one_of(
        worded,
        st.sampled_from(
            ["SOLUTION:", "REASONING:", "DECISION: KEEP", "DECISION:", "```", "**Solution**"]
        ),
    ),
    max_size=12,
).map("\n".join)


@given(malformed)
def test_any_reply_is_parsed_recovered_or_refused_with_a_reason(reply: str) -> None:
    """Whatever a model says, each reader has one of its defined outcomes, never a crash."""
    for parse in (parse_generation, parse_critique):
        try:
            parse(reply)
        except ReplyFormatError as exc:
            assert str(exc)
    read = recover(reply)
    assert read is None or (read.strip() and read == read.strip("\n"))
    found = degenerate(reply)
    assert found is None or found.startswith("the solution ")
    said = echoes([reply], PROMPT)
    assert said is None or said.startswith("the reply repeats the prompt's own text (")
