"""The floor of the bot's stack for `bot_ack.py --stack-floor`: a Flask app that answers every
delivery 202 and does nothing else (no signature, no parse, no record), served by the bot's own
gunicorn settings (its worker class, threads and JSON access log). Its CPU per acknowledgement
is what Flask and gunicorn cost before the bot does any work of its own.
"""

from __future__ import annotations

from flask import Flask, jsonify, request

app = Flask("bot_ack_floor")


@app.post("/webhook")
def webhook() -> tuple[object, int]:
    request.get_data()
    return jsonify({"accepted": request.headers.get("X-GitHub-Delivery", "")}), 202


@app.get("/healthz")
def healthz() -> object:
    return jsonify({"ok": True})
