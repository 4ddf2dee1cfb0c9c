"""The acknowledgement spool on real files, real processes and the real delivery log: a frame
is read back only whole, a delivery kept before its 202 reaches the log even when its process is
killed at once, a live process's file is never taken from it, two adopters commit a delivery
once, a commit that fails loses nothing, and a graceful exit leaves nothing behind."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from freemad.bot import spool as spool_module
from freemad.bot.executors import LocalExecutor
from freemad.bot.ports import Delivery, DeliveryLogUnavailable
from freemad.bot.queue import waiting
from freemad.bot.spool import Spool, decode, encode
from freemad.bot.stores import JobRecorder, recorder_with_job
from tests.bot.conftest import Env, Scripted, delivery
from tests.github.payloads import labeled_issue


def issue(delivery_id: str) -> Delivery:
    return delivery(delivery_id, "issues", {**labeled_issue(), "n": delivery_id})


def recorder(env: Env) -> JobRecorder:
    env.register(Scripted())
    made = recorder_with_job(LocalExecutor(env.huey), env.deliveries)
    assert made is not None, "the queue is a table of the delivery log's file"
    return made


class Sink:
    """The web edge's sink (each batch and its jobs in one transaction), counting batches."""

    def __init__(self, record: JobRecorder, *, failures: int = 0) -> None:
        self.record = record
        self.failures = failures
        self.batches: list[list[str]] = []

    def __call__(self, deliveries: Sequence[Delivery]) -> None:
        try:
            if self.failures:
                self.failures -= 1
                raise DeliveryLogUnavailable("the delivery log is down")
            self.record.write([self.record.entry(d) for d in deliveries])
        finally:  # listed once its transaction is over: committed, or failed
            self.batches.append([d.delivery_id for d in deliveries])


def spool_files(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir()) if directory.is_dir() else []


def test_frames_are_read_back_whole_or_not_at_all() -> None:
    first = Delivery("a-1", "issues", "labeled", 7, "o/r", b'{"body": "\\n\\u00e9\\n"}')
    second = Delivery("a-2", "pull_request", None, None, None, bytes(range(256)))
    data = encode(first) + encode(second)
    assert decode(data) == ([first, second], len(data))
    for cut in (1, 7, len(data) - len(encode(second)) + 9, len(data) - 1):
        deliveries, used = decode(data[:cut])  # a write cut short: a torn last frame
        assert deliveries == [first][: len(deliveries)] and used in (0, len(encode(first)))
    flipped = bytearray(data)
    flipped[len(encode(first)) + 20] ^= 0x01  # a byte of the second frame changed
    assert decode(bytes(flipped)) == ([first], len(encode(first)))


@pytest.mark.parametrize(
    "text",
    ["line\nbreak\r\u2028", "lone \ud800 surrogate", "tab\tand nul\x00", "\u00e9\U0001f600"],
    ids=["newlines", "lone-surrogate", "controls", "non-ascii"],
)
def test_any_action_and_repository_a_payload_names_come_back_as_they_were(text: str) -> None:
    # The head is one JSON line before the body: nothing in a payload's strings may end it
    # early, and a lone surrogate (which orjson will not write) is written all the same.
    kept = Delivery("s-1", "issues", text, 2**40, text, b"{}")
    assert decode(encode(kept)) == ([kept], len(encode(kept)))


def test_a_burst_is_committed_in_few_transactions_each_delivery_with_its_job(env: Env) -> None:
    sink = Sink(recorder(env))
    spool = Spool(env.settings.state_dir / "spool", sink)
    ids = [f"b-{n}" for n in range(40)]
    threads = [threading.Thread(target=spool.append, args=(issue(i),)) for i in ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    env.wait_for(lambda: sum(map(len, sink.batches)) == len(ids))
    assert sorted(i for batch in sink.batches for i in batch) == sorted(ids)
    assert len(sink.batches) < len(ids)  # batched: not a transaction per delivery
    assert all(env.deliveries.status(i) == "queued" for i in ids)
    assert waiting(env.huey) == set(ids)
    spool.close()
    assert spool_files(spool.directory) == []  # a graceful exit leaves no file behind


def test_a_commit_that_fails_keeps_the_deliveries_and_commits_them_later(env: Env) -> None:
    sink = Sink(recorder(env), failures=2)
    spool = Spool(env.settings.state_dir / "spool", sink)
    spool.append(issue("f-1"))
    spool.append(issue("f-2"))
    env.wait_for(lambda: env.deliveries.status("f-2") == "queued", timeout=60)
    # The spool's thread may have drained f-1 before f-2 came: each failed batch is tried again
    # whole, with whatever came after it.
    tried = sink.batches
    assert len(tried) >= 3 and tried[0][0] == "f-1"
    assert all(set(failed) <= set(then) for failed, then in itertools.pairwise(tried[:3]))
    assert waiting(env.huey) == {"f-1", "f-2"}
    spool.close()


def test_a_redelivery_racing_its_original_through_the_spool_queues_one_job(env: Env) -> None:
    sink = Sink(recorder(env))
    spool = Spool(env.settings.state_dir / "spool", sink)
    spool.append(issue("r-1"))
    spool.append(issue("r-1"))  # GitHub's redelivery, before the first is committed
    replay = issue("r-1")
    spool.append(Delivery("r-2", replay.event, None, None, None, replay.body))  # a replay
    spool.close()
    assert env.deliveries.status("r-1") == "queued" and env.deliveries.status("r-2") is None
    assert waiting(env.huey) == {"r-1"}
    assert env.deliveries.known(issue("r-1")) and env.deliveries.known(
        Delivery("r-3", "issues", None, None, None, replay.body)
    )
    assert not env.deliveries.known(issue("r-4"))


_CHILD = """
import os, signal, sys, threading
from pathlib import Path
from freemad.bot.ports import Delivery
from freemad.bot.spool import Spool

directory, then, *ids = sys.argv[1:]
blocked = threading.Event()
spool = Spool(Path(directory), lambda deliveries: blocked.wait())  # it commits nothing
for delivery_id in ids:  # each, in a web worker, followed by its 202
    spool.append(Delivery(delivery_id, "issues", None, None, None, delivery_id.encode()))
print("appended", flush=True)
sys.stdin.readline()
if then == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
os._exit(0)  # the exit functions do not run: as if the process died
"""


class Child:
    """A process whose spool commits nothing, that appends `ids` and then, when told, kills
    itself (SIGKILL) or just ends."""

    def __init__(self, directory: Path, ids: list[str], then: str = "kill") -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(directory), then, *ids],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        assert self.process.stdout.readline() == "appended\n"

    def end(self) -> int:
        assert self.process.stdin is not None
        self.process.communicate("go\n", timeout=30)  # closes both pipes
        return self.process.returncode


