"""The correctness gate: slow_sum(n) is 0 + 1 + ... + (n - 1) for every n >= 0."""

import pytest
from slow_sum import slow_sum


def test_small_values():
    assert slow_sum(0) == 0
    assert slow_sum(1) == 0
    assert slow_sum(2) == 1
    assert slow_sum(3) == 3
    assert slow_sum(10) == 45


def test_against_the_definition():
    for n in range(60):
        assert slow_sum(n) == sum(k for k in range(n)), n


def test_larger_values():
    assert slow_sum(1000) == 499500
    assert slow_sum(2001) == 2001000


def test_returns_an_int():
    assert type(slow_sum(7)) is int


def test_negative_is_refused():
    with pytest.raises(ValueError):
        slow_sum(-1)
