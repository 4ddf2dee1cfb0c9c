"""The bot's one way to Redis: the `redis` package (or how to install it), a client from a URL, and
the translation of every Redis failure into one line that never carries the URL's password."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from freemad.bot.ports import DeliveryLogUnavailable
from freemad.errors import UsageError


class RedisStateError(DeliveryLogUnavailable):
    """The bot's state in Redis could not be read or written (the server is down, refused us...).

    The delivery log and the claims share the server, so this is the delivery log's
    `DeliveryLogUnavailable` whichever of them found it out.
    """


def redis_module() -> Any:
    """The `redis` package, or a one-line UsageError saying how to install it."""
    try:
        import redis  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise UsageError(
            "FREEMAD_QUEUE_URL names a Redis server but the redis package is not installed: "
            "pip install 'freemad[redis]'"
        ) from None
    return redis


def safe_url(url: str) -> str:
    """`url` without its password (and without a query string, which may carry one)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        port = parts.port
    except ValueError:
        return "the Redis URL in FREEMAD_QUEUE_URL"
    netloc = f"{host}:{port}" if port is not None else host
    if parts.username:
        netloc = f"{parts.username}@{netloc}"
    return f"{parts.scheme}://{netloc}{parts.path}"


class RedisClient:
    """One client from a URL; each failure of it is a `RedisStateError`, in one line."""

    def __init__(self, url: str) -> None:
        redis = redis_module()
        self.url = safe_url(url)
        self._errors: type[Exception] = redis.exceptions.RedisError
        # Nothing connects until the first command; the pool reconnects after a fork by itself.
        self.client: Any = redis.Redis.from_url(url)

    @contextmanager
    def guard(self) -> Iterator[None]:
        try:
            yield
        except self._errors as exc:
            # redis-py's messages name the host and port, never the password; one line regardless.
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise RedisStateError(
                f"the bot's state in Redis at {self.url} is unavailable: {reason[:200]}"
            ) from None

    def script(self, source: str) -> Any:
        return self.client.register_script(source)

    def run(self, script: Any, keys: Sequence[str], args: Sequence[Any]) -> Any:
        with self.guard():
            return script(keys=list(keys), args=list(args))

    def close(self) -> None:
        self.client.close()
