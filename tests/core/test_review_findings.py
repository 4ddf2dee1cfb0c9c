"""Reading an agent's review: findings in the grammar, and every garbled reply an error."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from freemad.core.replies import ReplyFormatError
from freemad.core.review_findings import (
    SEVERITIES,
    Finding,
    ReviewFormatError,
    finding_id,
    parse_review,
    render_finding,
    render_review,
    severity_rank,
)

REVIEW = """Two things stand out.

### src/app.py:42 [major]
The loop never ends when `n` is 0.

```suggestion
while n > 0:
```

### `./docs/readme.md`:3 [Nit]
Typo: "teh".

```python
### not/a/heading.py:1 [major]
```
"""


def test_findings_with_their_place_severity_text_and_suggestion():
    findings = parse_review(REVIEW)
    assert findings == [
        Finding("src/app.py", 42, "major", "The loop never ends when `n` is 0.", "while n > 0:"),
        Finding(
            "docs/readme.md",
            3,
            "nit",
            'Typo: "teh".\n\n```python\n### not/a/heading.py:1 [major]\n```',
            None,
        ),
    ]


def test_no_findings_is_an_empty_review():
    assert parse_review("I read it all. No findings.") == []


def test_an_empty_suggestion_deletes_the_line():
    [finding] = parse_review("### a.py:1 [minor]\nDebug output.\n```suggestion\n```\n")
    assert finding.suggestion == ""


def test_two_findings_on_one_line_are_one():
    [finding] = parse_review(
        "### a.py:7 [minor]\nFirst.\n### a.py:7 [critical]\nSecond.\n```suggestion\nx = 1\n```\n"
    )
    assert (finding.severity, finding.body, finding.suggestion) == (
        "critical",
        "First.\n\nSecond.",
        "x = 1",
    )


@pytest.mark.parametrize(
    ("reply", "says"),
    [
        ("Looks fine to me, ship it.", "no finding"),
        ("", "no finding"),
        ("### a.py:3 [blocker]\nBad.", "severity"),
        ("### a.py:3 [major]\n\n", "no text"),
        ("### a.py:0 [major]\nBad.", "line 0"),
        ("### a.py:3 major\nBad.", "is not `### PATH:LINE [SEVERITY]`"),
    ],
)
def test_a_garbled_review_is_a_format_error_that_says_why(reply, says):
    with pytest.raises(ReviewFormatError) as caught:
        parse_review(reply)
    assert says in str(caught.value)
    assert isinstance(caught.value, ReplyFormatError)  # the debate asks the agent once more


def test_too_many_findings_is_an_error():
    reply = "".join(f"### a.py:{n} [nit]\nx\n" for n in range(1, 5))
    with pytest.raises(ReviewFormatError, match="4 findings"):
        parse_review(reply, max_findings=3)


def test_identity_is_the_place_not_the_words():
    one = Finding("a.py", 3, "major", "Off by one.")
    other = Finding("a.py", 3, "nit", "The bound is wrong", "i < n")
    assert finding_id(one) == finding_id(other)
    assert finding_id(one) != finding_id(Finding("a.py", 4, "major", "Off by one."))
    assert finding_id(one) != finding_id(Finding("b.py", 3, "major", "Off by one."))


# --- properties -------------------------------------------------------------------------------

_PATH = st.from_regex(r"[a-z]{1,6}(/[a-z_]{1,6}){0,2}\.(py|md|js)", fullmatch=True)
_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="#`\r"),
    min_size=1,
    max_size=60,
).filter(lambda t: t.strip() and t == t.strip())
_FINDING = st.builds(
    Finding,
    path=_PATH,
    line=st.integers(1, 10**6),
    severity=st.sampled_from(SEVERITIES),
    body=_TEXT,
    suggestion=st.none()
    | st.text(alphabet="abc =()`\n", max_size=30).map(lambda s: s.rstrip("\n")),
)


@settings(max_examples=100, deadline=None)
@given(st.lists(_FINDING, max_size=6, unique_by=lambda f: (f.path, f.line)))
def test_a_rendered_review_reads_back_as_it_was(findings):
    assert parse_review(render_review(findings)) == findings


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300))
def test_any_text_is_findings_or_a_format_error_never_a_crash(text):
    try:
        findings = parse_review(text)
    except ReviewFormatError as exc:
        assert str(exc)
    else:
        assert all(f.line >= 1 and f.severity in SEVERITIES and f.body for f in findings)


# --- what the parser decides, exactly -----------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (
            "### a.py:3 [abcdefghijklmnopqrstuvwxyz]\nBad.",
            "finding 'a.py:3' has severity 'abcdefghijklmnopqrst'; "
            "use one of critical, major, minor, nit",
        ),
        ("### a.py:0 [major]\nBad.", "finding 'a.py:0' names line 0; lines count from 1"),
        ("### a.py:3 [major]\n\n", "finding 'a.py:3' has no text saying what is wrong"),
        (
            "### " + "x" * 70 + ":1 major\nBad.",
            f"heading {'### ' + 'x' * 56!r} is not `### PATH:LINE [SEVERITY]`",
        ),
        (
            "Looks fine to me.",
            "the review has no finding (`### PATH:LINE [SEVERITY]` and its text) and does not "
            "say 'No findings.'",
        ),
        (
            "".join(f"### a.py:{n} [nit]\nx\n" for n in range(1, 5)),
            "the review has 4 findings; at most 3 are taken",
        ),
    ],
)
def test_each_refusal_says_exactly_what_is_wrong(reply, message):
    with pytest.raises(ReviewFormatError) as caught:
        parse_review(reply, max_findings=3)
    assert str(caught.value) == message


def test_exactly_max_findings_are_taken():
    reply = "".join(f"### a.py:{n} [nit]\nx\n" for n in range(1, 4))
    assert [f.line for f in parse_review(reply, max_findings=3)] == [1, 2, 3]


def test_a_backslashed_path_is_read_with_slashes():
    [finding] = parse_review("### src\\app.py:3 [major]\nBad.")
    assert finding.path == "src/app.py"


def test_the_text_keeps_its_indent_and_loses_trailing_blanks_and_the_suggestion():
    [finding] = parse_review("### a.py:1 [major]\n  Indented.\n```suggestion\nx\n```\nMore.  \n\n")
    assert (finding.body, finding.suggestion) == ("  Indented.\nMore.", "x")


def test_only_a_fence_whose_first_word_is_suggestion_is_the_suggestion():
    [bare] = parse_review("### a.py:1 [major]\nSee:\n```\ncode\n```\n")
    assert (bare.body, bare.suggestion) == ("See:\n```\ncode\n```", None)
    [worded] = parse_review("### a.py:1 [major]\nFix:\n```suggestion extra\ny = 2\n```\n")
    assert (worded.body, worded.suggestion) == ("Fix:", "y = 2")


def test_a_heading_right_after_a_closed_fence_counts():
    findings = parse_review("### a.py:1 [major]\nText.\n```\ncode\n```\n### b.py:2 [minor]\nMore.")
    assert [(f.place, f.body) for f in findings] == [
        ("a.py:1", "Text.\n```\ncode\n```"),
        ("b.py:2", "More."),
    ]


def test_a_heading_after_an_unclosed_fence_still_counts():
    findings = parse_review("### a.py:1 [major]\nText.\n```python\n### b.py:2 [minor]\nMore.\n")
    assert [(f.place, f.body) for f in findings] == [
        ("a.py:1", "Text.\n```python"),
        ("b.py:2", "More."),
    ]


def test_one_line_twice_keeps_the_worse_severity_and_the_first_suggestion():
    [finding] = parse_review(
        "### a.py:7 [critical]\nFirst.\n```suggestion\nx = 1\n```\n"
        "### a.py:7 [minor]\nSecond.\n```suggestion\nx = 2\n```\n"
    )
    assert (finding.severity, finding.body, finding.suggestion) == (
        "critical",
        "First.\n\nSecond.",
        "x = 1",
    )


@pytest.mark.parametrize(
    ("suggestion", "fence"),
    [("x = 1", "```"), ("a `` b", "```"), ("a```b", "````"), ("`````", "``````")],
)
def test_a_suggestion_is_fenced_longer_than_any_backtick_run_in_it(suggestion, fence):
    text = render_finding(Finding("a.py", 1, "nit", "x", suggestion))
    assert text == f"### a.py:1 [nit]\nx\n\n{fence}suggestion\n{suggestion}\n{fence}\n"


def test_an_empty_review_renders_as_no_findings():
    assert render_review([]) == "No findings.\n"


def test_an_unknown_severity_ranks_after_every_known_one():
    assert [severity_rank(s) for s in (*SEVERITIES, "blocker")] == [0, 1, 2, 3, 4]
