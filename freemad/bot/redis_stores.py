"""The delivery log and the claims in Redis: what lets workers on several hosts share the work.

With `FREEMAD_QUEUE_URL` naming a Redis server, the queue is there, so the delivery log and the
claims (with their journal) are kept in the same server: a worker on any host can read a
delivery that any web process recorded, and a lease taken on one host keeps out every other.
`RedisDeliveryLog` and `RedisClaims` have the methods, results and rules of `DeliveryLog` and
`Claims` (the SQLite ones): both pairs fit the `DeliveryStore` and `ClaimStore` protocols of
`freemad.bot.ports`, which is what the rest of the bot is typed with. Every Redis failure is one
line, a `DeliveryLogUnavailable` as the SQLite log's failures are (`redis_client`).

Keys, under a prefix (`freemad:` by default):

- `freemad:delivery:<id>`: a hash, one delivery: `event`, `action`, `installation_id`, `repo`,
  `body`, `body_sha256`, `received_at`, `updated_at`, `status`, `attempts`, `detail` (a field
  that would be None is absent).
- `freemad:deliveries`: a sorted set of delivery ids scored by `received_at`, for `recent` and
  `counts`.
- `freemad:unfinished`: a sorted set of the ids a worker may still have to run (`queued`,
  `running`, or `failed` after an attempt), scored by `received_at`, for `unfinished`: the
  scripts of `record` and `mark` keep it in step with each delivery's status.
- `freemad:unfinished:adopted`: set once the deliveries an older version recorded (before
  `freemad:unfinished` existed) have been looked through for unfinished ones.
- `freemad:body:<sha256>`: the id of the delivery whose body has that SHA-256, so that a replay
  (the same body under another delivery id) is a duplicate too.
- `freemad:claim:<id>`: a hash, the delivery's claim: `owner`, `host`, `pid`, `boot` (the holder
  machine's boot id), `expires` (Unix time, by the `clock` given), `attempts`. A released claim
  keeps only `expires` = 0 and `attempts`.
- `freemad:effects:<id>`: a hash, the delivery's journal: field `<kind>:<seq>`, value the JSON
  array `[repo, number, ref, url]`.

Every write that must not race is one Lua script, which Redis runs atomically: `record` inserts
only a new id with a body no other delivery has (or takes back a delivery whose submission failed
before any attempt), `mark` moves the id in or out of the unfinished set with its status, `claim`
succeeds only when no live lease is held, `renew` and `release` only for the holder.

Retention: a delivery's hash and its body's key expire 30 days (`RETENTION_SECONDS`) after it
was recorded, a claim's 30 days after it was last taken or renewed, a journal's 30 days after its
last entry; each `record` drops ids older than that from both sorted sets, so Redis does not grow
for ever. GitHub offers a redelivery for 3 days (7 on GitHub Enterprise Server), so deduplication
is not weakened; a replay of a body is a duplicate for those 30 days.

A holder's death is noticed by its lease running out. The shortcut of the SQLite claims (a
holder whose process is gone is not live) is taken only when the holder's host key and boot id
are both this machine's: two hosts given the same host name share a host key, never a boot id.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from freemad.bot.ports import (
    LEASE_SECONDS,
    Delivery,
    DeliveryRecord,
    Effect,
    Owner,
    body_digest,
    check_status,
    holder_gone,
)
from freemad.bot.redis_client import RedisClient
from freemad.bot.redis_scripts import ADOPT, CLAIM, MARK, RECORD, RELEASE, RENEW

PREFIX = "freemad:"
RETENTION_SECONDS = 30 * 24 * 3600.0
ADOPT_BATCH = 500  # deliveries an older version recorded, looked through per round trip
_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")

_FIELDS = (
    "event",
    "action",
    "installation_id",
    "repo",
    "received_at",
    "updated_at",
    "status",
    "attempts",
    "detail",
)


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


def _boot_id() -> str:
    try:
        return _BOOT_ID.read_text(encoding="ascii").strip()
    except OSError:
        return ""


class RedisDeliveryLog:
    """The delivery log in Redis at `url`; safe to share between threads, processes and hosts."""

    local_file = False  # a server shared by every host: nothing here to line up

    def __init__(
        self, url: str, *, prefix: str = PREFIX, retention: float = RETENTION_SECONDS
    ) -> None:
        self._redis = RedisClient(url)
        self.url = self._redis.url  # without the password
        self.prefix, self.retention = prefix, retention
        self._index = f"{prefix}deliveries"
        self._unfinished = f"{prefix}unfinished"
        self._adopted = f"{prefix}unfinished:adopted"
        self._has_adopted = False
        self._record = self._redis.script(RECORD)
        self._mark = self._redis.script(MARK)
        self._adopt = self._redis.script(ADOPT)

    def _key(self, delivery_id: str) -> str:
        return f"{self.prefix}delivery:{delivery_id}"

    def _body_key(self, digest: str) -> str:
        return f"{self.prefix}body:{digest}"

    def record(self, delivery: Delivery, *, status: str = "queued") -> bool:
        """Record `delivery`; True if it is new (or its earlier submission failed), else False.

        False too for a replay: the same body under another delivery id, while that one is kept.
        """
        check_status(status)
        now = time.time()
        digest = body_digest(delivery.body)
        optional: list[Any] = []
        for name, value in (
            ("action", delivery.action),
            ("installation_id", delivery.installation_id),
            ("repo", delivery.repo),
        ):
            if value is not None:
                optional += [name, value]
        args = [
            delivery.delivery_id,
            repr(now),
            status,
            _ms(self.retention),
            repr(now - self.retention),
            delivery.body,
            delivery.event,
            digest,
            self._body_key(""),
            *optional,
        ]
        keys = [
            self._key(delivery.delivery_id),
            self._index,
            self._unfinished,
            self._body_key(digest),
        ]
        return int(self._redis.run(self._record, keys, args)) == 1

    def get(self, delivery_id: str) -> Delivery | None:
        with self._redis.guard():
            row = self._redis.client.hmget(
                self._key(delivery_id), "event", "action", "installation_id", "repo", "body"
            )
        event, action, installation_id, repo, body = row
        if event is None or body is None:
            return None
        return Delivery(
            delivery_id=delivery_id,
            event=_text(event),
            action=None if action is None else _text(action),
            installation_id=None if installation_id is None else int(installation_id),
            repo=None if repo is None else _text(repo),
            body=bytes(body),
        )

    def mark(
        self, delivery_id: str, status: str, detail: str = "", *, attempt: bool = False
    ) -> None:
        """Set the delivery's status (and detail); `attempt` counts one more try at its work."""
        check_status(status)
        args = [status, detail, repr(time.time()), int(attempt), delivery_id]
        self._redis.run(self._mark, [self._key(delivery_id), self._unfinished], args)

    def status(self, delivery_id: str) -> str | None:
        with self._redis.guard():
            value = self._redis.client.hget(self._key(delivery_id), "status")
        return None if value is None else _text(value)

    def recent(self, limit: int = 50) -> list[DeliveryRecord]:
        """The latest `limit` deliveries, newest first."""
        if limit <= 0:
            return []
        with self._redis.guard():
            ids = [_text(i) for i in self._redis.client.zrevrange(self._index, 0, limit - 1)]
            rows = self._rows(ids, _FIELDS)
        return self._records(ids, rows)

    def unfinished(self) -> list[DeliveryRecord]:
        """Every delivery a worker may still have to run, however old, oldest first: `queued`,
        `running`, or `failed` after an attempt (the ids are in a set of their own)."""
        self._adopt_older()
        with self._redis.guard():
            ids = [_text(i) for i in self._redis.client.zrange(self._unfinished, 0, -1)]
            rows = self._rows(ids, _FIELDS)
        return [
            record
            for record in self._records(ids, rows)
            if record.status in ("queued", "running")
            or (record.status == "failed" and record.attempts > 0)
        ]

    def _adopt_older(self) -> None:
        """Once per server: put the unfinished deliveries an older version recorded (it kept no
        unfinished set) into the set, so that an upgrade loses none of them."""
        if self._has_adopted:
            return
        client = self._redis.client
        with self._redis.guard():
            if not client.exists(self._adopted):
                ids = [_text(i) for i in client.zrange(self._index, 0, -1)]
                for start in range(0, len(ids), ADOPT_BATCH):
                    pipe = client.pipeline(transaction=False)
                    for delivery_id in ids[start : start + ADOPT_BATCH]:
                        keys = [self._key(delivery_id), self._unfinished]
                        self._adopt(keys=keys, args=[delivery_id], client=pipe)
                    pipe.execute()
                client.set(self._adopted, repr(time.time()))
        self._has_adopted = True

    def _records(self, ids: list[str], rows: list[list[Any]]) -> list[DeliveryRecord]:
        records = []
        for delivery_id, row in zip(ids, rows, strict=True):
            values = dict(zip(_FIELDS, row, strict=True))
            if values["status"] is None:  # expired since the index was read
                continue
            records.append(
                DeliveryRecord(
                    delivery_id=delivery_id,
                    event=_text(values["event"]),
                    action=None if values["action"] is None else _text(values["action"]),
                    installation_id=None
                    if values["installation_id"] is None
                    else int(values["installation_id"]),
                    repo=None if values["repo"] is None else _text(values["repo"]),
                    received_at=float(values["received_at"]),
                    updated_at=float(values["updated_at"]),
                    status=_text(values["status"]),
                    attempts=int(values["attempts"] or 0),
                    detail=_text(values["detail"] or b""),
                )
            )
        return records

    def counts(self, since: float) -> dict[str, int]:
        """How many deliveries received since `since` (Unix time) are in each status."""
        with self._redis.guard():
            ids = [_text(i) for i in self._redis.client.zrangebyscore(self._index, since, "+inf")]
            rows = self._rows(ids, ("status",))
        found = Counter(_text(row[0]) for row in rows if row[0] is not None)
        return dict(found)

    def _rows(self, ids: list[str], fields: Sequence[str]) -> list[list[Any]]:
        pipe = self._redis.client.pipeline(transaction=False)
        for delivery_id in ids:
            pipe.hmget(self._key(delivery_id), *fields)
        return list(pipe.execute()) if ids else []

    def close(self) -> None:
        self._redis.close()


