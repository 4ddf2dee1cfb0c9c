"""How FREE-MAD reads a failed GitHub request: GitHub's own words from its error body, and
whether (and after how long) to ask again (`retry_delay`). Pure: `PyGithubForge` calls it once
per failure."""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any

from freemad.github.forge import ForgeError

MAX_RATE_LIMIT_WAIT = 15 * 60.0
SECONDARY_RATE_LIMIT_WAIT = 60.0
BACKOFF_BASE = 1.0
BACKOFF_CAP = 30.0


def github_message(data: Any) -> str:
    """GitHub's own words from an error body: `message`, then each entry of `errors`."""
    if not isinstance(data, dict):
        return str(data or "no message")[:200]
    message = str(data.get("message") or "no message")  # a 502's HTML page has none
    details = []
    for entry in data.get("errors") or []:
        if isinstance(entry, dict):
            text = entry.get("message") or " ".join(
                str(entry[k]) for k in ("resource", "field", "code") if entry.get(k)
            )
            details.append(str(text))
        else:
            details.append(str(entry))
    return f"{message} ({'; '.join(details)})" if details else message


def _retry_after(value: str, now: float) -> float:
    if value.strip().isdigit():
        return float(value.strip())
    try:  # GitHub sends seconds, but HTTP also allows a date
        return max(0.0, parsedate_to_datetime(value).timestamp() - now)
    except (TypeError, ValueError):
        return SECONDARY_RATE_LIMIT_WAIT


def retry_delay(
    status: int | None,
    headers: Mapping[str, str],
    message: str,
    attempt: int,
    *,
    now: float,
    max_wait: float,
    where: str,
) -> float | None:
    """Seconds to wait before retrying a failed request, or None when it must not be retried.

    `status` None is a connection error. `attempt` counts from 0. Raises `ForgeError` when a rate
    limit asks for a wait longer than `max_wait`.
    """
    lower = {k.lower(): str(v) for k, v in headers.items()}
    limited = status in (403, 429)
    reset = lower.get("x-ratelimit-reset", "")
    if status is not None and "retry-after" in lower and (limited or status >= 500):
        wait = _retry_after(lower["retry-after"], now)  # exactly as asked: no jitter
    elif status is None or status >= 500:
        base = min(BACKOFF_CAP, BACKOFF_BASE * 2.0**attempt)
        return base / 2 + random.uniform(0, base / 2)  # noqa: S311 - jitter, not a secret
    elif not limited:
        return None
    elif lower.get("x-ratelimit-remaining") == "0" and reset.isdigit():
        wait = max(0.0, int(reset) - now) + 1  # the reset lands somewhere within that second
    elif status == 429 or "rate limit" in message.lower():
        wait = SECONDARY_RATE_LIMIT_WAIT
    else:
        return None  # a plain 403: forbidden, and asking again will not change that
    if wait > max_wait:
        # The reset itself when GitHub gave one (the wait adds a second of margin to it).
        resets = int(reset) if limited and reset.isdigit() else now + wait
        try:
            at = datetime.fromtimestamp(resets, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        except (OverflowError, OSError, ValueError):  # a reset no calendar holds
            at = "an unreadable time"
        what = "rate limit exhausted" if limited else "unavailable"
        raise ForgeError(
            f"GitHub {what} ({status} to {where}): it resets at {at}, in {wait / 60:.0f} min, "
            f"longer than the {max_wait / 60:.0f} min FREE-MAD waits",
            status=status,
            hint="try again after the reset, or use a token with a higher limit",
        )
    return wait
