"""The state branch: runs' events and artifacts kept in the repository between workflow jobs.

A job's runner is thrown away after it, so runs live on a branch (default `freemad-state`), one
folder per run in the layout of `freemad.store.run_folders` (which also parses it):

    runs/<run_id>/run.json, runs/<run_id>/events.jsonl, runs/<run_id>/artifacts/<sha256>

Commits are built with plumbing (a temporary index, commit-tree) on the remote tip just fetched,
never touching the clone's working tree, index, HEAD or branches, and pushed fast-forward only. A
rejected push means another job pushed first: fetch, redo the append on the new tip, push again.

A debate's progress events (kept in the store while it runs, for a dashboard reading the store to
show it live: `freemad.debate.live_store`) are not saved: its folder holds what it did before,
the run and its `debate_finished` transcript. A job saves after the debate ended, so a run on the
branch is never one still running.
"""

from __future__ import annotations

import itertools
import random
import tempfile
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, replace
from pathlib import Path

import git

from freemad.debate.live_store import PROGRESS
from freemad.errors import FreemadError
from freemad.store.artifacts import sha256_hex
from freemad.store.run_folders import (
    RUNS,
    ArtifactEntry,
    CorruptFolder,
    EventLine,
    IssueRef,
    RunFile,
    RunFolder,
    artifact_file_of,
    event_line,
    events_file_of,
    issue_of,
    parse_folder,
    run_file_bytes,
    run_file_of,
)
from freemad.store.store_port import RUN_ID, Store, StoredEvent, UnknownRun
from freemad.workspace.git import COMMIT_CONFIG, commit_of, open_repo

# Words of a `[remote rejected]` push that lost the race for the ref lock, so is worth retrying.
_LOST_RACE = ("lock", "failed to update ref", "expected")
_jitter = random.SystemRandom()


class StateError(FreemadError):
    """The state branch could not be fetched, read, written or pushed."""


class StateConflict(StateError):
    """The branch and the local store disagree about a run's events: another job advanced it."""


class CorruptState(StateError):
    """A file on the state branch is not what FREE-MAD writes there."""


