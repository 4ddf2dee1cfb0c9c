"""Run pages are linked only where GitHub's Pages API reports a site (issue 44.7): without one, no
comment carries a guessed (dead) link, and the first run comment on the repository says once how
to turn Pages on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from freemad.github.forge import RecordingForge
from freemad.github.pages import ENABLE_PAGES, PagesSite
from freemad.github.router import Router
from freemad.github.thread import Settings
from freemad.wiring import ADAPTERS
from tests.github.payloads import REPO, labeled_issue
from tests.github.routers import debate_config, task_config


def _router(
    config: Any, store: Any, tmp_path: Path, forge: RecordingForge, site: PagesSite
) -> Router:
    settings = Settings(
        self_login="freemad[bot]",
        run_url=site.run_url,
        pages_note=site.note,
        workspace=tmp_path,
    )
    return Router(config, forge, store, settings, adapters=ADAPTERS)


def _on(number: int, label: str = "freemad:debate") -> dict[str, Any]:
    payload = labeled_issue(label)
    payload["issue"]["number"] = number
    return payload


def _said(forge: RecordingForge) -> list[str]:
    return [str(call.args["body"]) for call in forge.calls if "body" in call.args]


def test_without_pages_no_link_and_how_to_enable_it_is_said_once(
    store: Any, tmp_path: Path
) -> None:
    forge = RecordingForge(permissions={"alice": "write"})  # GitHub: 404 for .../pages
    site = PagesSite(None, lambda: forge.pages_url(REPO))
    routed = _router(debate_config(), store, tmp_path, forge, site)

    first = routed.handle("issues", _on(7))
    second = routed.handle("issues", _on(8))

    assert first.status == second.status == "completed"
    shown = {number: body for (_, number, body) in forge.comments.values()}
    assert ENABLE_PAGES in shown[7] and ENABLE_PAGES not in shown[8]
    assert not any("github.io" in body or "/runs/" in body for body in _said(forge))
    assert len(forge.calls_to("pages_url")) == 1  # asked once, when a link was first needed

    # Another job, another process: the store (the state branch) remembers it was said.
    later_forge = RecordingForge(permissions={"alice": "write"})
    later_site = PagesSite(None, lambda: later_forge.pages_url(REPO))
    later = _router(task_config(tmp_path), store, tmp_path, later_forge, later_site)
    later.handle("issues", _on(9, "freemad:plan"))
    assert not any(ENABLE_PAGES in body for body in _said(later_forge))


def test_a_site_githubs_pages_api_reports_is_linked_and_nothing_more_is_said(
    store: Any, tmp_path: Path
) -> None:
    forge = RecordingForge(permissions={"alice": "write"}, pages={REPO: "https://docs.example.org"})
    site = PagesSite(None, lambda: forge.pages_url(REPO))
    routed = _router(debate_config(), store, tmp_path, forge, site)

    outcome = routed.handle("issues", _on(7))

    [body] = [body for (_, _, body) in forge.comments.values()]
    assert f"https://docs.example.org/runs/{outcome.run_id}.html" in body
    assert ENABLE_PAGES not in body


def test_a_configured_site_is_linked_without_asking_github() -> None:
    asked: list[str] = []
    site = PagesSite("https://pages.example.com/x/", lambda: asked.append("x") or None)
    assert site.run_url("debate", "r1") == "https://pages.example.com/x/runs/r1.html"
    assert site.note() is None and asked == []
