"""The peer `bot_ack.py` measures the bot against: gidgethub + aiohttp, one SQLite row per delivery.

What a small Python GitHub App built the usual way does, with the bot's durability: gidgethub's
`Event.from_http` checks the signature and parses the body, the delivery goes into SQLite
(WAL, synchronous=NORMAL, as the bot's log) as one row keyed by its delivery id, committed
before the 202. One process, one event loop. It runs in the benchmark's own virtualenv
(`bot_ack.py` makes it), never in the project's: the project does not depend on either package.

Run: PYTHON bot_ack_peer.py PORT DATABASE SECRET
"""

from __future__ import annotations

import sqlite3
import sys
import time

from _common import DELIVERIES_TABLE, RECORD_DELIVERY
from aiohttp import web
from gidgethub import BadRequest, ValidationFailure, sansio


def make_app(database: str, secret: str) -> web.Application:
    db = sqlite3.connect(database, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute(DELIVERIES_TABLE)

    async def webhook(request: web.Request) -> web.Response:
        body = await request.read()
        try:
            event = sansio.Event.from_http(request.headers, body, secret=secret)
        except ValidationFailure:
            return web.json_response({"error": "bad signature"}, status=401)
        except BadRequest as exc:
            return web.json_response({"error": str(exc)}, status=int(exc.status_code))
        cursor = db.execute(
            RECORD_DELIVERY,
            (event.delivery_id, event.event, body, time.time()),
        )
        if cursor.rowcount != 1:
            return web.json_response({"duplicate": True}, status=200)
        return web.json_response({"accepted": event.delivery_id}, status=202)

    async def healthz(request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    app = web.Application(client_max_size=25 * 1024 * 1024)
    app.router.add_post("/webhook", webhook)
    app.router.add_get("/healthz", healthz)
    return app


if __name__ == "__main__":
    port, database, secret = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    web.run_app(make_app(database, secret), host="127.0.0.1", port=port, print=None)
