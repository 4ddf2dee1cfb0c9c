"""The bot's ports (freemad/bot/ports.py): each delivery log says it is unavailable in the one
error the web edge catches, the edge lines acknowledgements up on what the adapters declare
(never on their types), and the bot's modules import each other without a cycle."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from freemad.bot.deliveries import DeliveryLog
from freemad.bot.executors import LocalExecutor
from freemad.bot.ports import Delivery, DeliveryLogUnavailable, DeliveryRecord
from freemad.bot.web import create_app
from tests.bot.test_web import RecordingExecutor, settings_for, sign
from tests.github.payloads import labeled_issue


def delivery(delivery_id: str = "d-1") -> Delivery:
    return Delivery(delivery_id, "issues", "labeled", 1, "octo-org/octo-repo", b'{"n": 1}')


def test_a_damaged_sqlite_log_is_unavailable_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "deliveries.sqlite3"
    path.write_bytes(b"not a database at all, " * 100)
    log = DeliveryLog(path)
    calls = [
        lambda: log.record(delivery()),
        lambda: log.get("d-1"),
        lambda: log.mark("d-1", "done"),
        lambda: log.status("d-1"),
        lambda: log.recent(5),
        log.unfinished,
        lambda: log.counts(since=0),
    ]
    for call in calls:
        with pytest.raises(DeliveryLogUnavailable) as raised:
            call()
        line = raised.value.one_line()
        assert line.startswith(f"the delivery log {path} is unavailable: ") and "\n" not in line
    with pytest.raises(ValueError, match="unknown delivery status"):  # a caller's mistake stays one
        log.mark("d-1", "finished")
    log.close()

    under_a_file = DeliveryLog(path / "state" / "deliveries.sqlite3")
    with pytest.raises(DeliveryLogUnavailable):
        under_a_file.counts(since=0)


class DownLog:
    """A delivery log of no known type that cannot be reached."""

    local_file = False

    def record(self, delivery: Delivery, *, status: str = "queued") -> bool:
        raise DeliveryLogUnavailable("the delivery log is down")

    def counts(self, since: float) -> dict[str, int]:
        raise DeliveryLogUnavailable("the delivery log is down")

    def recent(self, limit: int = 50) -> list[DeliveryRecord]:
        raise DeliveryLogUnavailable("the delivery log is down")


def post(client: FlaskClient, delivery_id: str) -> int:
    body = json.dumps({**labeled_issue(), "n": delivery_id}).encode()  # no two bodies alike
    headers = {
        "X-GitHub-Event": "issues",
        "X-GitHub-Delivery": delivery_id,
        "X-Hub-Signature-256": sign(body),
    }
    return client.post("/webhook", data=body, headers=headers).status_code


def test_the_edge_answers_503_for_any_log_that_is_unavailable(tmp_path: Path) -> None:
    executor = RecordingExecutor()
    settings = settings_for(tmp_path / "state")
    client = create_app(settings, executor=executor, deliveries=DownLog()).test_client()  # type: ignore[arg-type]
    assert post(client, "d-1") == 503
    health = client.get("/healthz")
    assert health.status_code == 503 and health.get_json()["error"] == (
        "the delivery log is unavailable"
    )
    assert executor.submitted == []


def test_acknowledgements_line_up_only_where_both_adapters_say_they_are_local(
    tmp_path: Path,
) -> None:
    from huey import MemoryHuey  # type: ignore[import-untyped]

    from freemad.bot.job import Job
    from freemad.bot.queue import register

    lock = tmp_path / "state" / "ack.lock"
    settings = settings_for(tmp_path / "state")
    log = DeliveryLog(tmp_path / "elsewhere" / "deliveries.sqlite3")
    try:
        # An executor that does not say its submit is quick: no lock.
        slow = create_app(settings, executor=RecordingExecutor(), deliveries=log).test_client()
        assert post(slow, "d-1") == 202 and not lock.exists()
        # The local queue on a SQLite log: the acknowledgement lock.
        huey = MemoryHuey("ports-test", results=False)
        register(huey, Job(settings, deliveries=log))
        quick = create_app(settings, executor=LocalExecutor(huey), deliveries=log).test_client()
        assert LocalExecutor.quick_submit and log.local_file
        assert post(quick, "d-2") == 202 and lock.exists()
    finally:
        log.close()


def test_the_bot_modules_import_no_cycle_and_the_edge_no_adapter() -> None:
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("freemad", include_external_packages=True, cache_dir=None)
    modules = {m for m in graph.modules if m.startswith("freemad.bot.")}
    # Every import counts, at the top, in a function or for type checking only.
    imports = {m: graph.find_modules_directly_imported_by(m) & modules for m in modules}
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            pytest.fail("import cycle: " + " -> ".join([*path[path.index(module) :], module]))
        if module not in done:
            for imported in sorted(imports[module]):
                visit(imported, [*path, module])
            done.add(module)

    for module in sorted(modules):
        visit(module, [])
    edge = graph.find_modules_directly_imported_by("freemad.bot.web")
    adapters = {"freemad.bot.deliveries", "freemad.bot.claims", "freemad.bot.redis_stores"}
    assert not edge & (adapters | {"freemad.bot.redis_client", "sqlite3", "redis"})