def test_deliveries_of_a_killed_process_are_adopted_and_its_live_file_never_is(
    env: Env,
) -> None:
    directory = env.settings.state_dir / "spool"
    child = Child(directory, ["k-1", "k-2", "k-3"])
    sink = Sink(recorder(env))
    adopter = Spool(directory, sink)
    try:
        assert adopter.adopt() == 0  # the child lives and holds its file: not ours to take
        assert env.deliveries.status("k-1") is None
    finally:
        assert child.end() == -signal.SIGKILL
    assert adopter.adopt() == 3
    assert [env.deliveries.status(f"k-{n}") for n in (1, 2, 3)] == ["queued"] * 3
    assert waiting(env.huey) == {"k-1", "k-2", "k-3"}
    assert spool_files(directory) == []


def test_two_adopters_at_once_commit_each_delivery_once(env: Env) -> None:
    directory = env.settings.state_dir / "spool"
    for n in range(4):  # four dead processes' files
        assert Child(directory, [f"t-{n}-{m}" for m in range(5)]).end() == -signal.SIGKILL
    record = recorder(env)
    sinks = [Sink(record), Sink(record)]
    found: list[int] = []
    adopters = [Spool(directory, sink) for sink in sinks]
    threads = [threading.Thread(target=lambda s=s: found.append(s.adopt())) for s in adopters]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(found) >= 20  # a file read by both is committed twice, and recorded once
    assert len(waiting(env.huey)) == 20
    assert spool_files(directory) == []


def test_a_torn_tail_left_by_a_dead_process_is_set_aside_and_the_rest_committed(
    env: Env,
) -> None:
    directory = env.settings.state_dir / "spool"
    directory.mkdir(parents=True)
    whole = encode(issue("w-1"))
    (directory / "999999-0123456789ab.spool").write_bytes(whole + encode(issue("w-2"))[:30])
    adopter = Spool(directory, Sink(recorder(env)))
    assert adopter.adopt() == 1
    assert env.deliveries.status("w-1") == "queued" and env.deliveries.status("w-2") is None
    assert spool_files(directory) == ["999999-0123456789ab.bad"]  # kept for a person to read


def test_a_forked_process_appends_to_a_file_of_its_own(env: Env) -> None:
    directory = env.settings.state_dir / "spool"
    parent = Spool(directory, Sink(recorder(env)))
    parent.start()
    mine = spool_files(directory)
    read, write = os.pipe()
    pid = os.fork()  # as gunicorn forks a worker from a process that had opened its spool
    if pid == 0:
        try:
            parent.sink = lambda deliveries: None  # the child commits nothing
            parent.append(Delivery("c-1", "issues", None, None, None, b"c-1"))
            os.write(write, str(parent._path).encode())
        finally:
            os._exit(0)  # no exit functions: its file is left to be adopted
    os.close(write)
    child_path = os.read(read, 4096).decode()
    os.close(read)
    os.waitpid(pid, 0)
    assert len(mine) == 1 and Path(child_path).name != mine[0]
    assert sorted(spool_files(directory)) == sorted([mine[0], Path(child_path).name])
    assert parent.adopt() == 1  # the child's file, not the parent's own
    assert env.deliveries.status("c-1") == "queued"
    parent.close()
    assert spool_files(directory) == []


