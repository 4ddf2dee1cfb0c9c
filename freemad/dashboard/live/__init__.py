"""The live dashboard server (`freemad-dashboard`): the Flask app (`server`) and what it is built
from (`dashboard_settings`), the app gunicorn loads from the environment (`wsgi`) and gunicorn's
settings (`dashboard_gunicorn_conf`), the stream of changes behind `/events` (`event_feed`) and
how many streams it holds open (`stream_capacity`), and the start token's way to the workers
(`token_handover`).
"""
