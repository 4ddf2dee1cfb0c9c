"""Tests for parsing generation and critique replies in the debate contract."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freemad.core.replies import (
    Critique,
    Decision,
    Generation,
    ReplyFormatError,
    echo_tail,
    parse_critique,
    parse_generation,
    prompt_lines,
)

PLAIN = "SOLUTION:\ndef f():\n    return 1\n\nREASONING:\nIt returns one.\n"


def test_plain_generation() -> None:
    assert parse_generation(PLAIN) == Generation("def f():\n    return 1", "It returns one.")


@pytest.mark.parametrize(
    "reply",
    [
        PLAIN.replace("\n", "\r\n"),
        PLAIN.replace("SOLUTION:", "**SOLUTION:**").replace("REASONING:", "**REASONING:**"),
        PLAIN.replace("SOLUTION:", "## Solution:").replace("REASONING:", "## Reasoning"),
        PLAIN.replace("SOLUTION:", "solution:").replace("REASONING:", "Reasoning:"),
        PLAIN.replace("SOLUTION:", "**Solution**:"),
        "```\n" + PLAIN + "```\n",
        "~~~text\n" + PLAIN + "~~~",
        "\n\n  \n" + PLAIN + "\n\n\n",
        "\x1b[1m" + PLAIN.replace("return 1", "\x1b[32mreturn 1\x1b[0m") + "\x1b]0;title\x07",
        "Sure, here it is.\n\n" + PLAIN,
        "\ufeff" + PLAIN,
    ],
)
def test_generation_tolerates_cli_noise(reply: str) -> None:
    assert parse_generation(reply) == Generation("def f():\n    return 1", "It returns one.")


def test_colonless_markers_only_as_headings_or_bold() -> None:
    assert parse_generation("__Solution__:\nx\n**Reasoning**\ny") == Generation("x", "y")
    reply = "SOLUTION:\n**Bold** text\n__init__: y\nReasoning is below\nREASONING: r"
    assert parse_generation(reply) == Generation(
        "**Bold** text\n__init__: y\nReasoning is below", "r"
    )


def test_content_on_the_marker_line() -> None:
    assert parse_generation("SOLUTION: 42\nREASONING: six times seven") == Generation(
        "42", "six times seven"
    )
    assert parse_generation("**SOLUTION:** 42\n**REASONING:** six") == Generation("42", "six")
    assert parse_generation("**SOLUTION: 42**") == Generation("42", "")
    assert parse_generation("SOLUTION: **kwargs is the fix") == Generation(
        "**kwargs is the fix", ""
    )


def test_solution_keeps_inner_fences_and_markers_inside_them() -> None:
    reply = (
        "SOLUTION:\n\n```python\nREASONING: str = 'not a marker'\ndef f():\n    pass\n```\n"
        "~~~\nSOLUTION: also inside\n~~~\n\nREASONING:\nwhy\n"
    )
    solution = (
        "```python\nREASONING: str = 'not a marker'\ndef f():\n    pass\n```\n"
        "~~~\nSOLUTION: also inside\n~~~"
    )
    assert parse_generation(reply) == Generation(solution, "why")


def test_wrapped_reply_with_inner_fences() -> None:
    reply = "```\nSOLUTION:\n```python\nx = 1\n```\nREASONING:\nsimple\n```"
    assert parse_generation(reply) == Generation("```python\nx = 1\n```", "simple")


def test_markers_only_at_line_start() -> None:
    reply = "SOLUTION:\nclass Out:\n    reasoning: str\n    solution: str\nsee REASONING: below\n"
    assert parse_generation(reply).solution == (
        "class Out:\n    reasoning: str\n    solution: str\nsee REASONING: below"
    )
    assert parse_generation(reply).reasoning == ""


def test_unclosed_fence_does_not_swallow_reasoning() -> None:
    reply = "SOLUTION:\n```python\nx = 1\nREASONING:\nbecause"
    assert parse_generation(reply) == Generation("```python\nx = 1", "because")


def test_solution_keeps_leading_indentation_and_inner_blank_lines() -> None:
    reply = "SOLUTION:\n\n    indented\n\n    more\n   \nREASONING: r"
    assert parse_generation(reply).solution == "    indented\n\n    more"


def test_reasoning_before_solution() -> None:
    assert parse_generation("REASONING: first\nSOLUTION: 7") == Generation("7", "first")


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("", "no 'SOLUTION:' marker"),
        (" \n\t\r\n", "no 'SOLUTION:' marker"),
        ("The answer is 42.", "no 'SOLUTION:' marker"),
        ("  SOLUTION: indented markers do not count", "no 'SOLUTION:' marker"),
        ("```\nSOLUTION: fenced\n```\nthe end", "no 'SOLUTION:' marker"),
        ("SOLUTION:\n\n   \nREASONING: nothing above", "SOLUTION: section is empty"),
        ("**SOLUTION:**\nREASONING: x", "SOLUTION: section is empty"),
        ("SOLUTIONS: plural is not a marker", "no 'SOLUTION:' marker"),
        ("REVISED_SOLUTION: wrong contract", "no 'SOLUTION:' marker"),
    ],
)
def test_generation_errors(reply: str, message: str) -> None:
    with pytest.raises(ReplyFormatError, match=message) as caught:
        parse_generation(reply)
    assert "\n" not in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_critique_keep() -> None:
    assert parse_critique("DECISION: KEEP\n\nREASONING:\nMine holds.") == Critique(
        Decision.KEEP, None, "Mine holds."
    )


def test_critique_revise() -> None:
    reply = (
        "DECISION: REVISE\n\nREVISED_SOLUTION:\n```py\nx = 2\n```\n\n"
        "REASONING:\nPeer A was right.\n"
    )
    assert parse_critique(reply) == Critique(
        Decision.REVISE, "```py\nx = 2\n```", "Peer A was right."
    )


@pytest.mark.parametrize(
    "first_line",
    [
        "DECISION: REVISE",
        "decision: revise",
        "**DECISION: REVISE**",
        "DECISION: **REVISE**",
        "**Decision:** Revise.",
        "## Decision: REVISE",
        "DECISION: REVISE - peer B found a bug",
        "\x1b[33mDECISION:\x1b[0m REVISE",
    ],
)
def test_critique_decision_spellings(first_line: str) -> None:
    reply = f"{first_line}\r\nREVISED SOLUTION: 8\r\nREASONING: off by one"
    assert parse_critique(reply) == Critique(Decision.REVISE, "8", "off by one")


def test_critique_decision_value_on_next_line() -> None:
    assert parse_critique("DECISION:\n**KEEP**\nREASONING: fine").decision is Decision.KEEP


def test_critique_wrapped_in_a_fence() -> None:
    reply = "\n```markdown\nDECISION: REVISE\nREVISED_SOLUTION:\n41 + 1\nREASONING:\nmath\n```\n"
    assert parse_critique(reply) == Critique(Decision.REVISE, "41 + 1", "math")


def test_keep_with_a_revised_solution_is_a_keep() -> None:
    reply = "DECISION: KEEP\nREVISED_SOLUTION:\nsomething else\nREASONING: unchanged"
    assert parse_critique(reply) == Critique(Decision.KEEP, None, "unchanged")


def test_revise_accepts_plain_solution_marker() -> None:
    reply = "DECISION: REVISE\nSOLUTION:\nnew\nREASONING: r"
    assert parse_critique(reply) == Critique(Decision.REVISE, "new", "r")


def test_keep_without_reasoning() -> None:
    assert parse_critique("DECISION: KEEP") == Critique(Decision.KEEP, None, "")


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("", "first non-empty line must be"),
        ("I keep my answer.\nDECISION: KEEP", "first non-empty line must be"),
        ("REASONING: x\nDECISION: KEEP", "first non-empty line must be"),
        ("  DECISION: KEEP", "first non-empty line must be"),
        ("DECISION: MAYBE", "unknown decision 'MAYBE'"),
        ("DECISION: I will keep it", "unknown decision 'I'"),
        ("DECISION:", "has no value"),
        ("DECISION:\nREASONING: x", "has no value"),
        ("DECISION: REVISE\nREASONING: x", "REVISE needs a non-empty REVISED_SOLUTION"),
        ("DECISION: REVISE\nREVISED_SOLUTION:\n\nREASONING: x", "non-empty REVISED_SOLUTION"),
        ("DECISION: REVISE\n```\nREVISED_SOLUTION: fenced\n```", "non-empty REVISED_SOLUTION"),
    ],
)
def test_critique_errors(reply: str, message: str) -> None:
    with pytest.raises(ReplyFormatError, match=message) as caught:
        parse_critique(reply)
    assert "\n" not in str(caught.value)


def test_unknown_decision_message_is_short() -> None:
    with pytest.raises(ReplyFormatError) as caught:
        parse_critique("DECISION: " + "x" * 100_000)
    assert len(str(caught.value)) < 200


def test_megabyte_replies() -> None:
    body = "line of code = 1\n" * 60_000
    parsed = parse_generation(f"SOLUTION:\n{body}REASONING:\nok")
    assert parsed.solution == body.rstrip("\n")
    assert parsed.reasoning == "ok"
    with pytest.raises(ReplyFormatError):
        parse_generation("garbage " * 200_000)
    with pytest.raises(ReplyFormatError):
        parse_generation("```a\n" * 200_000)
    with pytest.raises(ReplyFormatError):
        parse_critique("\n" * 1_000_000)
    revised = parse_critique(f"DECISION: REVISE\nREVISED_SOLUTION:\n{body}")
    assert revised.revised_solution == body.rstrip("\n")


def test_invalid_surrogates_survive() -> None:
    parsed = parse_generation("SOLUTION: \ud800 odd\nREASONING: \udfff")
    assert parsed == Generation("\ud800 odd", "\udfff")


_safe_line = st.text(
    alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\r\n\x1b\ufeff"),
    max_size=40,
).map(lambda line: " " + line)


@given(st.lists(_safe_line, min_size=1, max_size=12), st.text(alphabet="abc .\n", max_size=40))
def test_solution_round_trips(lines: list[str], reasoning: str) -> None:
    solution = "\n".join(lines)
    if not solution.strip():
        with pytest.raises(ReplyFormatError):
            parse_generation(f"SOLUTION:\n{solution}\nREASONING:\n{reasoning}")
        return
    kept = lines[:]
    while not kept[0].strip():
        kept.pop(0)
    while not kept[-1].strip():
        kept.pop()
    parsed = parse_generation(f"SOLUTION:\n{solution}\n\nREASONING:\n{reasoning}")
    assert parsed == Generation("\n".join(kept), reasoning.strip())


@given(st.text())
def test_any_text_parses_or_raises_reply_format_error(text: str) -> None:
    for parse in (parse_generation, parse_critique):
        with contextlib.suppress(ReplyFormatError):
            parse(text)


def test_echo_tail_cuts_at_the_first_prompt_line_after_an_answer() -> None:
    prompt = prompt_lines("Reply with SOLUTION: first.\n<requirement>\n</requirement>\n")
    ran_on = "42\nbecause\n<requirement>\nmore\n</requirement>\n"
    assert echo_tail(ran_on, prompt) == "42\nbecause"
    assert echo_tail("42\n\n  <REQUIREMENT>  \n", prompt) == "42"  # spaces and case aside
    assert echo_tail("<requirement>\n42\n", prompt) == "<requirement>\n42\n"  # echo first: kept
    assert echo_tail("42\n---\n7\n", prompt) == "42\n---\n7\n"  # no prompt line: unchanged
    assert echo_tail("", prompt) == ""
    assert echo_tail("12\n<requirement>\n", prompt) == "12"  # a number is an answer too
    assert echo_tail("---\n<requirement>\nx\n", prompt) == "---\n<requirement>\nx\n"
    # A prompt line inside an answer that goes on with its own is no run-on: kept.
    kept = "use the tag\n<requirement>\nthen parse it\nand check it\n"
    assert echo_tail(kept, prompt) == kept
    half = "answer\n<requirement>\nmine\n"  # from the tag on, half the prompt's: not more
    assert echo_tail(half, prompt) == half
    later = "answer\n<requirement>\nmine\nmore\nstill\n</requirement>\n<requirement>\n"
    assert echo_tail(later, prompt) == "answer\n<requirement>\nmine\nmore\nstill"