class StateBranch:
    """The state branch of a clone: fetch it, read its runs, load them into a store, save and push."""

    def __init__(
        self,
        repo_path: Path,
        *,
        remote: str = "origin",
        branch: str = "freemad-state",
        retries: int = 5,
        backoff: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
        env: Mapping[str, str] | None = None,
    ) -> None:
        """`env`: extra environment for every git command (the webhook bot's credentials go
        there, never into the clone's config or a command line)."""
        self.repo_path = Path(repo_path)
        self.env = dict(env or {})
        self.remote, self.branch = remote, branch
        self.retries, self.backoff, self._sleep = retries, backoff, sleep
        self.tracking = f"refs/remotes/{remote}/{branch}"  # where the fetched tip is kept
        self.where = f"{remote}/{branch}"

    def pull(self) -> str | None:
        """Fetch the branch: its tip, or None when the remote has no such branch (empty state)."""
        with self._repo() as repo:
            return self._fetch(repo)

    def runs(self) -> list[RunFile]:
        """Every run on the branch as last fetched (pull() first), newest update first."""
        with self._repo() as repo:
            tip = commit_of(repo, self.tracking)
            metas = [] if tip is None else [f.meta for f in self._folders(repo, tip, None).values()]
        return sorted(metas, key=lambda meta: (meta.updated_at, meta.run_id), reverse=True)

    def runs_for_issue(self, repo: str, number: int) -> list[str]:
        """Ids of the runs recorded for issue `number` of `repo` ("owner/name"), newest first."""
        key = (repo.casefold(), number)
        newest = sorted(self.runs(), key=lambda m: (m.created_at, m.run_id), reverse=True)
        return [m.run_id for m in newest if (i := m.issue) and (i.repo.casefold(), i.number) == key]

    def load(self, store: Store, run_ids: Collection[str] | None = None) -> None:
        """Import the branch's runs (all, or those of `run_ids` it holds) into `store`; pull() first.

        Idempotent: events the store already holds are compared, not appended again. The store
        numbers imported events itself (the same seqs: both count from 0) and stamps its own time.
        """
        with self._repo() as repo:
            tip = commit_of(repo, self.tracking)
            folders = {} if tip is None else self._folders(repo, tip, run_ids)
            for run_id, folder in folders.items():
                wanted = _import_run(store, folder, self.where)
                paths = [artifact_file_of(run_id, entry.sha256) for entry in wanted]
                contents = _read_blobs(repo, [f"{tip}:{path}" for path in paths])
                for entry, path, content in zip(wanted, paths, contents, strict=True):
                    if content is None or sha256_hex(content) != entry.sha256:
                        raise CorruptState(f"{path} on {self.where} is missing or damaged")
                    store.put_artifact(run_id, entry.name, content)

    def save(self, store: Store, run_ids: Collection[str], *, issue: IssueRef | None = None) -> str:
        """Write the runs' folders from `store` on the remote tip and push: the branch's new tip.

        `issue` is recorded for every run saved; without it, a run's summary["issue"]
        ({"repo": "o/r", "number": 12}), and failing that what the branch already records.
        StateConflict when the branch holds events of a run that the store lacks.
        """
        ids = sorted(set(run_ids))
        if not ids or not all(RUN_ID.fullmatch(run_id) for run_id in ids):
            raise StateError(f"cannot save runs {ids} on {self.where}: not FREE-MAD run ids")
        with self._repo() as repo:
            for attempt in range(self.retries + 1):
                tip = self._fetch(repo)
                tree = self._write_tree(repo, tip, self._files(repo, store, ids, tip, issue))
                if tip is not None and tree == repo.git.rev_parse(f"{tip}^{{tree}}"):
                    return tip  # the branch already says all of it
                parents, message = (["-p", tip] if tip else []), f"freemad: save {', '.join(ids)}"
                commit = str(repo.git(c=COMMIT_CONFIG).commit_tree(tree, *parents, "-m", message))
                if self._push(repo, commit):
                    return commit
                if attempt < self.retries:
                    delay = self.backoff * 2**attempt
                    self._sleep(_jitter.uniform(delay / 2, delay))
        raise StateError(
            f"could not push to {self.where} in {self.retries + 1} attempts: other jobs kept pushing first",
            hint="run the job again",
        )

    @contextmanager
    def _repo(self) -> Iterator[git.Repo]:
        try:
            repo = open_repo(self.repo_path)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise StateError(f"{self.repo_path} is not a git repository") from None
        if self.env:
            repo.git.update_environment(**self.env)
        with repo:
            try:
                yield repo
            except git.GitCommandError as exc:
                detail = " ".join(str(exc.stderr).split()) or str(exc)
                raise StateError(f"git failed on {self.where}: {detail}") from None

    def _folders(
        self, repo: git.Repo, tip: str, run_ids: Collection[str] | None
    ) -> dict[str, RunFolder]:
        listed = str(repo.git.ls_tree("-z", "--name-only", tip, f"{RUNS}/")).split("\0")
        present = {name.removeprefix(f"{RUNS}/") for name in listed if name}
        ids = sorted(present if run_ids is None else present & set(run_ids))
        paths = [path for i in ids for path in (run_file_of(i), events_file_of(i))]
        blobs = iter(_read_blobs(repo, [f"{tip}:{path}" for path in paths]))
        try:
            return {i: parse_folder(i, next(blobs), next(blobs), self.where) for i in ids}
        except CorruptFolder as exc:
            raise CorruptState(exc.message) from None

    def _fetch(self, repo: git.Repo) -> str | None:
        status, _, err = repo.git.fetch(
            *("--no-write-fetch-head", "--no-tags", "--no-recurse-submodules", "--quiet"),
            self.remote,
            f"+refs/heads/{self.branch}:{self.tracking}",
            with_extended_output=True,
            with_exceptions=False,
        )
        if status == 0:
            return commit_of(repo, self.tracking)
        if "couldn't find remote ref" in err:  # GitPython runs git with LC_ALL=C
            if commit_of(repo, self.tracking) is not None:  # deleted remotely: empty state again
                repo.git.update_ref("-d", self.tracking)
            return None
        raise StateError(f"cannot fetch {self.where}: {_last_line(err)}")

    def _files(
        self, repo: git.Repo, store: Store, ids: list[str], tip: str | None, issue: IssueRef | None
    ) -> dict[str, bytes]:
        """The files to write: each run's folder, its events.jsonl only ever appended to."""
        existing = {} if tip is None else self._folders(repo, tip, ids)
        files: dict[str, bytes] = {}
        for run_id in ids:
            row = store.run(run_id)
            if row is None:
                raise UnknownRun(f"unknown run {run_id} in the local store: nothing to save")
            old = existing.get(run_id)
            events = published(store.events(run_id))
            had = old.events if old else []
            _check_agree(run_id, had, events, self.where, saving=True)
            added = b"".join(map(event_line, events[len(had) :]))  # lines are only added
            files[events_file_of(run_id)] = (old.events_text if old else b"") + added
            entries = list(old.meta.artifacts) if old else []
            on_branch = {entry.sha256 for entry in entries}
            for ref in store.artifacts(run_id):
                entry = ArtifactEntry(name=ref.name, sha256=ref.sha256, size=ref.size)
                if entry not in entries:
                    entries.append(entry)
                if ref.sha256 not in on_branch:
                    files[artifact_file_of(run_id, ref.sha256)] = store.read_artifact(
                        ref.artifact_id
                    )
                    on_branch.add(ref.sha256)
            chosen = issue or issue_of(row.summary) or (old.meta.issue if old else None)
            meta = RunFile(**asdict(row), issue=chosen, artifacts=entries)
            files[run_file_of(run_id)] = run_file_bytes(meta)
        return files

    def _write_tree(self, repo: git.Repo, tip: str | None, files: dict[str, bytes]) -> str:
        """The tip's tree with `files` written in, built in a temporary index of our own."""
        with tempfile.TemporaryDirectory(prefix="freemad-state-") as scratch:
            env = {"GIT_INDEX_FILE": str(Path(scratch, "index"))}
            repo.git.read_tree(tip or "--empty", env=env)
            blobs = [Path(scratch, f"blob{number}") for number in range(len(files))]
            for blob, content in zip(blobs, files.values(), strict=True):
                blob.write_bytes(content)
            shas = repo.git.hash_object("-w", "--no-filters", *map(str, blobs)).split()
            added = [
                ("--cacheinfo", f"100644,{sha},{p}") for sha, p in zip(shas, files, strict=True)
            ]
            repo.git.update_index("--add", *itertools.chain(*added), env=env)
            return str(repo.git.write_tree(env=env))

    def _push(self, repo: git.Repo, commit: str) -> bool:
        """Push fast-forward only: True when pushed, False when another job pushed first."""
        status, out, err = repo.git(c=[*COMMIT_CONFIG, "push.gpgSign=false"]).push(
            *("--porcelain", "--no-verify", "--no-follow-tags", "--recurse-submodules=no"),
            self.remote,
            f"{commit}:refs/heads/{self.branch}",
            with_extended_output=True,
            with_exceptions=False,
        )
        if status == 0:
            repo.git.update_ref(self.tracking, commit)
            return True
        for line in (line for line in out.splitlines() if line.startswith("!")):
            if "[rejected]" in line:  # non-fast-forward, or the branch appeared: fetch first
                return False
            if "[remote rejected]" in line and any(word in line for word in _LOST_RACE):
                return False
            raise StateError(f"the push to {self.where} was refused: {line.split(chr(9))[-1]}")
        raise StateError(f"cannot push to {self.where}: {_last_line(err)}")


