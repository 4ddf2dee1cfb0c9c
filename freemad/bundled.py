"""Files shipped with FREE-MAD besides its code: the example configs and the examples.

In a wheel they are package data under `freemad/_bundled/`; in a checkout (an editable install)
they are the repository's top-level `configs/` and `examples/`.
"""

from __future__ import annotations

from pathlib import Path

from freemad.errors import FreemadError

_PACKAGE = Path(__file__).resolve().parent


def bundled(kind: str) -> Path:
    """The folder of `kind` ("configs" or "examples")."""
    for folder in (_PACKAGE / "_bundled" / kind, _PACKAGE.parent / kind):
        if folder.is_dir():
            return folder
    raise FreemadError(f"this installation of FREE-MAD lacks its {kind} (reinstall it)")
