"""The README's quick start, run literally as a new user would: a clone of this repository under
/tmp, the README's own install command in it, then every line of the "Quick start" block in an
empty folder, checked against what the README says each line does. Exit 1 at the first line whose
outcome differs, with what it printed; 0 and one line per step otherwise.

    python3 scripts/quickstart.py [--keep] [--ref COMMIT]

The clone is of the checkout's HEAD (commit first: uncommitted changes are not in it), or of
COMMIT. The README read is this checkout's. `--keep` leaves the folder for a look; it is removed
otherwise. CI runs this after `make test`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
_STEP_TIMEOUT = 600.0
BASH = shutil.which("bash") or "/bin/bash"
GIT = shutil.which("git") or "/usr/bin/git"
_URL = re.compile(r"http://127\.0\.0\.1:\d+/")
_SITE_RUN = re.compile(r'href="runs/([A-Za-z0-9_.-]+)\.html"')


class Differs(Exception):
    """A line of the quick start did not do what the README says."""


def blocks(text: str) -> list[str]:
    """The bodies of the README's fenced blocks, in order."""
    return [m.group(1) for m in re.finditer(r"^```[a-z]*\n(.*?)^```", text, re.M | re.S)]


def readme_commands(text: str) -> tuple[str, list[str]]:
    """The clone's install command and the quick start's lines (comments stripped)."""
    install = next(
        body.strip()
        for body in blocks(text)
        if body.strip().startswith("python3 -m venv .venv && .venv/bin/pip install -e .")
    )
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    body = blocks(quick)[0]
    lines = [_uncommented(line) for line in body.splitlines()]
    return install, [line for line in lines if line]


def _uncommented(line: str) -> str:
    """The line without its comment (the README's comments follow two spaces or more)."""
    return "" if line.lstrip().startswith("#") else re.split(r"\s{2,}#", line)[0].strip()