def published(events: list[StoredEvent]) -> list[StoredEvent]:
    """A run's events as the branch keeps them: without a debate's progress while it ran (the
    live view's, redacted but of no use once it ended: its transcript says it all), numbered
    again from 0. Runs without progress events are kept as they are."""
    kept = [event for event in events if event.kind != PROGRESS]
    if len(kept) == len(events):
        return events
    return [replace(event, seq=position) for position, event in enumerate(kept)]


def _import_run(store: Store, folder: RunFolder, where: str) -> list[ArtifactEntry]:
    """Bring one run's row and events into `store`: the artifacts it still lacks."""
    meta = folder.meta
    local = store.run(meta.run_id)
    if local is None:
        store.create_run(meta.run_id, meta.kind, meta.summary)
    have = [] if local is None else store.events(meta.run_id)
    _check_agree(meta.run_id, folder.events, have, where, saving=False)
    if len(folder.events) > len(have):
        missing = [(event.kind, event.data) for event in folder.events[len(have) :]]
        store.append_many(meta.run_id, missing)
    if len(folder.events) >= len(have) and (
        local is None or (local.status, local.summary) != (meta.status, meta.summary)
    ):
        store.update_run(meta.run_id, status=meta.status, summary=meta.summary)
    held = {(ref.name, ref.sha256) for ref in store.artifacts(meta.run_id)}
    return [entry for entry in meta.artifacts if (entry.name, entry.sha256) not in held]


def _check_agree(
    run_id: str, older: list[EventLine], newer: list[StoredEvent], where: str, *, saving: bool
) -> None:
    """StateConflict unless the branch's events (`older`) start the store's, or when loading agree."""
    if saving and len(older) > len(newer):
        raise StateConflict(
            f"run {run_id} has {len(older)} events on {where} but {len(newer)} in the local store:"
            " another job advanced it",
            hint="load the branch into the store, then save again",
        )
    for position, (old, new) in enumerate(zip(older, newer, strict=False)):
        if new.seq != position or (old.kind, old.data) != (new.kind, new.data):
            raise StateConflict(
                f"run {run_id} differs at event {position} between {where} and the local store"
            )


def _read_blobs(repo: git.Repo, specs: list[str]) -> list[bytes | None]:
    """The contents of `<commit>:<path>` blobs through one `cat-file --batch`; None when absent."""
    with tempfile.TemporaryFile() as stdin:  # GitPython needs a real file for a command's stdin
        stdin.write("".join(f"{spec}\n" for spec in specs).encode())
        stdin.seek(0)
        out: bytes = repo.git.cat_file(
            "--batch", istream=stdin, stdout_as_string=False, strip_newline_in_stdout=False
        )
    found: list[bytes | None] = []
    position = 0
    for _ in specs:
        end = out.index(b"\n", position)
        header = out[position:end].split(b" ")  # "<oid> <type> <size>", or "<spec> missing"
        size = int(header[2]) if len(header) == 3 else -1
        found.append(out[end + 1 : end + 1 + size] if header[1:2] == [b"blob"] else None)
        position = end + 1 + (size + 1 if size >= 0 else 0)
    return found


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "git gave no reason"
