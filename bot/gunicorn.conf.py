"""`gunicorn -c bot/gunicorn.conf.py`: the bot's gunicorn settings, kept in freemad.bot.gunicorn_conf."""

from freemad.bot.gunicorn_conf import *  # noqa: F403  # gunicorn reads the module's names
