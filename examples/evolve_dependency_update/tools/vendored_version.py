"""Print the vendored tabulate_lite's major version: {"components": {"vendored_major": N}}.

Only a verbatim copy of a release counts: vendor/tabulate_lite must hold exactly the files of
upstream/tabulate_lite-<its __version__>/tabulate_lite, byte for byte; otherwise this exits 1
and says what differs. So editing the version string, or patching the library instead of the
app, is not an upgrade. The version is read from the source text, never by importing it.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENDORED = ROOT / "vendor" / "tabulate_lite"
VERSION = re.compile(r'^__version__ = "(\d+)\.(\d+)\.(\d+)"$', re.MULTILINE)


def tree(folder: Path) -> dict[str, bytes]:
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def main() -> int:
    init = VENDORED / "__init__.py"
    found = VERSION.search(init.read_text(encoding="utf-8")) if init.is_file() else None
    if found is None:
        print(f'no __version__ = "X.Y.Z" line in {init.relative_to(ROOT)}', file=sys.stderr)
        return 1
    version = ".".join(found.groups())
    release = ROOT / "upstream" / f"tabulate_lite-{version}" / "tabulate_lite"
    if not release.is_dir():
        print(f"tabulate_lite {version} is not a release in upstream/", file=sys.stderr)
        return 1
    vendored, shipped = tree(VENDORED), tree(release)
    differing = sorted(
        name for name in vendored.keys() | shipped.keys() if vendored.get(name) != shipped.get(name)
    )
    if differing:
        print(
            f"vendor/tabulate_lite is not a verbatim copy of release {version}: "
            f"{', '.join(differing)} differ",
            file=sys.stderr,
        )
        return 1
    print(json.dumps({"components": {"vendored_major": int(found.group(1))}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
