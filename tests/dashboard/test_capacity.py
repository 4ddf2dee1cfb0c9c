"""The live dashboard's caps on open event streams (`freemad.dashboard.live.stream_capacity`), attacked over
real gunicorn on loopback: one stream over the total (503), one client over its share (429)
whatever headers it sends, a worker asked for more streams than it has threads to spare (it
keeps answering /health and pages), a worker killed while it held streams, and the page's
script refused. Clients come from addresses of their own on loopback (127.0.0.x)."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from freemad.dashboard.live.dashboard_settings import DashboardSettings
from freemad.dashboard.live.server import create_app
from freemad.dashboard.live.stream_capacity import Caps, client_key
from freemad.dashboard.reading.sources import TranscriptDir
from freemad.errors import UsageError
from tests.conftest import wait_for
from tests.dashboard.browser import LivePage
from tests.dashboard.served import Browser, Served, serve
from tests.dashboard.test_live import dashboard, one_line_error


@pytest.fixture
def transcripts(tmp_path: Path) -> Path:
    folder = tmp_path / "transcripts"
    folder.mkdir()
    return folder


@contextmanager
def streams(port: int, *sources: str, **headers: str) -> Iterator[list[Browser]]:
    """An event stream from each of `sources`, each answered (a stream or a refusal); closed after."""
    browsers = [Browser(port, source=source, headers=headers) for source in sources]
    for browser in browsers:
        browser.start()
        browser.wait()
    try:
        yield browsers
    finally:
        for browser in browsers:
            browser.close()


def refusal(browser: Browser) -> tuple[int | None, str, str]:
    """A refused stream's status, Retry-After and one-line reason (a JSON body)."""
    assert browser.headers["content-type"] == "application/json"
    return browser.status, browser.headers["retry-after"], json.loads(browser.body)["error"]


def served(browsers: list[Browser]) -> list[int | None]:
    return [b.status for b in browsers]


def caps_line(server: Served) -> str:
    return server.log.read_text().splitlines()[1]


def test_the_stream_over_the_total_is_refused_503_and_health_and_pages_answer(
    tmp_path: Path, transcripts: Path
) -> None:
    with serve(
        tmp_path, "--dir", str(transcripts), "--workers", "2", "--max-streams", "4"
    ) as server:
        assert caps_line(server) == (
            "live updates: at most 4 open pages, 1 per client address, 6 per worker"
        )
        held = [f"127.0.0.{n}" for n in range(2, 6)]
        with streams(server.port, *held) as open_ones:
            assert served(open_ones) == [200] * 4
            with streams(server.port, "127.0.0.6") as (over,):
                status, retry_after, why = refusal(over)
            assert (status, retry_after) == (503, "30")
            assert "--max-streams" in why
            assert server.get("/health")[0] == 200
            assert server.get("/")[0] == 200
            open_ones[0].close()  # a page closed: its place is free once the server notices

            def another() -> bool:
                with streams(server.port, "127.0.0.7") as (next_one,):
                    return next_one.status == 200

            wait_for(another, "a stream in the place of the closed one", 30)


def test_one_client_over_its_share_is_refused_429_whatever_it_claims(
    tmp_path: Path, transcripts: Path
) -> None:
    with serve(tmp_path, "--dir", str(transcripts), "--max-streams-per-client", "2") as server:
        assert caps_line(server) == (
            "live updates: at most 12 open pages, 2 per client address, 6 per worker"
        )
        with streams(server.port, "127.0.0.2", "127.0.0.2") as mine:
            assert served(mine) == [200, 200]
            # Headers that name another client are the client's own words: not believed.
            claims = {
                "X-Forwarded-For": "10.1.2.3",
                "X-Real-IP": "10.1.2.4",
                "Forwarded": "for=10.1.2.5",
            }
            with streams(server.port, "127.0.0.2", **claims) as (third,):
                status, retry_after, why = refusal(third)
            assert (status, retry_after) == (429, "30")
            assert "--max-streams-per-client" in why
            with streams(server.port, "127.0.0.3") as (someone_else,):
                assert someone_else.status == 200


def test_behind_a_trusted_proxy_a_client_is_the_address_the_proxy_saw(
    tmp_path: Path, transcripts: Path
) -> None:
    """The proxy (127.0.0.2 here) appends what it saw to X-Forwarded-For; what the client wrote
    there before it is the client's to invent, and is not read."""
    with serve(
        tmp_path,
        "--dir",
        str(transcripts),
        "--trusted-proxies",
        "1",
        "--max-streams-per-client",
        "1",
    ) as server:
        proxy = "127.0.0.2"
        with streams(server.port, proxy, **{"X-Forwarded-For": "10.0.0.1"}) as (first,):
            assert first.status == 200
            with streams(server.port, proxy, **{"X-Forwarded-For": "10.0.0.1"}) as (again,):
                assert refusal(again)[0] == 429
            spoofed = {"X-Forwarded-For": "10.0.0.99, 10.0.0.1"}
            with streams(server.port, proxy, **spoofed) as (dodge,):
                assert refusal(dodge)[0] == 429
            with streams(server.port, proxy, **{"X-Forwarded-For": "10.0.0.2"}) as (other,):
                assert other.status == 200


