"""One name, one meaning: no two modules of freemad share a file name, so `settings.py` or
`progress.py` names one thing wherever it is read (a traceback, a log line, a doc). A package's
`__init__.py` and `__main__.py` are the exceptions: their names say what they are for."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXEMPT = {"__init__.py", "__main__.py"}


def shared_names(modules: Iterable[Path]) -> dict[str, list[str]]:
    """Each file name used by more than one of `modules`, with the modules (paths relative to
    the repository's root) that use it."""
    found: dict[str, list[str]] = defaultdict(list)
    for module in modules:
        if module.name not in EXEMPT:
            found[module.name].append(module.relative_to(ROOT).as_posix())
    return {name: sorted(paths) for name, paths in sorted(found.items()) if len(paths) > 1}


def test_no_two_modules_of_freemad_share_a_file_name() -> None:
    modules = sorted((ROOT / "freemad").rglob("*.py"))
    assert len(modules) > 100  # the package itself, not an empty folder
    shared = shared_names(modules)
    assert not shared, "rename one of each, so every module name means one thing: " + "; ".join(
        f"{name}: {', '.join(paths)}" for name, paths in shared.items()
    )


def test_a_shared_name_is_found_and_the_exempt_ones_are_not() -> None:
    package = ROOT / "freemad"
    modules = [
        package / "bot" / "settings.py",
        package / "dashboard" / "live" / "settings.py",
        package / "bot" / "__init__.py",
        package / "dashboard" / "__init__.py",
        package / "__main__.py",
        package / "cli" / "__main__.py",
        package / "bot" / "worker.py",
    ]
    assert shared_names(modules) == {
        "settings.py": ["freemad/bot/settings.py", "freemad/dashboard/live/settings.py"]
    }
