"""The `github:` section: how FREE-MAD behaves on GitHub, in the Action and in the webhook bot."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, field_validator

from freemad.config.strict import PositiveInt, StrictModel
from freemad.config.strict import doc as _doc

_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?")
_BRANCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,200}")


class GitHubConfig(StrictModel):
    """Labels and /freemad comments start and steer runs (docs/github.md)."""

    allowed_bots: list[str] = _doc(
        "Bot accounts (e.g. renovate[bot]) whose commands are obeyed; they still need write access.",
        list,
    )
    self_login: str | None = _doc(
        "The account FREE-MAD posts as; its comments never trigger anything. null: the Action's "
        "github-actions[bot], or the GitHub App's own bot account.",
        None,
    )
    state_branch: Annotated[str, Field(min_length=1)] = _doc(
        "The branch runs are kept on between workflow jobs.", "freemad-state"
    )
    pages_url: str | None = _doc(
        "Where the Pages site is served, for links to each run's page; null: what GitHub's "
        "Pages API reports, else no link.",
        None,
    )
    max_text_chars: PositiveInt = _doc(
        "Characters of an issue or comment given to agents; the rest is cut, visibly.", 20_000
    )

    @field_validator("allowed_bots")
    @classmethod
    def _logins(cls, value: list[str]) -> list[str]:
        for login in value:
            if not _LOGIN.fullmatch(login):
                raise ValueError(f"{login!r} is not a GitHub login")
        return value

    @field_validator("state_branch")
    @classmethod
    def _branch(cls, value: str) -> str:
        if not _BRANCH.fullmatch(value) or ".." in value or value.endswith((".lock", "/")):
            raise ValueError(f"{value!r} is not a usable branch name")
        return value
