"""The local queue (`freemad/bot/queue.py`) on real SQLite and a real huey consumer: the sweep that
re-enqueues what nothing else will run, the Redis queue's missing package, depth and heartbeat."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, cast

import pytest

from freemad.bot.executors import LocalExecutor
from freemad.bot.ports import Owner
from freemad.bot.queue import (
    HEARTBEAT_KEY,
    enqueue,
    make_huey,
    recover_stale,
    waiting,
)
from freemad.errors import UsageError
from tests.bot.conftest import LABELED, Env, Scripted, dead_pid, delivery, settings_for
from tests.github.payloads import labeled_issue


def test_the_sweep_re_enqueues_what_nothing_else_will_run(env: Env) -> None:
    env.register(Scripted())
    now = time.time()
    for name in ("killed", "alive", "lost", "fresh", "waiting", "refused", "done"):
        # A body of its own each: the same body under another id would be a replay.
        assert env.deliveries.record(delivery(name, "issues", {**labeled_issue(), "n": name}))
    dead = Owner(Owner.here().host, dead_pid(), "gone")
    env.claims.claim("killed", dead)
    env.deliveries.mark("killed", "running", attempt=True)
    env.claims.claim("alive", Owner.here())  # a job in this very process, still at it
    env.deliveries.mark("alive", "running", attempt=True)
    env.deliveries.mark("refused", "failed", "submit failed")  # attempts 0: GitHub redelivers
    env.deliveries.mark("done", "done")
    enqueue(env.huey, "waiting")

    recovered = recover_stale(env.deliveries, env.huey, 60, claims=env.claims, now=now + 120)
    assert sorted(recovered) == ["fresh", "killed", "lost"]
    # "fresh" was recorded a moment ago as far as a sweep at `now` can tell: left alone.
    assert "fresh" not in recover_stale(env.deliveries, env.huey, 60, claims=env.claims, now=now)
    assert waiting(env.huey) >= {"killed", "lost", "waiting"}


def test_redis_without_the_redis_package_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)  # import redis -> ImportError
    queue_url = cast(Any, "redis://127.0.0.1:6379/0")
    with pytest.raises(UsageError, match=r"pip install 'freemad\[redis\]'"):
        make_huey(settings_for(tmp_path, queue_url=queue_url))


def test_the_local_executor_reports_depth_and_the_workers_heartbeat(env: Env) -> None:
    env.register(Scripted())
    executor = LocalExecutor(env.huey)
    assert executor.depth() == 0
    assert executor.heartbeat() is None
    env.accept(LABELED)
    assert executor.depth() == 1
    env.huey.put(HEARTBEAT_KEY, 1234.5)
    assert executor.heartbeat() == 1234.5
