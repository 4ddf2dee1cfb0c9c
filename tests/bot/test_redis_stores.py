"""The delivery log and the claims in Redis, beside their SQLite originals: the same checks pass on
both. Redis is a real `redis-server` on loopback (one per test that asks; skipped where absent).

What Redis is for (several hosts) and a Redis that does not answer: test_redis_hosts.py.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from freemad.bot.claims import Claims
from freemad.bot.deliveries import DeliveryLog
from freemad.bot.job import Job
from freemad.bot.journal import Claim, JournalForge
from freemad.bot.ports import Delivery, Effect, Owner
from freemad.bot.queue import make_huey, recover_stale, register, waiting
from freemad.bot.settings import BotSettings
from freemad.bot.stores import claims_store, delivery_log
from freemad.github.forge import RecordingForge
from tests.bot import test_end_to_end
from tests.bot.conftest import dead_pid
from tests.github.payloads import REPO

# The fixture of the end-to-end test: a real redis-server on loopback, stopped after the test.
redis_url = test_end_to_end.redis_url
free_port = test_end_to_end.free_port

SECRET = "redis-state-secret"


def delivery(delivery_id: str = "d-1", body: bytes | None = None) -> Delivery:
    """A delivery with a body of its own (the same body under another id is a replay)."""
    if body is None:
        body = b'{"action":"opened","n":"%s"}' % delivery_id.encode()
    return Delivery(delivery_id, "issues", "opened", 42, REPO, body)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@dataclass
class Backend:
    """One kind of store: `log()` and `claims()` open a new client each (a "restart")."""

    name: str
    open_log: Callable[[], DeliveryLog]
    open_claims: Callable[[Callable[[], float]], Claims]
    opened: list[DeliveryLog | Claims] = field(default_factory=list)

    def log(self) -> DeliveryLog:
        made = self.open_log()
        self.opened.append(made)
        return made

    def claims(self, clock: Callable[[], float] = time.time) -> Claims:
        made = self.open_claims(clock)
        self.opened.append(made)
        return made


@pytest.fixture(params=["sqlite", "redis"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "redis":
        from freemad.bot.redis_stores import RedisClaims, RedisDeliveryLog

        url: str = request.getfixturevalue("redis_url")
        made = Backend(
            "redis",
            lambda: RedisDeliveryLog(url),
            lambda clock: RedisClaims(url, clock=clock),
        )
    else:
        state = tmp_path / "state"
        made = Backend(
            "sqlite",
            lambda: DeliveryLog(state / "deliveries.sqlite3"),
            lambda clock: Claims(state / "claims.db", clock=clock),
        )
    yield made
    for store in made.opened:
        store.close()


# --- the delivery log -----------------------------------------------------------------------


def test_record_get_mark_status_recent_counts(backend: Backend) -> None:
    log = backend.log()
    assert log.status("d-1") is None and log.get("d-1") is None
    assert log.record(delivery()) is True
    assert log.get("d-1") == delivery()
    assert log.status("d-1") == "queued"
    log.mark("d-1", "running", attempt=True)
    log.mark("d-1", "done", "commented")
    [record] = log.recent(10)
    assert (record.delivery_id, record.event, record.action) == ("d-1", "issues", "opened")
    assert (record.installation_id, record.repo) == (42, REPO)
    assert (record.status, record.attempts, record.detail) == ("done", 1, "commented")
    assert record.received_at <= record.updated_at
    assert log.counts(since=0) == {"done": 1}
    assert log.counts(since=time.time() + 60) == {}


def test_a_delivery_without_action_installation_or_repository(backend: Backend) -> None:
    log = backend.log()
    bare = Delivery("bare", "ping", None, None, None, b"\x00\xffbytes")
    assert log.record(bare, status="ignored")
    assert log.get("bare") == bare
    [record] = log.recent()
    assert (record.action, record.installation_id, record.repo) == (None, None, None)
    assert record.status == "ignored"


def test_a_redelivery_changes_nothing_even_after_a_restart(backend: Backend) -> None:
    log = backend.log()
    assert log.record(delivery(body=b"first"))
    log.mark("d-1", "done")
    assert log.record(delivery(body=b"second")) is False
    reopened = backend.log()
    assert reopened.record(delivery(body=b"third")) is False
    stored = reopened.get("d-1")
    assert stored is not None and stored.body == b"first"
    assert reopened.status("d-1") == "done"


def test_only_a_failure_before_any_attempt_is_taken_back(backend: Backend) -> None:
    log = backend.log()
    log.record(delivery("never-ran", body=b"first"))
    log.mark("never-ran", "failed", "submit failed: ConnectionError")
    assert log.record(delivery("never-ran", body=b"again")) is True
    assert log.status("never-ran") == "queued"
    taken = log.get("never-ran")
    assert taken is not None and taken.body == b"again"
    assert log.recent(1)[0].detail == ""
    log.record(delivery("ran"))
    log.mark("ran", "running", attempt=True)
    log.mark("ran", "failed", "boom")
    assert log.record(delivery("ran")) is False
    for status in ("parked", "ignored", "done"):
        log.record(delivery(status))
        log.mark(status, status)
        assert log.record(delivery(status)) is False


def test_marking_an_unknown_delivery_records_nothing(backend: Backend) -> None:
    log = backend.log()
    log.mark("nobody", "done", "no such delivery", attempt=True)
    assert log.status("nobody") is None and log.get("nobody") is None
    assert log.recent() == [] and log.counts(since=0) == {}


def test_unknown_statuses_are_refused(backend: Backend) -> None:
    log = backend.log()
    with pytest.raises(ValueError, match="unknown delivery status"):
        log.mark("d-1", "finished")
    with pytest.raises(ValueError, match="unknown delivery status"):
        log.record(delivery(), status="finished")


def test_recent_is_newest_first_and_limited(backend: Backend) -> None:
    log = backend.log()
    for n in range(5):
        log.record(delivery(f"d-{n}"))
    assert [r.delivery_id for r in log.recent(3)] == ["d-4", "d-3", "d-2"]
    log.mark("d-0", "done")
    assert log.counts(since=0) == {"queued": 4, "done": 1}


@pytest.mark.parametrize("replays", [False, True], ids=["redeliveries", "replays"])
def test_threads_on_two_clients_record_a_delivery_once(backend: Backend, replays: bool) -> None:
    logs = [backend.log(), backend.log()]
    results: list[bool] = []
    barrier = threading.Barrier(8)

    def race(n: int) -> None:
        # The same id each time, or the same body under eight ids.
        job = delivery(f"r-{n}", b"contended") if replays else delivery("contended")
        barrier.wait()
        results.append(logs[n % 2].record(job))

    threads = [threading.Thread(target=race, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [False] * 7 + [True]
    assert len(logs[0].recent()) == 1


def test_a_replay_under_another_delivery_id_is_a_duplicate(backend: Backend) -> None:
    log = backend.log()
    assert log.record(delivery("d-1", b"signed body"))
    assert log.record(delivery("d-2", b"signed body")) is False
    assert log.status("d-2") is None and log.get("d-2") is None
    # The signature covers the body only: another event header changes nothing either.
    replay = Delivery("d-3", "pull_request", None, None, None, b"signed body")
    assert log.record(replay) is False
    assert backend.log().record(delivery("d-4", b"signed body")) is False  # after a restart
    assert log.record(delivery("d-1", b"signed body")) is False  # a redelivery, as ever
    assert [r.delivery_id for r in log.recent()] == ["d-1"]
    assert log.record(delivery("d-5", b"another body"))


def test_a_refused_delivery_comes_back_by_its_own_id_only(backend: Backend) -> None:
    log = backend.log()
    assert log.record(delivery("refused", b"body A"))
    log.mark("refused", "failed", "submit failed: ConnectionError")
    assert log.record(delivery("replay", b"body A")) is False
    assert log.record(delivery("refused", b"body A")) is True  # GitHub's redelivery
    log.mark("refused", "failed", "submit failed: ConnectionError")
    # Taken back with another body, it lets go of the first one's digest.
    assert log.record(delivery("refused", b"body B")) is True
    assert log.record(delivery("other", b"body B")) is False
    assert log.record(delivery("other", b"body A")) is True


def test_unfinished_is_what_a_worker_may_still_have_to_run(backend: Backend) -> None:
    log = backend.log()
    assert log.unfinished() == []
    for name in ("queued", "running", "retrying", "refused", "parked", "done", "ping"):
        log.record(delivery(name), status="ignored" if name == "ping" else "queued")
    log.mark("running", "running", attempt=True)
    log.mark("retrying", "running", attempt=True)
    log.mark("retrying", "failed", "attempt 1 failed: boom")
    log.mark("refused", "failed", "submit failed")  # no attempt: GitHub redelivers it
    log.mark("parked", "parked")
    log.mark("done", "running", attempt=True)
    log.mark("done", "done")
    records = log.unfinished()
    assert [r.delivery_id for r in records] == ["queued", "running", "retrying"]  # oldest first
    assert [(r.status, r.attempts) for r in records] == [
        ("queued", 0),
        ("running", 1),
        ("failed", 1),
    ]
    assert records[2].detail == "attempt 1 failed: boom"
    log.mark("running", "done")
    log.record(delivery("refused"))  # its redelivery: queued again
    assert [r.delivery_id for r in backend.log().unfinished()] == [
        "queued",
        "retrying",
        "refused",
    ]


def test_the_sweep_finds_a_killed_job_behind_any_number_of_newer_deliveries(
    backend: Backend, tmp_path: Path
) -> None:
    log, claims = backend.log(), backend.claims()
    settings = settings_for(tmp_path / "sweep")
    huey = make_huey(settings)  # the queue itself is SQLite here: the stores are under test
    register(huey, Job(settings, deliveries=log, claims=claims))
    try:
        assert log.record(delivery("killed"))
        claims.claim("killed", Owner(Owner.here().host, dead_pid(), "gone"))
        log.mark("killed", "running", attempt=True)  # then its worker died
        # More newer deliveries than a sweep of the latest 2,000 ever looked past.
        for n in range(2001):
            assert log.record(delivery(f"new-{n}"), status="ignored")
        assert "killed" not in {r.delivery_id for r in log.recent(2000)}
        assert recover_stale(log, huey, claims=claims) == ["killed"]
        assert waiting(huey) == {"killed"}
    finally:
        huey.storage.close()


# --- the claims and their journal -----------------------------------------------------------


def test_a_live_claim_keeps_a_second_job_out_until_released(backend: Backend) -> None:
    claims = backend.claims()
    holder = Owner.here()
    assert claims.claim("d", holder) == 1
    assert claims.holds("d", holder) and claims.live("d")
    assert claims.claim("d", Owner.here()) is None
    assert claims.renew("d", holder)
    claims.release("d", Owner.here())  # not the holder: changes nothing
    assert claims.holds("d", holder)
    claims.release("d", holder)
    assert not claims.holds("d", holder) and not claims.live("d")
    assert not claims.renew("d", holder)
    second = Owner.here()
    assert claims.claim("d", second) == 2
    assert backend.claims().holds("d", second)  # a new client sees the same claim


def test_an_expired_claim_can_be_taken_and_renewal_moves_the_expiry(backend: Backend) -> None:
    clock = Clock()
    claims = backend.claims(clock)
    holder = Owner("host-a", 101, "a")
    assert claims.claim("d", holder, lease=10) == 1
    clock.now += 8
    assert claims.renew("d", holder, lease=10)  # now expires at 1018
    clock.now += 9
    assert claims.holds("d", holder) and claims.live("d")
    assert claims.claim("d", Owner("host-b", 202, "b"), lease=10) is None
    clock.now += 2
    assert not claims.holds("d", holder) and not claims.live("d")
    other = Owner("host-b", 202, "b")
    assert claims.claim("d", other, lease=10) == 2
    assert not claims.renew("d", holder, lease=10)  # the claim is someone else's now
    assert claims.holds("d", other) and not claims.holds("d", holder)


def test_two_hosts_contend_for_one_claim_and_one_wins(backend: Backend) -> None:
    clock = Clock()
    hosts = [backend.claims(clock), backend.claims(clock)]
    for host in hosts:  # open each first: the race is for the claim, not for creating claims.db
        assert not host.live("contended")
    owners = [Owner(f"host-{n % 2}", 100 + n, f"job-{n}") for n in range(8)]
    results: list[tuple[Owner, int | None]] = []
    barrier = threading.Barrier(len(owners))

    def race(n: int) -> None:
        barrier.wait()
        results.append((owners[n], hosts[n % 2].claim("contended", owners[n])))

    threads = [threading.Thread(target=race, args=(n,)) for n in range(len(owners))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [(owner, attempt) for owner, attempt in results if attempt is not None]
    assert len(winners) == 1 and winners[0][1] == 1
    (winner, _), (a, b) = winners[0], hosts
    assert a.holds("contended", winner) and b.holds("contended", winner)
    assert all(not a.holds("contended", o) for o in owners if o != winner)


def test_a_holder_gone_on_this_host_is_not_live(backend: Backend) -> None:
    claims = backend.claims()
    dead = Owner(Owner.here().host, dead_pid(), "gone")
    assert claims.claim("d", dead) == 1
    assert not claims.live("d")
    assert claims.claim("d", Owner.here()) == 2
    # Elsewhere, only the lease tells: a PID on another host is not ours to look up.
    far = Owner("another-host#pid:[1]", dead_pid(), "far")
    assert claims.claim("e", far) == 1
    assert claims.live("e") and claims.claim("e", Owner.here()) is None


def test_the_journal_survives_a_new_client(backend: Backend) -> None:
    claims = backend.claims()
    claims.record("d", "comment", 1, Effect(REPO, 7, 1001, "https://x/1"))
    claims.record("d", "pull", 1, Effect(REPO, 8, 8, "https://x/pull/8"))
    reopened = backend.claims()
    assert reopened.effect("d", "comment", 1) == Effect(REPO, 7, 1001, "https://x/1")
    assert reopened.effect("d", "pull", 1) == Effect(REPO, 8, 8, "https://x/pull/8")
    assert reopened.effect("d", "comment", 2) is None
    assert reopened.effect("other", "comment", 1) is None
    reopened.record("d", "comment", 1, Effect(REPO, 7, 1002, "https://x/2"))
    assert claims.effect("d", "comment", 1) == Effect(REPO, 7, 1002, "https://x/2")


def test_a_rerun_on_another_client_edits_what_the_first_posted(backend: Backend) -> None:
    forge = RecordingForge()
    first_host, second_host = backend.claims(), backend.claims()
    first = Owner("host-a", 1, "first")
    claim = Claim(first_host, "d", first, first_host.claim("d", first) or 0)
    posted = JournalForge(forge, claim).comment(REPO, 7, "first run's answer")
    first_host.release("d", first)

    second = Owner("host-b", 2, "second")
    rerun = Claim(second_host, "d", second, second_host.claim("d", second) or 0)
    again = JournalForge(forge, rerun).comment(REPO, 7, "second run's answer")
    assert rerun.attempt == 2 and again.id == posted.id
    assert [c.method for c in forge.calls] == ["comment", "edit_comment"]


# --- Redis only -----------------------------------------------------------------------------


def test_the_same_host_name_on_another_machine_is_not_taken_for_this_one(redis_url: str) -> None:
    from freemad.bot.redis_stores import RedisClaims

    claims = RedisClaims(redis_url)
    try:
        dead = Owner(Owner.here().host, dead_pid(), "twin")
        assert claims.claim("d", dead) == 1
        # A host with the same name and PID namespace inode, booted apart from this one.
        claims._redis.client.hset("freemad:claim:d", "boot", "another-boot-id")
        assert claims.live("d")
        assert claims.claim("d", Owner.here()) is None
    finally:
        claims.close()


def test_keys_live_under_the_prefix_and_old_deliveries_are_dropped(redis_url: str) -> None:
    from freemad.bot.redis_stores import RedisClaims, RedisDeliveryLog

    short = RedisDeliveryLog(redis_url, prefix="short:", retention=0.3)
    other = RedisDeliveryLog(redis_url)
    claims = RedisClaims(redis_url, prefix="short:")
    try:
        assert short.record(delivery("old"))
        claims.claim("old", Owner.here())
        claims.record("old", "comment", 1, Effect(REPO, 7, 1, "u"))
        assert [r.delivery_id for r in short.unfinished()] == ["old"]
        digest = hashlib.sha256(delivery("old").body).hexdigest()
        keys = sorted(k.decode() for k in short._redis.client.keys("*"))
        assert keys == [
            f"short:body:{digest}",
            "short:claim:old",
            "short:deliveries",
            "short:delivery:old",
            "short:effects:old",
            "short:unfinished",
            "short:unfinished:adopted",
        ]
        assert other.get("old") is None and other.recent() == [] and other.unfinished() == []
        for key in ("short:delivery:old", f"short:body:{digest}"):
            assert 0 < short._redis.client.pttl(key) <= 300
        time.sleep(0.4)
        assert short.record(delivery("new"))
        assert short.record(delivery("replay-of-old", delivery("old").body))  # old is gone
        assert [r.delivery_id for r in short.recent()] == ["replay-of-old", "new"]
        assert [r.delivery_id for r in short.unfinished()] == ["new", "replay-of-old"]
        assert short.get("old") is None
        assert short.counts(since=0) == {"queued": 2}
    finally:
        for store in (short, other, claims):
            store.close()


def test_unfinished_deliveries_an_older_version_recorded_are_found(redis_url: str) -> None:
    from freemad.bot.redis_stores import RedisDeliveryLog

    older = RedisDeliveryLog(redis_url)
    newer = RedisDeliveryLog(redis_url)
    try:
        for name in ("queued", "running", "done"):
            older.record(delivery(name))
        older.mark("running", "running", attempt=True)
        older.mark("done", "done")
        # What an older version left: the deliveries, and no set of the unfinished ones.
        older._redis.client.delete("freemad:unfinished")
        assert [r.delivery_id for r in newer.unfinished()] == ["queued", "running"]
        assert newer._redis.client.exists("freemad:unfinished:adopted")
        newer.mark("queued", "done")
        assert [r.delivery_id for r in older.unfinished()] == ["running"]
    finally:
        older.close()
        newer.close()


def test_the_stores_follow_the_queue(tmp_path: Path, redis_url: str) -> None:
    from freemad.bot.redis_stores import RedisClaims, RedisDeliveryLog

    local = settings_for(tmp_path / "a")
    assert type(delivery_log(local)) is DeliveryLog and type(claims_store(local)) is Claims
    shared = settings_for(tmp_path / "a", redis_url)
    log, claims = delivery_log(shared), claims_store(shared)
    assert isinstance(log, RedisDeliveryLog) and isinstance(claims, RedisClaims)
    log.close()
    claims.close()
    assert not (tmp_path / "a").exists()  # nothing was written to the state directory


def settings_for(state_dir: Path, queue_url: str | None = None) -> BotSettings:
    env = {
        "FREEMAD_WEBHOOK_SECRET": SECRET,
        "FREEMAD_GITHUB_TOKEN": "t0ken",
        "FREEMAD_STATE_DIR": str(state_dir),
    }
    if queue_url is not None:
        env["FREEMAD_QUEUE_URL"] = queue_url
    return BotSettings.from_env(env)
