"""The ASGI candidates `bot_ack.py --asgi` measures beside the bot on gthread: the same Flask app
(`app_from_env()`), wrapped by a2wsgi's WSGIMiddleware (it runs the WSGI app in a thread pool),
served by gunicorn with uvicorn's worker (`uvicorn_worker.UvicornWorker`, uvicorn with httptools)
and with gunicorn's own ASGI worker (`-k asgi`, its own parser).

The project does not depend on any of these: `packages_dir()` installs uvicorn, uvicorn-worker,
a2wsgi, httptools and h11 from PyPI into `.cache/bench-asgi` (pip's --target) on first use, and
the candidates run the project's interpreter with that folder first on PYTHONPATH.

gunicorn imports `app` from here (`bot_ack_asgi:app`) in each worker, after the fork.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGES_DIR = ROOT / ".cache" / "bench-asgi"
PACKAGES = ("uvicorn", "uvicorn-worker", "a2wsgi", "httptools", "h11")
# Each candidate: its name in the figures, and its gunicorn worker class.
CANDIDATES = {
    "freemad_uvicorn": "uvicorn_worker.UvicornWorker",
    "freemad_gunicorn_asgi": "asgi",
}


def packages_dir() -> Path:
    """The folder with the candidates' packages, filled from PyPI on first use."""
    if not (PACKAGES_DIR / "a2wsgi").exists():
        command = [sys.executable, "-m", "pip", "install", "-q", "--no-deps"]
        command += ["--target", str(PACKAGES_DIR), *PACKAGES]
        subprocess.run(command, check=True)
    return PACKAGES_DIR


def versions() -> dict[str, str]:
    """The candidates' package versions, read from the folder's metadata."""
    found = {}
    for info in packages_dir().glob("*.dist-info"):
        name, _, version = info.name.removesuffix(".dist-info").rpartition("-")
        found[name] = version
    return found


def __getattr__(name: str) -> Any:
    """`app`, built on first access (in a gunicorn worker), never at import for the script."""
    if name != "app":
        raise AttributeError(name)
    from a2wsgi import WSGIMiddleware

    from freemad.bot.web import app_from_env

    app = WSGIMiddleware(app_from_env())
    globals()["app"] = app
    return app