def test_a_worker_keeps_threads_for_health_and_pages_however_many_streams_are_asked(
    tmp_path: Path, transcripts: Path
) -> None:
    """One worker of 4 threads, and a total far above what it can hold: it holds 3 streams and
    refuses the rest at once (503, soon), and /health and the pages answer all the while."""
    with serve(
        tmp_path,
        "--dir",
        str(transcripts),
        "--workers",
        "1",
        "--max-streams",
        "100",
        "--max-streams-per-client",
        "100",
        env={"FREEMAD_DASHBOARD_THREADS": "4"},
    ) as server:
        assert caps_line(server).endswith("3 per worker")
        with streams(server.port, "127.0.0.2", "127.0.0.3", "127.0.0.4") as held:
            assert served(held) == [200] * 3
            sources = [f"127.0.1.{n}" for n in range(1, 21)]
            with streams(server.port, *sources) as more:
                for browser in more:
                    status, retry_after, why = refusal(browser)
                    assert (status, retry_after) == (503, "5")
                    assert "this worker's 3 threads" in why
                assert server.get("/health", timeout=30)[0] == 200
                assert server.get("/index.html", timeout=30)[0] == 200


def test_the_streams_of_a_killed_worker_stop_counting(tmp_path: Path, transcripts: Path) -> None:
    with serve(
        tmp_path, "--dir", str(transcripts), "--workers", "1", "--max-streams", "2"
    ) as server:
        (worker,) = server.workers()
        with streams(server.port, "127.0.0.2", "127.0.0.3", "127.0.0.4") as before:
            assert served(before) == [200, 200, 503]
            os.kill(worker, signal.SIGKILL)
            for browser in before[:2]:
                browser.join(30)  # its stream ended with the worker
                assert not browser.is_alive()
        wait_for(lambda: server.workers() not in ([], [worker]), "a new worker")
        wait_for(lambda: server.get("/health")[0] == 200, "the new worker's /health")
        with streams(server.port, "127.0.0.5", "127.0.0.6", "127.0.0.7") as after:
            assert served(after) == [200, 200, 503]


def test_a_refused_page_says_so_backs_off_and_comes_back(tmp_path: Path, transcripts: Path) -> None:
    """In headless Chromium: the only stream is taken, so the page's is refused. The page stays
    as it is, says live updates are paused and when it will try again, and does not ask again
    at once; when the stream is free, it comes back and fetches the page afresh."""
    with serve(tmp_path, "--dir", str(transcripts), "--max-streams", "1") as server:
        taken = Browser(server.port, source="127.0.0.2")
        taken.start()
        assert taken.wait() == 200
        page = LivePage(f"{server.url}/index.html")
        try:
            live = "document.getElementById('live').textContent"
            note = page.wait_for(f"{live}.startsWith('Live: paused') && {live}", "the pause")
            assert "this page still works" in note and "trying again in" in note
            assert page.evaluate("document.querySelector('h1') !== null")
            taken.close()
            page.wait_for(
                f"{live} === 'Live: connected' || {live}.startsWith('Live: updated')",
                "the page's stream again",
                60,
            )
        finally:
            page.close()


# --- in one process: the rules themselves ------------------------------------------------------


def test_the_defaults_leave_a_quarter_of_each_workers_threads() -> None:
    assert Caps.from_env({}) == Caps(total=48, per_client=12, per_worker=24)
    chosen = Caps.from_env({"FREEMAD_WORKERS": "3", "FREEMAD_DASHBOARD_THREADS": "8"})
    assert chosen == Caps(total=18, per_client=4, per_worker=6)
    assert Caps.from_env({"FREEMAD_DASHBOARD_THREADS": "1"}).describe() == "live updates: off"
    for name, bad in (
        ("FREEMAD_DASHBOARD_MAX_STREAMS", "lots"),
        ("FREEMAD_DASHBOARD_MAX_STREAMS", "-1"),
        ("FREEMAD_DASHBOARD_MAX_STREAMS_PER_CLIENT", "0"),
    ):
        with pytest.raises(UsageError, match=name):
            Caps.from_env({name: bad})


def test_an_ipv6_client_is_counted_by_its_64(tmp_path: Path) -> None:
    """A client with a /64 of its own cannot take a new address for every stream."""
    assert client_key("2001:db8::1") == client_key("2001:db8::ffff:1") == "2001:db8::/64"
    assert client_key("::ffff:192.0.2.7") == "192.0.2.7"
    app = create_app(
        DashboardSettings(
            [TranscriptDir(tmp_path, print)],
            caps=Caps(10, 1, 10),
            poll_interval=0.02,
            heartbeat=0.2,
        )
    )
    client: FlaskClient = app.test_client()

    def ask(address: str) -> int:
        answer = client.get("/events", buffered=False, environ_base={"REMOTE_ADDR": address})
        opened.append(answer)
        return answer.status_code

    opened: list[TestResponse] = []
    try:
        assert ask("2001:db8::1") == 200
        assert ask("2001:db8::2") == 429  # the same /64
        assert ask("2001:db8:0:1::1") == 200  # the next /64 is someone else
    finally:
        for answer in opened:
            answer.close()
    assert ask("2001:db8::2") == 200  # closed streams give their places back
    opened[-1].close()


def test_max_streams_0_turns_live_updates_off(tmp_path: Path) -> None:
    app = create_app(DashboardSettings([TranscriptDir(tmp_path, print)], caps=Caps(0, 1, 24)))
    answer = app.test_client().get("/events")
    assert answer.status_code == 503 and answer.headers["Retry-After"] == "30"
    assert answer.get_json() == {"error": "live updates are off on this dashboard"}
    assert app.test_client().get("/index.html").status_code == 200


def test_a_bad_cap_in_the_environment_is_one_line(tmp_path: Path) -> None:
    done = dashboard("--dir", str(tmp_path), env={"FREEMAD_DASHBOARD_MAX_STREAMS": "lots"})
    assert done.returncode == 2
    assert "FREEMAD_DASHBOARD_MAX_STREAMS must be a whole number" in one_line_error(done)
    done = dashboard("--dir", str(tmp_path), "--max-streams-per-client", "0")
    assert done.returncode == 2 and "--max-streams-per-client" in done.stderr
