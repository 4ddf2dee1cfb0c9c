"""Links to a run's page, only where there is a page: the repository's GitHub Pages site as the
config names it, else as GitHub's Pages API (GET /repos/{o}/{r}/pages) reports it, asked once and
only when a link is needed. A repository without a site gets no link, never a guessed dead one;
its first run comment says once how to turn Pages on (`Thread.pages_note_once`).
"""

from __future__ import annotations

from collections.abc import Callable

ENABLE_PAGES = (
    "This repository has no GitHub Pages site, so FREE-MAD's runs have no page to link to. "
    "To get one, set Settings → Pages → Source to “GitHub Actions” and add FREE-MAD's Pages "
    "workflow (FREE-MAD's docs/github.md, “Pages”); FREE-MAD says this once."
)


class PagesSite:
    """The site's address: `configured` (the config's `github.pages_url`), else what `ask`
    (the forge's `pages_url` for the repository) answers, asked at most once."""

    def __init__(self, configured: str | None, ask: Callable[[], str | None]) -> None:
        self.configured = (configured or "").rstrip("/")
        self._ask = ask
        self._found: list[str] = []

    def address(self) -> str:
        """The site's address, "" when there is none (or the token may not read it)."""
        if self.configured:
            return self.configured
        if not self._found:
            self._found.append((self._ask() or "").rstrip("/"))
        return self._found[0]

    def run_url(self, kind: str, run_id: str) -> str | None:
        site = self.address()
        return f"{site}/runs/{run_id}.html" if site else None

    def note(self) -> str | None:
        """How to turn Pages on, when there is no site to link."""
        return None if self.address() else ENABLE_PAGES