def run(line: str, cwd: Path, env: dict[str, str]) -> tuple[str, str, Path]:
    """`line` in bash in `cwd`: its stdout, its stderr, and the folder it ended in (a `cd`
    moves on)."""
    script = f"set -e\n{line}\nprintf '\\n@@cwd=%s\\n' \"$PWD\"\n"
    done = subprocess.run(
        [BASH, "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=_STEP_TIMEOUT,
        check=False,
    )
    said = done.stdout.rpartition("\n@@cwd=")
    if done.returncode != 0:
        raise Differs(f"exit status {done.returncode}\n{done.stdout}{done.stderr}")
    return said[0], done.stderr, Path(said[2].strip())


def check_init(out: str, cwd: Path) -> None:
    _expect("wrote freemad.yaml" in out and (cwd / "freemad.yaml").is_file(), "no freemad.yaml")


def check_debate(out: str, cwd: Path) -> None:
    _expect(out.startswith("Winner ") and "score" in out, "no winner and score")
    _expect(any((cwd / "transcripts").glob("transcript-*.json")), "no transcript kept")


def check_task_waits(out: str, cwd: Path) -> None:
    task = json.loads(out)
    _expect(task["status"] == "waiting_for_human", f"status {task['status']}")
    _expect(bool(task.get("question")), "no question asked")


def check_task_done(out: str, cwd: Path) -> None:
    task = json.loads(out)
    _expect(task["status"] == "completed", f"status {task['status']}, not completed")


def check_status(out: str, cwd: Path) -> None:
    rows = json.loads(out)
    _expect(any(r["status"] == "completed" for r in rows), "no completed task in the table")


def check_toy(out: str, cwd: Path) -> None:
    _expect(cwd.name == "toy" and (cwd / "freemad.yaml").is_file(), "not in the toy")


def check_evolve(out: str, cwd: Path) -> None:
    run_view = json.loads(out)
    _expect(run_view["versions"] >= 2, f"{run_view['versions']} version(s): none admitted")
    log = subprocess.run(
        [GIT, "log", "--format=%B", run_view["branch"]],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    commits = log.count("Evolve-Score:")
    _expect(commits == run_view["versions"] - 1, f"{commits} commit(s) with Evolve-Score")


def check_site(out: str, cwd: Path) -> None:
    _expect((cwd / "_site" / "index.html").is_file(), "no _site/index.html")


CHECKS: list[tuple[str, Callable[[str, Path], None]]] = [
    ("mkdir ", lambda out, cwd: _expect(cwd.name == "try-freemad", "not in the new folder")),
    ("freemad init", check_init),
    ('freemad "', check_debate),
    ("freemad task start", check_task_waits),
    ("freemad task answer", check_task_done),
    ("freemad task status", check_status),
    ("freemad example evolve-toy", check_toy),
    ("freemad evolve start", check_evolve),
    ("cd .. && freemad site build", check_site),
]


def _expect(holds: bool, what: str) -> None:
    if not holds:
        raise Differs(what)


def dashboard(line: str, cwd: Path, env: dict[str, str], task_id: str) -> str:
    """The live dashboard: it serves the page at the README's address, with the task on it
    and every run the static site built before it lists ("the same, live")."""
    url = _URL.search(README.read_text().split(line, 1)[1].splitlines()[0])
    address = url.group(0) if url else "http://127.0.0.1:8001/"
    with subprocess.Popen(
        shlex.split(line), cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    ) as server:
        try:
            body, deadline = None, time.monotonic() + 60
            while body is None and time.monotonic() < deadline and server.poll() is None:
                try:
                    with urllib.request.urlopen(address, timeout=5) as page:  # noqa: S310
                        body = page.read().decode()
                except OSError:
                    time.sleep(0.3)
        finally:
            server.terminate()
            said = server.communicate(timeout=30)[0].decode(errors="replace")
    if body is None:
        raise Differs(f"nothing answered at {address}\n{said}")
    _expect(task_id in body, f"the task {task_id} is not on {address}")
    site = (cwd / "_site" / "index.html").read_text(encoding="utf-8")
    runs = sorted(set(_SITE_RUN.findall(site)))
    # The quick start made a debate, a task and an evolve run.
    _expect(len(runs) == 3, f"the site lists {len(runs)} run(s), not the 3 the quick start made")
    missing = [run for run in runs if run not in body]
    _expect(not missing, f"the site lists {', '.join(missing)}, which {address} does not")
    return address


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the folder under /tmp")
    parser.add_argument("--ref", default="HEAD", help="the commit to clone (default: HEAD)")
    args = parser.parse_args()
    install, lines = readme_commands(README.read_text())
    base = Path(tempfile.mkdtemp(prefix="freemad-quickstart-", dir="/tmp"))
    started = time.monotonic()
    try:
        clone = base / "freemad"
        subprocess.run([GIT, "clone", "-q", str(ROOT), str(clone)], check=True)
        subprocess.run([GIT, "-C", str(clone), "checkout", "-q", args.ref], check=True)
        print(f"clone of {ROOT} ({args.ref}) at {clone}")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("FREEMAD_", "VIRTUAL_"))}
        out, _, _ = run(install, clone, env)
        _expect("Winner " in out, "the install command's debate printed no winner")
        print(f"ok  {install}")
        env["PATH"] = f"{clone / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        home = base / "home"
        home.mkdir()
        env.update(HOME=str(home), GIT_CONFIG_GLOBAL=str(home / ".gitconfig"))
        cwd, task_id = base, ""
        for line in lines:
            shown = line.replace("<task_id>", task_id) if task_id else line
            if line.startswith("freemad-dashboard"):
                address = dashboard(shown, cwd, env, task_id)
                print(f"ok  {line}  (served {address})")
                continue
            check = next((c for prefix, c in CHECKS if line.startswith(prefix)), None)
            if check is None:
                raise Differs(f"the quick start has a line this script does not know: {line}")
            out, err, cwd = run(shown, cwd, env)
            try:
                check(out, cwd)
            except (Differs, ValueError, KeyError) as exc:
                raise Differs(f"{line}: {exc}\n{out}{err}") from None
            if line.startswith("freemad task start"):
                task_id = json.loads(out)["task_id"]
            print(f"ok  {line}")
        print(
            f"the README's quick start holds: {len(lines) + 1} steps in "
            f"{time.monotonic() - started:.0f} s"
        )
        return 0
    except Differs as exc:
        print(f"FAILED  {exc}", file=sys.stderr)
        return 1
    finally:
        if args.keep:
            print(f"kept {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
