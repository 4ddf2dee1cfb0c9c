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


# --- what the reader and the fitting decide, exactly ---------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (" \n", "the diff is empty: there is nothing to review"),
        ("hello\n", "no file changes found: the text is not a unified diff"),
        (
            "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n a\n",
            "not a unified diff FREE-MAD can read: Hunk is shorter than expected",
        ),
    ],
)
def test_each_refusal_says_exactly_why(text, message):
    with pytest.raises(DiffError) as caught:
        parse_diff(text)
    assert str(caught.value) == message


def _where(text: str) -> tuple[str, str, str]:
    [changed] = parse_diff(text).files
    return changed.path, changed.old_path, changed.status


def test_paths_and_status_with_and_without_git_prefixes():
    assert _where("--- x.py\n+++ x.py\n@@ -1 +1 @@\n-a\n+b\n") == ("x.py", "x.py", "modified")
    assert _where("--- /dev/null\n+++ b/n.py\n@@ -0,0 +1 @@\n+a\n") == ("n.py", "n.py", "added")
    assert _where("--- c/gone.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n") == (
        "c/gone.py",
        "c/gone.py",
        "deleted",
    )
    git_rename = (
        "diff --git a/o.py b/n.py\nsimilarity index 100%\nrename from o.py\nrename to n.py\n"
    )
    assert _where(git_rename) == ("n.py", "o.py", "renamed")
    # unidiff's own rename test compares the names past two characters and misses this one
    assert _where("--- a/ab.py\n+++ c/ab.py\n@@ -1 +1 @@\n-a\n+b\n") == (
        "c/ab.py",
        "ab.py",
        "renamed",
    )


def test_a_binary_files_summary_has_no_line_counts():
    image = parse_diff(MIXED).file("img.png")
    assert image is not None and image.summary() == "img.png (added, binary file)"
    fitted = fit_diff(parse_diff(MIXED), max_file_chars=10_000, max_total_chars=10_000)
    assert [(o.path, o.reason, o.summary) for o in fitted.left_out] == [
        ("img.png", "binary", "img.png (added, binary file)")
    ]


def test_resolve_drops_git_prefixes_only_when_that_names_a_file_of_the_diff():
    text = (
        "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"
        "--- a/a/y.py\n+++ b/a/y.py\n@@ -1 +1 @@\n-a\n+b\n"
        "--- a/y.py\n+++ b/y.py\n@@ -1 +1 @@\n-a\n+b\n"
    )
    diff = parse_diff(text)
    assert [f.path for f in diff.files] == ["x.py", "a/y.py", "y.py"]
    assert diff.resolve("a/x.py") == "x.py"
    assert diff.resolve("b/x.py") == "x.py"
    assert diff.resolve("x.py") == "x.py"
    assert diff.resolve("a/y.py") == "a/y.py"  # a folder named `a` in the repository
    assert diff.resolve("b/nope.py") == "b/nope.py"
    assert diff.resolve("c/x.py") == "c/x.py"


def _file(name: str, added: int, last: str = "x") -> str:
    rows = "".join("+x\n" for _ in range(added - 1)) + f"+{last}\n"
    return f"--- a/{name}\n+++ b/{name}\n@@ -1,1 +1,{added + 1} @@\n a\n{rows}"


def test_a_file_or_total_exactly_at_its_limit_is_shown():
    small, large = _file("s.py", 1, last="X"), _file("l.py", 5)  # only newlines are cut
    diff = parse_diff(small + large)
    sizes = [len(f.patch) for f in diff.files]
    fitted = fit_diff(diff, max_file_chars=max(sizes), max_total_chars=sum(sizes))
    assert (fitted.shown, fitted.left_out) == (("s.py", "l.py"), ())
    assert fitted.text == small + large


def test_the_fitted_text_lists_summaries_up_to_max_listed_then_counts_the_rest():
    keep = _file("keep.py", 1, last=" ")  # its last row is a blank: only newlines are cut
    bigs = [_file(f"big{n}.py", 20) for n in range(1, 4)]
    diff = parse_diff(keep + "".join(bigs))
    fitted = fit_diff(diff, max_file_chars=len(keep), max_total_chars=10_000, max_listed=2)
    assert fitted.text == (
        keep
        + "# not shown (past review.max_file_chars): big1.py (modified, +20 -0 lines in 1 hunk)\n"
        + "# not shown (past review.max_file_chars): big2.py (modified, +20 -0 lines in 1 hunk)\n"
        + "# not shown: 1 more file(s)\n"
    )
    assert [o.path for o in fitted.left_out] == ["big1.py", "big2.py", "big3.py"]
    every = fit_diff(diff, max_file_chars=len(keep), max_total_chars=10_000, max_listed=3)
    assert every.text.endswith("big3.py (modified, +20 -0 lines in 1 hunk)\n")
    assert "more file(s)" not in every.text


def test_fifty_summaries_are_listed_by_default():
    text = "".join(
        f"diff --git a/b{n}.bin b/b{n}.bin\nBinary files a/b{n}.bin and b/b{n}.bin differ\n"
        for n in range(51)
    )
    fitted = fit_diff(parse_diff(text), max_file_chars=10_000, max_total_chars=10_000)
    lines = fitted.text.splitlines()
    assert len(lines) == 51 and len(fitted.left_out) == 51
    assert lines[49] == "# not shown (a binary file): b49.bin (modified, binary file)"
    assert lines[50] == "# not shown: 1 more file(s)"
