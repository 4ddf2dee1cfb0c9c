"""A review posted through the bot's journal: a rerun of a killed job never posts it twice."""

from __future__ import annotations

from freemad.bot.journal import Claim, JournalForge
from freemad.bot.ports import Owner
from freemad.github.forge import RecordingForge
from tests.bot.conftest import Env
from tests.github.payloads import REPO

COMMENTS = [{"path": "a.py", "line": 3, "side": "RIGHT", "body": "x"}]


def _post(forge: RecordingForge, claim: Claim) -> str:
    return (
        JournalForge(forge, claim)
        .create_review(
            REPO, 7, commit_id="c" * 40, body="summary", event="COMMENT", comments=COMMENTS
        )
        .html_url
    )


def test_a_reruns_review_is_the_first_runs_never_a_second(env: Env) -> None:
    forge = RecordingForge()
    first = Owner.here()
    claim = Claim(env.claims, "d-review", first, env.claims.claim("d-review", first) or 0)
    url = _post(forge, claim)
    env.claims.release("d-review", first)

    second = Owner.here()
    rerun = Claim(env.claims, "d-review", second, env.claims.claim("d-review", second) or 0)
    assert _post(forge, rerun) == url
    assert len(forge.reviews) == 1 and len(forge.calls_to("create_review")) == 1
