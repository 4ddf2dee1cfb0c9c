"""The statistics against values computed independently: scipy's exact binomial test for
McNemar's p, and hand-checked textbook values for both it and the Wilson interval."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from freemad.eval.accuracy_report import wilson
from freemad.eval.stats import compare, comparisons, format_p, mcnemar_exact, sentence


def test_mcnemar_exact_by_hand() -> None:
    # b = 1, c = 9: 2 * (C(10,0) + C(10,1)) / 2**10 = 22/1024.
    assert mcnemar_exact(1, 9) == pytest.approx(22 / 1024)
    assert mcnemar_exact(9, 1) == pytest.approx(22 / 1024)
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(5, 5) == 1.0  # capped: 2 * P[X <= 5] > 1
    assert mcnemar_exact(0, 6) == pytest.approx(2 / 64)


@settings(deadline=None)
@given(st.integers(0, 60), st.integers(0, 60))
def test_mcnemar_exact_is_scipys_binomial_test(b: int, c: int) -> None:
    stats = pytest.importorskip("scipy.stats", reason="scipy checks the p-value independently")
    if b + c == 0:
        return
    expected = stats.binomtest(min(b, c), b + c, 0.5, alternative="two-sided").pvalue
    assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-9, abs=1e-15)


def test_wilson_textbook_values() -> None:
    # 0 of 10: the upper bound is z^2 / (n + z^2) = 3.8415 / 13.8415.
    assert wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    # 8 of 10 (Newcombe 1998, method 3 of his worked examples: 0.4902 to 0.9433).
    assert wilson(8, 10) == pytest.approx((0.4902, 0.9433), abs=1e-4)


def test_wilson_matches_statsmodels_formula_by_scipy_quantile() -> None:
    stats = pytest.importorskip("scipy.stats", reason="scipy gives z independently")
    z = stats.norm.ppf(0.975)
    for correct, total in ((81, 263), (3, 7), (50, 50)):
        p = correct / total
        centre = (p + z * z / (2 * total)) / (1 + z * z / total)
        half = z / (1 + z * z / total) * (p * (1 - p) / total + z * z / (4 * total**2)) ** 0.5
        assert wilson(correct, total) == pytest.approx(
            (max(0, centre - half), min(1, centre + half)), abs=1e-6
        )


def test_compare_counts_discordant_pairs_and_says_it_in_words() -> None:
    freemad = [True] * 10 + [False] * 2 + [True] * 3
    final = [False] * 10 + [True] * 2 + [True] * 3
    result = compare(freemad, final)
    assert (result["b"], result["c"], result["pairs"]) == (10, 2, 15)
    assert result["points"] == pytest.approx(100 * 8 / 15, abs=1e-3)
    assert result["p"] == pytest.approx(2 * (1 + 12 + 66) / 4096)
    assert sentence("majority_final", result) == (
        "Free-MAD beats final majority by 53.3 points, p = 0.04 "
        "(McNemar exact, 10 vs 2 discordant of 15 pairs)"
    )
    worse = compare(final, freemad)
    assert sentence("single:a1", worse).startswith("Free-MAD trails single agent a1 by 53.3 points")
    assert sentence("judge", compare([True], [True])).startswith(
        "Free-MAD ties the judge, p = 1.00"
    )
    assert format_p(0.0004) == "< 0.001" and format_p(0.0312) == "0.03"
    with pytest.raises(ValueError, match="different items"):
        compare([True], [True, False])


def test_comparisons_cover_every_baseline_and_each_agent() -> None:
    rows = [
        {
            "single": {"a1": {"correct": r}, "a2": {"correct": not r}},
            "methods": {"freemad": {"correct": True}, "majority_final": {"correct": r}},
        }
        for r in (True, False, False)
    ]
    found = comparisons(rows)
    assert set(found) == {"single:a1", "single:a2", "majority_final"}
    assert (found["majority_final"]["b"], found["majority_final"]["c"]) == (2, 0)
    assert (found["single:a2"]["b"], found["single:a2"]["c"]) == (1, 0)