class RedisClaims:
    """Leases on deliveries, and the journal of what each delivery's jobs posted, in Redis."""

    def __init__(
        self,
        url: str,
        *,
        clock: Callable[[], float] = time.time,
        prefix: str = PREFIX,
        retention: float = RETENTION_SECONDS,
    ) -> None:
        self._redis = RedisClient(url)
        self.url = self._redis.url  # without the password
        self.prefix, self.retention = prefix, retention
        self._clock = clock
        self._boot = _boot_id()
        self._claim = self._redis.script(CLAIM)
        self._renew = self._redis.script(RENEW)
        self._release = self._redis.script(RELEASE)

    def _key(self, delivery_id: str) -> str:
        return f"{self.prefix}claim:{delivery_id}"

    def _effects(self, delivery_id: str) -> str:
        return f"{self.prefix}effects:{delivery_id}"

    def claim(self, delivery_id: str, owner: Owner, lease: float = LEASE_SECONDS) -> int | None:
        """Take the delivery's claim: the attempt number (from 1), or None when it is held."""
        now = self._clock()
        args = [
            repr(now),
            str(owner),
            owner.host,
            owner.pid,
            self._boot,
            repr(now + lease),
            _ms(max(lease, self.retention)),
        ]
        keys = [self._key(delivery_id)]
        result = self._redis.run(self._claim, keys, [*args, ""])
        if int(result[0]) == 0:
            holder, host, pid, boot = (_text(value) for value in result[1:5])
            if not self._dead(host, pid, boot):
                return None
            # Its process is certainly dead: replace exactly that holder, if it still holds.
            result = self._redis.run(self._claim, keys, [*args, holder])
            if int(result[0]) == 0:
                return None
        return int(result[0])

    def renew(self, delivery_id: str, owner: Owner, lease: float = LEASE_SECONDS) -> bool:
        args = [str(owner), repr(self._clock() + lease), _ms(max(lease, self.retention))]
        return int(self._redis.run(self._renew, [self._key(delivery_id)], args)) == 1

    def holds(self, delivery_id: str, owner: Owner) -> bool:
        with self._redis.guard():
            holder, expires = self._redis.client.hmget(self._key(delivery_id), "owner", "expires")
        if holder is None or expires is None:
            return False
        return _text(holder) == str(owner) and float(expires) > self._clock()

    def live(self, delivery_id: str) -> bool:
        """Whether someone holds the delivery's claim and may still be working on it."""
        with self._redis.guard():
            row = self._redis.client.hmget(
                self._key(delivery_id), "owner", "host", "pid", "boot", "expires"
            )
        holder, host, pid, boot, expires = row
        if holder is None or expires is None or float(expires) <= self._clock():
            return False
        return not self._dead(_text(host or b""), _text(pid or b"0"), _text(boot or b""))

    def _dead(self, host: str, pid: str, boot: str) -> bool:
        """The same-host shortcut: only on this very machine (host key and boot id)."""
        try:
            number = int(pid)
        except ValueError:
            return False
        return boot == self._boot and holder_gone(host, number)

    def release(self, delivery_id: str, owner: Owner) -> None:
        self._redis.run(self._release, [self._key(delivery_id)], [str(owner)])

    def effect(self, delivery_id: str, kind: str, seq: int) -> Effect | None:
        with self._redis.guard():
            value = self._redis.client.hget(self._effects(delivery_id), f"{kind}:{seq}")
        if value is None:
            return None
        repo, number, ref, url = json.loads(value)
        return Effect(str(repo), int(number), int(ref), str(url))

    def record(self, delivery_id: str, kind: str, seq: int, effect: Effect) -> None:
        value = json.dumps([effect.repo, effect.number, effect.ref, effect.url])
        key = self._effects(delivery_id)
        with self._redis.guard():
            pipe = self._redis.client.pipeline(transaction=True)
            pipe.hset(key, f"{kind}:{seq}", value)
            pipe.pexpire(key, _ms(self.retention))
            pipe.execute()

    def close(self) -> None:
        self._redis.close()
