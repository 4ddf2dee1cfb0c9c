"""The docs name only what exists: every file, function, class and `freemad.` dotted name they
cite in backticks is in the repository, so a rename that leaves a page behind fails here."""

from __future__ import annotations

import ast
import builtins
import importlib
import re
import subprocess
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TICKED = re.compile(r"`([^`\n]+)`")
FILE = re.compile(r"[\w.-]+(/[\w.-]+)*\.(py|md|yml|yaml|toml|sh|j2|cfg|conf)")
CALL = re.compile(r"([A-Za-z_][\w.]*)\(.*\)")
CLASS = re.compile(r"[A-Z][a-z]+[A-Z]\w*")
DOTTED = re.compile(r"freemad(\.[A-Za-z_]\w*)+")
# Files that live in a user's repository or a generated folder, never in ours.
USERS_FILES = {
    "freemad.yaml",  # a project's config
    ".freemad.yaml",
    "toy/freemad.yaml",  # what `freemad example evolve toy` writes
    ".github/freemad.yaml",
    ".github/workflows/freemad-scheduled.yml",  # the callers a user copies
    ".github/workflows/freemad-pages.yml",
    "CLAUDE.md",  # agent CLIs' memory files in the user's work tree
    "AGENTS.md",
    "GEMINI.md",
    "extra-openai-models.yaml",  # llm's own config file
    "pytest/__main__.py",  # a hostile candidate's file, in docs/evolve.md
    "json.py",  # likewise, in the toy's README
}
GENERATED = (".cache/", ".freemad/", "_site/", "transcripts/", "DIR/", "mutants/")
# Names from other projects or from HTTP that the docs cite as such.
OTHERS_NAMES = {
    "shutdown",  # uvicorn's Server.shutdown()
    "RemoteDisconnected",  # http.client's
    "HttpOnly",  # a cookie attribute
    "NaN",
    "split",  # shlex.split(...)
    "sleep",  # time.sleep(1)
    "Random",  # random.Random(seed)
}


def pages() -> list[Path]:
    found = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted(ROOT.glob("docs/*.md"))]
    return found + sorted(ROOT.glob("action/*.md")) + sorted(ROOT.glob("examples/*/*.md"))


@cache
def tracked() -> tuple[str, ...]:
    listed = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if listed.returncode == 0 and listed.stdout:
        return tuple(listed.stdout.split())
    skip = {".venv", ".cache", ".git", "node_modules", "mutants"}
    return tuple(
        str(path.relative_to(ROOT))
        for path in ROOT.rglob("*")
        if path.is_file() and not skip & set(path.relative_to(ROOT).parts)
    )


@cache
def defined_names() -> frozenset[str]:
    """Every function, class and assigned name in the project's Python files."""
    names: set[str] = set()
    for path in tracked():
        if not path.endswith(".py"):
            continue
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(t.id for t in targets if isinstance(t, ast.Name))
    return frozenset(names)


def ticked() -> list[tuple[str, str]]:
    return [
        (f"{page.relative_to(ROOT)}:{number}", token.strip())
        for page in pages()
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        for token in TICKED.findall(line)
    ]


def file_exists(cited: str) -> bool:
    if "/" in cited:
        return any(path == cited or path.endswith("/" + cited) for path in tracked())
    return any(path.rsplit("/", 1)[-1] == cited for path in tracked())


def resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def test_every_file_the_docs_cite_exists() -> None:
    missing = [
        f"{where}: {token}"
        for where, token in ticked()
        if FILE.fullmatch(token)
        and token not in USERS_FILES
        and not token.startswith(GENERATED)
        and ".." not in token
        and not file_exists(token)
    ]
    assert not missing, "\n".join(missing)


def test_every_function_and_class_the_docs_cite_is_defined() -> None:
    known = defined_names() | set(dir(builtins)) | OTHERS_NAMES
    missing = []
    for where, token in ticked():
        call = CALL.fullmatch(token)
        name = call.group(1).rsplit(".", 1)[-1] if call else token
        if (call or CLASS.fullmatch(token)) and name not in known:
            missing.append(f"{where}: {token}")
    assert not missing, "\n".join(missing)


def test_every_freemad_dotted_name_the_docs_cite_resolves() -> None:
    missing = [
        f"{where}: {token}"
        for where, token in ticked()
        for dotted in [token.removesuffix("()")]
        if DOTTED.fullmatch(dotted)
        and not dotted.endswith((".yaml", ".yml", ".json", ".env"))
        and not resolves(dotted)
    ]
    assert not missing, "\n".join(missing)


def test_the_checks_see_a_name_that_is_gone(tmp_path: Path) -> None:
    """The three checks above would pass on nothing: each must notice a stale citation."""
    assert not file_exists("freemad/cli/no_such_module.py")
    assert "_register_groups" not in defined_names()
    assert "load_config" in defined_names()
    assert not resolves("freemad.cli.root._register_groups")
    assert resolves("freemad.cli.root.cli")
