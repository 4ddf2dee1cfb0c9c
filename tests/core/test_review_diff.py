"""The diff reader: which new-file lines a review comment may land on, and what a large diff
leaves out."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from freemad.core.review_diff import DiffError, fit_diff, parse_diff

MIXED = """diff --git a/x.py b/x.py
index 83db48f..bf269f4 100644
--- a/x.py
+++ b/x.py
@@ -1,3 +1,4 @@
 a
-b
+c
+d
 e
@@ -20,2 +21,3 @@ def f():
 p
+q
 r
diff --git a/img.png b/img.png
new file mode 100644
index 0000000..1111111
Binary files /dev/null and b/img.png differ
diff --git a/gone.py b/gone.py
deleted file mode 100644
--- a/gone.py
+++ /dev/null
@@ -1,2 +0,0 @@
-p
-q
"""


def test_lines_in_the_diff_are_added_and_context_lines_of_the_new_file():
    diff = parse_diff(MIXED)
    x = diff.file("x.py")
    assert x is not None
    assert sorted(x.lines) == [1, 2, 3, 4, 21, 22, 23]
    assert (x.added, x.removed, x.hunks, x.status) == (3, 1, 2, "modified")
    assert diff.in_diff("x.py", 22)
    assert not diff.in_diff("x.py", 10)  # between the hunks: not in the diff
    assert not diff.in_diff("y.py", 1)


def test_binary_and_deleted_files_have_no_line_to_comment_on():
    diff = parse_diff(MIXED)
    image, gone = diff.file("img.png"), diff.file("gone.py")
    assert image is not None and image.binary and image.lines == frozenset()
    assert gone is not None and gone.status == "deleted" and gone.lines == frozenset()
    assert [f.path for f in diff.text_files] == ["x.py", "gone.py"]


@pytest.mark.parametrize("text", ["", "   \n", "hello, this is not a diff\n"])
def test_text_that_is_no_diff_is_one_clear_error(text):
    with pytest.raises(DiffError) as caught:
        parse_diff(text)
    assert "\n" not in str(caught.value)


def test_a_large_file_is_summarised_never_dropped():
    diff = parse_diff(MIXED)
    fitted = fit_diff(diff, max_file_chars=120, max_total_chars=10_000)
    assert {o.path: o.reason for o in fitted.left_out} == {
        "x.py": "file_size",
        "img.png": "binary",
    }
    assert "x.py (modified, +3 -1 lines in 2 hunks)" in fitted.text
    assert fitted.shown == ("gone.py",)
    assert "-p\n-q" in fitted.text


def test_the_total_keeps_small_files_before_one_large_one():
    big = "".join(f"+line {i}\n" for i in range(40))
    text = (
        f"--- a/big.py\n+++ b/big.py\n@@ -0,0 +1,40 @@\n{big}"
        "--- a/small.py\n+++ b/small.py\n@@ -1 +1 @@\n-a\n+b\n"
    )
    fitted = fit_diff(parse_diff(text), max_file_chars=10_000, max_total_chars=200)
    assert fitted.shown == ("small.py",)
    assert [(o.path, o.reason) for o in fitted.left_out] == [("big.py", "total_size")]
    assert fitted.text.index("big.py") < fitted.text.index("small.py")  # the diff's order


# --- properties -------------------------------------------------------------------------------

_LINE_TEXT = st.text(alphabet="abcxyz =()", max_size=12)


@st.composite
def _hunks(draw):
    """A file's hunks as (old start, new start, rows of ' ', '+' or '-' and text), with the
    new-file lines a reader must find (added and context)."""
    rows_per_hunk = draw(
        st.lists(st.lists(st.sampled_from(" +-"), min_size=1, max_size=8), min_size=1, max_size=4)
    )
    old = new = 1
    hunks, expected = [], set()
    for rows in rows_per_hunk:
        gap = draw(st.integers(0, 5))
        old, new = old + gap, new + gap
        body, o, n = [], old, new
        for kind in rows:
            body.append(kind + draw(_LINE_TEXT))
            if kind in " +":
                expected.add(n)
                n += 1
            if kind in " -":
                o += 1
        olen, nlen = o - old, n - new
        hunks.append(
            f"@@ -{old if olen else old - 1},{olen} +{new if nlen else new - 1},{nlen} @@\n"
            + "\n".join(body)
            + "\n"
        )
        old, new = o, n
    return "".join(hunks), expected


@settings(max_examples=150, deadline=None)
@given(_hunks())
def test_every_added_and_context_line_and_no_other_is_in_the_diff(drawn):
    hunks, expected = drawn
    diff = parse_diff(f"--- a/f.py\n+++ b/f.py\n{hunks}")
    found = diff.file("f.py")
    assert found is not None
    assert found.lines == frozenset(expected)
    for line in range(1, max(expected, default=1) + 3):
        assert diff.in_diff("f.py", line) == (line in expected)


@settings(max_examples=100, deadline=None)
@given(_hunks(), _hunks(), st.integers(20, 400), st.integers(20, 800))
def test_fitting_shows_or_lists_every_file(first, second, per_file, total):
    text = f"--- a/one.py\n+++ b/one.py\n{first[0]}--- a/two.py\n+++ b/two.py\n{second[0]}"
    diff = parse_diff(text)
    fitted = fit_diff(diff, max_file_chars=per_file, max_total_chars=total)
    listed = set(fitted.shown) | {o.path for o in fitted.left_out}
    assert listed == {"one.py", "two.py"}
    assert not set(fitted.shown) & {o.path for o in fitted.left_out}
    assert sum(len(diff.file(p).patch) for p in fitted.shown) <= total  # type: ignore[union-attr]
