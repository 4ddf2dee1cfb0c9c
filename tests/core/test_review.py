"""Reading an agent's review: findings in the grammar, and every garbled reply an error."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from freemad.core.replies import ReplyFormatError
from freemad.core.review import (
    SEVERITIES,
    Finding,
    ReviewFormatError,
    finding_id,
    parse_review,
    render_review,
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
