"""The hidden markers FREE-MAD leaves in what it posts, and how it finds them again. Pure.

A marker is an HTML comment, which GitHub keeps in the body but does not show:

- `<!-- freemad:key=KEY -->` ends every comment, review, review-thread reply and pull request
  FREE-MAD creates, KEY unique to that create. GitHub sometimes creates the thing and still
  answers 5xx (or the answer is lost): before asking again, FREE-MAD lists what is there and
  takes the one with its key.
- `<!-- freemad:refused=LOGIN -->` is in a refusal, so a thread tells anyone who may not steer
  FREE-MAD so at most once (`refusals`).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Iterable

from freemad.github.body_limit import MAX_BODY, fit_body
from freemad.github.forge import ListedComment as Listed

_KEY = re.compile(r"<!-- freemad:key=([0-9a-f]{32}) -->")
_KEY_END = re.compile(r"\n\n<!-- freemad:key=[0-9a-f]{32} -->\Z")


def new_key() -> str:
    return secrets.token_hex(16)


def derived_key(*parts: str) -> str:
    """A key that the same parts always give: a job run again gives its comment the key the
    killed run gave it, and so finds that comment instead of posting a second."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def key_marker(key: str) -> str:
    return f"<!-- freemad:key={key} -->"


def with_key(body: str, key: str, limit: int = MAX_BODY) -> str:
    """`body` within GitHub's limit (`body_limit`), with the marker of `key` at its end."""
    marker = f"\n\n{key_marker(key)}"
    return fit_body(body, limit, reserve=len(marker)) + marker


def key_of(body: str | None) -> str | None:
    """The key of the marker that ends `body`, if it has one."""
    found = _KEY.search(body or "")
    return found.group(1) if found else None


def without_key(body: str) -> str:
    """`body` as it was before `with_key` marked it (what a reader sees)."""
    return _KEY_END.sub("", body)


def find_key(listed: Iterable[Listed], key: str) -> Listed | None:
    """The first of `listed` carrying the marker of `key`."""
    return next((item for item in listed if key_of(item.body) == key), None)


def refusal_marker(login: str) -> str:
    """The marker of a refusal of `login` (GitHub logins are case-insensitive)."""
    return f"<!-- freemad:refused={login.casefold()} -->"


def refused_before(listed: Iterable[Listed], login: str, self_login: str | None = None) -> bool:
    """Whether FREE-MAD refused `login` on this thread already: a comment by a GitHub App's
    account (or by `self_login`) carries the refusal's marker. A marker anyone else wrote is not
    believed, so nobody can silence the refusal of another by writing it first."""
    marker = refusal_marker(login)
    me = (self_login or "").casefold()
    for item in listed:
        trusted = item.author_type == "Bot" or (me and item.author.casefold() == me)
        if trusted and marker in item.body:
            return True
    return False
