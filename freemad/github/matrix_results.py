"""The result folder of a candidate job in an evolve generation's matrix (`evolve_matrix`), written
by the candidate's job and read, trusting nothing, by the admitting job.

`candidate-<g>-<k>/`, uploaded as the artifact of that name, holds:

    result.json       format, run_id, generation, candidate, parent, proposal, measured, diff
    candidate.bundle  the candidate's commit (when the judge admitted it), on the incumbent

The admitting job trusts no folder: a name that is not `candidate-<g>-<k>`, a link, a file
other than those two, an oversize file, a result for another run or generation, a verdict the
judge would not give its measurement, a bundle with other than one commit whose one parent is
the incumbent and whose tree the result names, or a protected path changed: each is refused in
one line, and a result the folder's name ties to a candidate of this generation is stored as a
failed candidate. Results of candidates measured already are left alone.
"""

from __future__ import annotations

import json
import re
import stat
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from freemad.core.evolve.fold import EvolveState
from freemad.evolve.matrix import Result, Worked
from freemad.github.publish import local_repo

FORMAT = 1
RESULT = "result.json"
BUNDLE = "candidate.bundle"
MAX_RESULT_BYTES = 8 * 2**20  # stage tails and the diff are cut long before this
MAX_BUNDLE_BYTES = 64 * 2**20
MAX_RESULTS = 1024  # folders looked at, at most: a matrix has 256 jobs
_NAME = re.compile(r"candidate-(0|[1-9][0-9]{0,8})-(0|[1-9][0-9]{0,3})")
_OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def artifact_name(generation: int, candidate: int) -> str:
    return f"candidate-{generation}-{candidate}"


def write_result(workspace: Path, out: Path, worked: Worked) -> Path:
    """The result folder `out/candidate-<g>-<k>/`: result.json, and the commit's bundle."""
    folder = out / artifact_name(worked.iteration, worked.candidate)
    folder.mkdir(parents=True, exist_ok=False)
    data = {
        "format": FORMAT,
        "run_id": worked.run_id,
        "generation": worked.iteration,
        "candidate": worked.candidate,
        "parent": worked.parent,
        "proposal": worked.proposal,
        "measured": worked.measured,
        "diff": worked.diff,
    }
    (folder / RESULT).write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
    commit = worked.measured.get("commit")
    if commit:
        ref = f"refs/freemad/bundle/{worked.iteration}-{worked.candidate}"
        with local_repo(workspace) as repo:
            repo.git.update_ref(ref, commit)
            try:
                repo.git.bundle("create", "--quiet", str(folder / BUNDLE), ref, f"^{worked.parent}")
            finally:
                repo.git.update_ref("-d", ref)
    return folder


def read_results(
    workspace: Path, results: Path, state: EvolveState, protected: Sequence[str]
) -> tuple[list[Result], list[tuple[str, str]]]:
    """The result folders under `results` for the generation in flight, each checked (its
    commit fetched from its bundle); and the folders tied to no candidate of it, with why."""
    found: list[Result] = []
    ignored: list[tuple[str, str]] = []
    if not results.is_dir() or state.started is None:
        return found, ignored
    entries = sorted(results.iterdir(), key=lambda p: p.name)
    for entry in entries[:MAX_RESULTS]:
        name = entry.name
        matched = _NAME.fullmatch(name)
        if matched is None:
            ignored.append((name[:80], "not a candidate result's name (candidate-<g>-<k>)"))
            continue
        generation, candidate = int(matched.group(1)), int(matched.group(2))
        if generation != state.started:
            ignored.append((name, f"for generation {generation}, not {state.started}"))
            continue
        found.append(_read_one(workspace, entry, state, candidate, protected))
    if len(entries) > MAX_RESULTS:
        ignored.append((str(len(entries) - MAX_RESULTS), "folders beyond the first 1024 ignored"))
    return found, ignored


def _read_one(
    workspace: Path, folder: Path, state: EvolveState, candidate: int, protected: Sequence[str]
) -> Result:
    try:
        data = _result_data(folder)
        problem = _data_problem(data, state, candidate)
        if problem is None and data["measured"].get("commit"):
            problem = _take_bundle(workspace, folder, data, protected)
        elif problem is None and (folder / BUNDLE).exists():
            problem = "it has a bundle but names no commit"
    except _Refused as refusal:
        return Result(candidate, problem=str(refusal))
    if problem is not None:
        return Result(candidate, problem=problem)
    return Result(candidate, data["proposal"], data["measured"], data["diff"])


class _Refused(Exception):
    """A result folder refused, with the one-line reason."""


