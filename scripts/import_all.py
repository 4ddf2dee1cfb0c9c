"""Import every module of the freemad package, so an interpreter's syntax or standard-library
gap shows at once (CI runs it on the oldest Python we support). Exits 1 naming each failure."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import freemad


def main() -> int:
    failures: list[str] = []
    modules = pkgutil.walk_packages(freemad.__path__, "freemad.")
    # A __main__ module runs its program when imported; it is only a call of one that is.
    names = [info.name for info in modules if not info.name.endswith(".__main__")]
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as error:  # every failure is reported, none hidden
            failures.append(f"{name}: {type(error).__name__}: {error}")
    for failure in failures:
        print(failure, file=sys.stderr)
    version = ".".join(map(str, sys.version_info[:3]))
    print(f"imported {len(names) - len(failures)} of {len(names)} modules on Python {version}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
