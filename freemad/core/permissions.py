"""Who may act on a ``/freemad`` command or a ``freemad:*`` label: the permission rules. No I/O.

The permission passed in comes from GitHub's collaborator permission API
(``GET /repos/{owner}/{repo}/collaborators/{username}/permission``), which the caller fetches:
its ``role_name`` (``admin``, ``maintain``, ``write``, ``triage``, ``read``) when that is one of
those, else its ``permission`` (``admin``, ``write``, ``read``, ``none``); ``None`` when the API
answered 404 (not a collaborator). Never the payload's ``author_association``: it says how
someone relates to the repository (``CONTRIBUTOR``, ``MEMBER`` of the organisation, ...), not
what they may do in it; an organisation member may have no write access at all.

The rules, first match wins:

1. FREE-MAD's own comments are ignored silently: the sender's login equals ``self_login``, or is
   ``self_login`` with ``[bot]`` appended (an App's comments come from ``<slug>[bot]``), compared
   without regard to case as GitHub logins are.
2. Other bots (sender type ``Bot``, or a login ending in ``[bot]``) are ignored silently unless
   listed in ``allowed_bots`` (with or without the ``[bot]`` suffix); a listed bot then follows
   the rules for people. No reply goes to a bot, so two bots cannot answer each other forever.
3. ``help`` is allowed for everyone, ``status`` for anyone with ``read`` or more (on a public
   repository that is anyone); every other verb, unknown ones included, starts or steers a run
   and needs ``write``, ``maintain`` or ``admin``.

A refused person gets ``Decision.reason``, one polite line to post as a reply; an empty reason
means ignore without replying. ``Decision.detail`` says why in every case, for the log.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

__all__ = ["LEAST_PERMISSION", "Actor", "Decision", "Permission", "may_act"]

Permission = Literal["admin", "maintain", "write", "triage", "read", "none"]
_RANK: dict[str, int] = {"none": 0, "read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}
_BOT_SUFFIX = "[bot]"
# verb -> the least permission it needs; every other verb needs write.
LEAST_PERMISSION: dict[str, Permission] = {"help": "none", "status": "read"}


@dataclass(frozen=True)
class Actor:
    """Who sent the event: the payload's ``sender`` (``login`` and ``type``)."""

    login: str
    type: str  # "User", "Bot", "Organization", "Mannequin", ...

    @property
    def is_bot(self) -> bool:
        return self.type == "Bot" or self.login.lower().endswith(_BOT_SUFFIX)


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str  # the one-line reply when refused; empty: stay silent
    detail: str = ""  # why, for the log


def _bare(login: str) -> str:
    login = login.lower()
    return login[: -len(_BOT_SUFFIX)] if login.endswith(_BOT_SUFFIX) else login


def _is_self(actor: Actor, self_login: str | None) -> bool:
    if not self_login:
        return False
    login, me = actor.login.lower(), self_login.lower()
    return login in (me, me + _BOT_SUFFIX)


def may_act(
    actor: Actor,
    permission: Permission | None,
    verb: str,
    *,
    allowed_bots: Collection[str] = (),
    self_login: str | None = None,
) -> Decision:
    """Whether ``actor``, holding ``permission`` on the repository, may run ``/freemad VERB``."""
    if _is_self(actor, self_login):
        return Decision(False, "", f"{actor.login} is FREE-MAD itself")
    if actor.is_bot and _bare(actor.login) not in {_bare(bot) for bot in allowed_bots}:
        return Decision(False, "", f"{actor.login} is a bot not in allowed_bots")
    held = permission or "none"
    needed = LEAST_PERMISSION.get(verb, "write")
    # An unrecognised permission string (a custom role name passed by mistake) counts as none.
    if _RANK.get(held, 0) >= _RANK[needed]:
        return Decision(True, "", f"{actor.login} has {held}; {verb} needs {needed}")
    detail = f"{actor.login} has {held}; {verb} needs {needed}"
    if actor.is_bot:
        return Decision(False, "", detail)
    if needed == "read":
        reason = f"`/freemad {verb}` is only for people who can read this repository."
    else:
        reason = (
            "Only people with write access to this repository can start or steer FREE-MAD runs; "
            "ask a maintainer to run the command for you."
        )
    return Decision(False, reason, detail)