def _regular(path: Path, limit: int) -> bytes:
    """The bytes of a regular file (never a link), at most `limit` of them."""
    info = path.lstat()
    if not stat.S_ISREG(info.st_mode):
        raise _Refused(f"{path.name} is not a regular file")
    if info.st_size > limit:
        raise _Refused(f"{path.name} has {info.st_size} bytes, over the limit of {limit}")
    with path.open("rb") as handle:
        content = handle.read(limit + 1)
    if len(content) > limit:
        raise _Refused(f"{path.name} grew past the limit of {limit} bytes")
    return content


def _result_data(folder: Path) -> dict[str, Any]:
    if not stat.S_ISDIR(folder.lstat().st_mode):
        raise _Refused("it is not a folder")
    names = sorted(p.name for p in folder.iterdir())
    strange = [n for n in names if n not in (RESULT, BUNDLE)]
    if strange:
        raise _Refused(f"it holds {strange[0][:80]!r}, neither {RESULT} nor {BUNDLE}")
    if RESULT not in names:
        raise _Refused(f"it has no {RESULT}")
    try:
        data = json.loads(_regular(folder / RESULT, MAX_RESULT_BYTES))
    except (ValueError, UnicodeDecodeError):
        raise _Refused(f"{RESULT} is not JSON") from None
    if not isinstance(data, dict):
        raise _Refused(f"{RESULT} is not a JSON object")
    return data


def _data_problem(data: Mapping[str, Any], state: EvolveState, candidate: int) -> str | None:
    incumbent = state.incumbent
    assert incumbent is not None
    expected = {
        "format": FORMAT,
        "run_id": state.run_id,
        "generation": state.started,
        "candidate": candidate,
        "parent": incumbent.commit,
    }
    for key, value in expected.items():
        if data.get(key) != value:
            return f"its {key} is {json.dumps(data.get(key))[:80]}, not {json.dumps(value)}"
    if not isinstance(data.get("measured"), dict) or not isinstance(data.get("proposal"), dict):
        return "its measured data or proposal is not an object"
    if data.get("diff") is not None and not isinstance(data["diff"], str):
        return "its diff is not text"
    return None


def _take_bundle(
    workspace: Path, folder: Path, data: Mapping[str, Any], protected: Sequence[str]
) -> str | None:
    """Fetch the candidate's commit from its bundle, after checking the bundle holds that one
    commit on the incumbent, with the tree the result names and no protected path changed."""
    measured = data["measured"]
    commit, parent, tree = measured.get("commit"), data["parent"], measured.get("tree")
    if not isinstance(commit, str) or not _OBJECT_ID.fullmatch(commit):
        return "its commit is not a git object id"
    if (folder / BUNDLE).is_symlink() or not (folder / BUNDLE).exists():
        return f"the judge admits it, but it has no {BUNDLE}"
    content = _regular(folder / BUNDLE, MAX_BUNDLE_BYTES)
    with tempfile.TemporaryDirectory(prefix="freemad-bundle-") as scratch:
        bundle = Path(scratch, BUNDLE)  # a copy: the folder's file cannot change under git
        bundle.write_bytes(content)
        with local_repo(workspace) as repo:
            status, heads, _ = repo.git.bundle(
                "list-heads", str(bundle), with_extended_output=True, with_exceptions=False
            )
            listed = [line.split(" ", 1) for line in str(heads).splitlines() if line.strip()]
            if status != 0 or len(listed) != 1:
                return f"{BUNDLE} is not a bundle of one commit"
            if listed[0][0] != commit:
                return f"{BUNDLE} holds {listed[0][0][:12]}, not its commit {commit[:12]}"
            status, _, err = repo.git.fetch(
                *("--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules"),
                str(bundle),
                listed[0][1].strip(),
                with_extended_output=True,
                with_exceptions=False,
            )
            if status != 0:
                return f"{BUNDLE} cannot be fetched: {' '.join(str(err).split())[:200]}"
            parents = str(repo.git.rev_list("--parents", "-n", "1", commit)).split()
            if parents != [commit, parent]:
                return f"its commit {commit[:12]} is not a child of the incumbent {parent[:12]}"
            if str(repo.git.rev_parse(f"{commit}^{{tree}}")) != tree:
                return f"its commit's tree is not the tree it names ({str(tree)[:12]})"
            if protected:
                specs = [f":(literal){path}" for path in protected]
                changed = str(repo.git.diff("--name-only", parent, commit, "--", *specs)).split()
                if changed:
                    return f"its commit changes the protected path {changed[0][:80]}"
    return None