def test_a_spool_that_cannot_be_written_raises_and_keeps_nothing(env: Env, tmp_path: Path) -> None:
    from freemad.bot.spool import SpoolUnavailable

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    spool = Spool(blocker / "spool", Sink(recorder(env)))
    with pytest.raises(SpoolUnavailable):
        spool.append(issue("u-1"))
    assert env.deliveries.status("u-1") is None


def test_a_fork_while_another_thread_holds_the_spool_does_not_hang_the_child(env: Env) -> None:
    directory = env.settings.state_dir / "spool"
    spool = Spool(directory, Sink(recorder(env)))
    read, write = os.pipe()
    with spool._lock:  # as a request thread of the parent would, at the moment of the fork
        pid = os.fork()
        if pid == 0:
            try:
                signal.alarm(20)  # a child stuck on the copied lock ends, and the test fails
                spool.sink = lambda deliveries: None
                spool.append(Delivery("h-1", "issues", None, None, None, b"h-1"))
                os.write(write, b"appended")
            finally:
                os._exit(0)
    os.close(write)
    got = os.read(read, 64)
    os.close(read)
    os.waitpid(pid, 0)
    assert got == b"appended"
    assert spool.adopt() == 1 and env.deliveries.status("h-1") == "queued"


def test_appends_during_an_outage_do_not_hurry_the_retries(env: Env) -> None:
    sink = Sink(recorder(env), failures=10**6)
    spool = Spool(env.settings.state_dir / "spool", sink)
    spool.append(issue("o-0"))
    env.wait_for(lambda: len(sink.batches) >= 1)  # the first commit failed: retries back off
    for n in range(1, 40):
        spool.append(issue(f"o-{n}"))  # each wakes the thread
        threading.Event().wait(0.01)
    # Backing off from 0.1 s, doubling: at most a handful of tries in these 0.4 s, not one an
    # append (a loaded machine only makes fewer).
    assert len(sink.batches) <= 5, len(sink.batches)
    sink.failures = 0
    spool.close()
    assert all(env.deliveries.status(f"o-{n}") == "queued" for n in range(40))


class Refusing(Sink):
    """The web edge's sink, except that a batch holding one of `refused` fails as SQLite fails
    on a value it cannot bind (not an outage), or every batch does with `refused` None."""

    def __init__(self, record: JobRecorder, refused: set[str] | None) -> None:
        super().__init__(record)
        self.refused = refused

    def __call__(self, deliveries: Sequence[Delivery]) -> None:
        ids = {d.delivery_id for d in deliveries}
        if self.refused is None or ids & self.refused:
            self.batches.append(sorted(ids))
            raise UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")
        super().__call__(deliveries)


def test_a_delivery_the_log_refuses_is_set_aside_and_holds_back_no_other(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spool_module, "LINGER", 600.0)  # its thread waits: these drains are ours
    directory = env.settings.state_dir / "spool"
    record = recorder(env)
    spool = Spool(directory, Refusing(record, {"p-2"}), outage=(DeliveryLogUnavailable,))
    for n in (1, 2, 3):
        spool.append(issue(f"p-{n}"))
    spool.drain()
    assert [env.deliveries.status(f"p-{n}") for n in (1, 2, 3)] == ["queued", None, "queued"]
    [rejected] = directory.glob("*.rejected")
    assert decode(rejected.read_bytes())[0] == [issue("p-2")]
    assert rejected.stat().st_mode & 0o777 == 0o600  # as private as the spool's own files
    spool.close()
    # What a person does once the cause is fixed: the file becomes a spool file again.
    rejected.rename(rejected.with_suffix(".spool"))
    assert Spool(directory, Sink(record)).adopt() == 1
    assert env.deliveries.status("p-2") == "queued" and len(waiting(env.huey)) == 3


def test_when_no_delivery_goes_in_alone_nothing_is_set_aside(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spool_module, "LINGER", 600.0)  # its thread waits: these drains are ours
    # Every delivery failing alone is the log's failure, not theirs: all are tried again later.
    directory = env.settings.state_dir / "spool"
    sink = Refusing(recorder(env), None)
    spool = Spool(directory, sink, outage=(DeliveryLogUnavailable,))
    spool.append(issue("n-1"))
    spool.append(issue("n-2"))
    with pytest.raises(UnicodeEncodeError):
        spool.drain()
    assert list(directory.glob("*.rejected")) == []
    sink.refused = set()  # fixed
    spool.drain()
    assert env.deliveries.status("n-1") == env.deliveries.status("n-2") == "queued"
    spool.close()


def test_an_outage_is_not_taken_for_a_refused_delivery(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spool_module, "LINGER", 600.0)  # its thread waits: these drains are ours
    sink = Sink(recorder(env), failures=1)
    spool = Spool(env.settings.state_dir / "spool", sink, outage=(DeliveryLogUnavailable,))
    spool.append(issue("o-1"))
    spool.append(issue("o-2"))
    with pytest.raises(DeliveryLogUnavailable):
        spool.drain()
    assert sink.batches == [["o-1", "o-2"]]  # not tried one by one: the log is down
    spool.drain()
    assert sink.batches[-1] == ["o-1", "o-2"] and len(waiting(env.huey)) == 2
    spool.close()
