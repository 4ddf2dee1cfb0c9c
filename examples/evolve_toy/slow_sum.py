"""slow_sum(n): the sum 0 + 1 + ... + (n - 1) of the first n natural numbers, for n >= 0."""


def slow_sum(n: int) -> int:
    """Return 0 + 1 + ... + (n - 1); 0 when n is 0 or 1. Deliberately slow: it counts in ones."""
    if n < 0:
        raise ValueError("n must be >= 0")
    total = 0
    for i in range(n):
        for _ in range(i):
            total += 1
    return total
