"""The webhook bot's thin shell: the app factory lives in `freemad.bot.web`."""

from freemad.bot.web import create_app

__all__ = ["create_app"]
