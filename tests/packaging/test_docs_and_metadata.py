"""What PyPI and a pip user see: the README's links work off GitHub, the project's URLs and
LICENSE are there, the docs cite no file the repository lacks, and shell completion works."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10: the dependency freemad itself uses there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
HOME = PYPROJECT["project"]["urls"]["Repository"]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_the_project_urls_name_one_repository() -> None:
    urls = PYPROJECT["project"]["urls"]
    assert set(urls) == {"Homepage", "Repository", "Documentation", "Changelog", "Issues"}
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", HOME)
    assert all(url.startswith(HOME) for url in urls.values()), urls


def test_every_readme_link_is_absolute_and_names_a_file_that_exists() -> None:
    """PyPI renders the README away from the repository: a relative link there is broken."""
    for target in LINK.findall((ROOT / "README.md").read_text()):
        if target.startswith("#"):
            continue
        assert target.startswith(("https://", "http://")), f"relative link: {target}"
        if target.startswith(HOME):
            match = re.fullmatch(re.escape(HOME) + r"/(blob|tree)/main/([^#]+)(#.*)?", target)
            assert match, f"{target}: not {HOME}/blob/main/PATH"
            assert (ROOT / match.group(2)).exists(), f"{target}: no such file here"


def test_the_license_file_matches_the_metadata() -> None:
    assert PYPROJECT["project"]["license"] == "MIT"
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License")
    assert "Copyright (c)" in text and "The FREE-MAD authors" in text


def test_the_sdist_and_wheel_ship_the_examples_configs_and_license() -> None:
    build = PYPROJECT["tool"]["hatch"]["build"]["targets"]
    for name in ("examples", "configs", "LICENSE", "action"):
        assert name in build["sdist"]["include"]
    bundled = build["wheel"]["force-include"]
    assert {bundled[k] for k in ("configs", "examples", "action")} == {
        "freemad/_bundled/configs",
        "freemad/_bundled/examples",
        "freemad/_bundled/action",
    }


def test_the_docs_cite_no_file_the_repository_lacks() -> None:
    pages = [ROOT / "README.md", *ROOT.glob("docs/*.md"), *ROOT.glob("examples/*/*.md")]
    pages += [*ROOT.glob("action/*.md"), ROOT / "CHANGELOG.md"]
    for page in pages:
        text = page.read_text()
        assert "DESIGN.md" not in text, page
        assert "../shared/" not in text, page


def test_shell_completion_is_documented_and_works() -> None:
    assert "_FREEMAD_COMPLETE=bash_source freemad" in (ROOT / "README.md").read_text()
    freemad = str(Path(sys.executable).parent / "freemad")
    script = subprocess.run(
        [freemad],
        env={"_FREEMAD_COMPLETE": "bash_source", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "complete -o nosort -F _freemad_completion freemad" in script
    words = subprocess.run(
        [freemad],
        env={"_FREEMAD_COMPLETE": "bash_complete", "COMP_WORDS": "freemad ta", "COMP_CWORD": "1"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "plain,task" in words.split()


def test_the_project_files_exist_are_well_formed_and_linked_from_the_readme() -> None:
    import yaml

    readme = (ROOT / "README.md").read_text()
    for name in ("CITATION.cff", "SECURITY.md", "CONTRIBUTING.md"):
        assert (ROOT / name).is_file(), name
        assert f"blob/main/{name})" in readme, f"the README links {name}"
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0"
    paper = citation["preferred-citation"]
    assert paper["identifiers"][0]["value"] == "arXiv:2509.11035"
    assert paper["authors"][0]["family-names"] == "Cui"
    # pre-commit runs the same linters as `make lint` and `make types`.
    hooks = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())["repos"][0]["hooks"]
    entries = " ".join(hook["entry"] for hook in hooks)
    makefile = (ROOT / "Makefile").read_text()
    for tool in ("ruff check", "ruff format --check", "lint-imports", "mypy", "lint-workflows.sh"):
        assert tool in entries and tool in makefile, tool
    # `make venv` (the dev extras) installs the pre-commit that CONTRIBUTING.md says to run.
    contributing = (ROOT / "CONTRIBUTING.md").read_text()
    assert "`pre-commit install`" in contributing
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert "pre-commit" in {re.split(r"[<>=!~\[; ]", req)[0] for req in dev["dev"]}
    assert "'.[dev]'" in makefile
    # The two commands CONTRIBUTING.md gives are the README's.
    blocks = re.findall(r"```\n(.*?)```", contributing, re.S)
    assert blocks and all(line in readme for line in blocks[0].strip().splitlines())
