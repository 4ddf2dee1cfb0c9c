"""Text about this host, made fit for a public comment: no local filesystem path reaches GitHub.

An error's one line is written for the person at the terminal (`no task 'x' in
.freemad/tasks/tasks.db`, `config file /srv/freemad/cfg.yaml: ...`); on an issue it tells a
stranger how the host is laid out and helps nobody there. Every reason a comment quotes goes
through `without_local_paths`; `local_paths` finds what it would hide (the tests use it on every
comment they see posted).
"""

from __future__ import annotations

import re

from freemad.errors import FreemadError

HIDDEN = "(a path on FREE-MAD's host)"

# An absolute path of two parts or more (`/srv/x`, not a lone `/` nor a URL's path: no word
# character, `/`, `:` or `.` before it), a home-relative one (`~/x`), one below a dot-folder or
# the current or parent folder (`.freemad/x`, `./x`, `../x`), and a Windows drive path (`C:\x`).
_LOCAL_PATH = re.compile(
    r"""(?<![\w/:.\\~-])(?:
        /[\w.@+-]+(?:/[\w.@+-]*)+
      | ~/[^\s'"`)]*
      | \.{1,2}[\w-]*/[^\s'"`)]+
      | [A-Za-z]:\\[^\s'"`)]+
    )""",
    re.VERBOSE,
)


def local_paths(text: str) -> list[str]:
    """The local paths in `text`, as `without_local_paths` would hide them."""
    return [found.group(0) for found in _LOCAL_PATH.finditer(text)]


def without_local_paths(text: str) -> str:
    """`text` with every local path replaced by a note that one was there."""
    return _LOCAL_PATH.sub(HIDDEN, text)


def public_reason(exc: FreemadError) -> str:
    """An error's one line as a comment may quote it."""
    return without_local_paths(exc.one_line())
