"""A worker that cheats on purpose, on the evolve toy and on a pytest judge: in bubblewrap every
attack fails; with no sandbox a run is refused unless the config says `security.sandbox: host`,
and there what FREE-MAD can defend without one (its own git, the refs, editable_paths) holds."""

from __future__ import annotations

import shutil
import site
from pathlib import Path

import pytest

from freemad.core.evolve.fold import Status
from freemad.errors import UsageError
from tests.sandbox.attacks import (
    git,
    kill_marked,
    needs_bwrap,
    new_marker,
    none_left,
    pytest_judge,
    pytest_repo,
    runner,
    toy_judge,
    toy_repo,
)


@pytest.fixture
def marker() -> object:
    name = new_marker()
    yield name
    kill_marked(name)
    for folder in site.getsitepackages():
        Path(folder, f"freemad_attack_{name}.pth").unlink(missing_ok=True)


def only_the_seed(tmp_path: Path, repo: Path, attack: str, marker: str, **options: object) -> None:
    """Run one iteration of `attack`; nothing but the seed may be admitted."""
    run, store = runner(tmp_path, repo, attack, marker, **options)  # type: ignore[arg-type]
    with store:
        state = run.start("make slow_sum fast")
        judged = [e.data for e in store.events(state.run_id) if e.kind == "candidate_judged"]
    assert state.status is Status.STOPPED, state.error
    assert [v.version for v in state.versions] == [0], "a wrong slow_sum was admitted"
    assert len(judged) == 2 and not judged[1]["verdict"]["admitted"], judged
    tip = git(repo, "rev-parse", f"freemad/evolve/{state.run_id}")
    assert tip == state.seed_commit


JUDGES = {"toy": (toy_repo, toy_judge), "pytest": (pytest_repo, pytest_judge)}


@needs_bwrap
@pytest.mark.parametrize("judged_by", JUDGES)
def test_a_daemon_that_rewrites_the_protected_tests_dies_with_the_call(
    tmp_path: Path, marker: str, judged_by: str
) -> None:
    make_repo, judge = JUDGES[judged_by]
    repo = make_repo(tmp_path)
    only_the_seed(tmp_path, repo, "daemon", marker, sandbox="auto", judge=judge())
    assert none_left(marker), "the worker's daemon outlived its call"


def test_in_host_mode_the_daemon_attack_is_real(tmp_path: Path, marker: str) -> None:
    """What `security.sandbox: host` means: the daemon rewrites the check after the restore and a
    wrong slow_sum is admitted, the tampered check in its commit. Validate calls this unsafe."""
    repo = toy_repo(tmp_path)
    run, store = runner(tmp_path, repo, "daemon", marker, sandbox="host", judge=toy_judge())
    with store:
        state = run.start("make slow_sum fast")
    assert [v.version for v in state.versions] == [0, 1]
    committed = git(repo, "show", f"{state.versions[1].commit}:tests/check.py")
    assert committed != git(repo, "show", "HEAD:tests/check.py")  # caught mid-rewrite or after


@needs_bwrap
@pytest.mark.parametrize("judged_by", JUDGES)
def test_a_pth_file_in_the_judges_site_packages_cannot_be_written(
    tmp_path: Path, marker: str, judged_by: str
) -> None:
    make_repo, judge = JUDGES[judged_by]
    repo = make_repo(tmp_path)
    only_the_seed(tmp_path, repo, "pth", marker, sandbox="auto", judge=judge())
    assert not any(Path(f, f"freemad_attack_{marker}.pth").exists() for f in site.getsitepackages())


@pytest.mark.parametrize("sandbox", [pytest.param("auto", marks=needs_bwrap), "host"])
def test_a_clean_filter_never_runs_and_never_stays(
    tmp_path: Path, marker: str, sandbox: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setenv("FREEMAD_ATTACK_OUT", str(out))
    monkeypatch.setenv("GITHUB_TOKEN", f"ghs_{marker}")
    repo = toy_repo(tmp_path)
    config_before = (repo / ".git" / "config").read_bytes()
    run, store = runner(tmp_path, repo, "filter", marker, sandbox=sandbox, judge=toy_judge())
    with store:
        state = run.start("make slow_sum fast")
    assert not list(out.iterdir()), "FREE-MAD's git ran the worker's filter"
    assert (repo / ".git" / "config").read_bytes() == config_before, "the filter stayed"
    assert [v.version for v in state.versions] == [0]
    if sandbox == "host":  # the worker could write the config: that is tampering, undone
        assert state.stop_reason == "tampered"
        assert "config is changed" in (state.error or "")


@pytest.mark.parametrize("sandbox", [pytest.param("auto", marks=needs_bwrap), "host"])
def test_moved_branch_and_forged_tag_are_undone_and_never_pushed(
    tmp_path: Path, marker: str, sandbox: str
) -> None:
    repo = toy_repo(tmp_path)
    run, store = runner(tmp_path, repo, "refs", marker, sandbox=sandbox, judge=toy_judge())
    with store:
        state = run.start("make slow_sum fast")
        run_id = state.run_id
        assert [v.version for v in state.versions] == [0]
        assert git(repo, "rev-parse", f"freemad/evolve/{run_id}") == state.seed_commit
        assert git(repo, "tag", "--list", f"evolve/{run_id}/*").split() == [f"evolve/{run_id}/v0"]
        if sandbox == "host":
            assert state.stop_reason == "tampered"
            assert f"tag evolve/{run_id}/v9 is" in (state.error or "")
            assert f"branch freemad/evolve/{run_id} is" in (state.error or "")


@pytest.mark.parametrize("sandbox", [pytest.param("auto", marks=needs_bwrap), "host"])
def test_files_outside_editable_paths_never_reach_a_pytest_judge(
    tmp_path: Path, marker: str, sandbox: str
) -> None:
    repo = pytest_repo(tmp_path)
    judge = pytest_judge()
    only_the_seed(
        tmp_path, repo, "pytest", marker, sandbox=sandbox, judge=judge, editable=["slow_sum.py"]
    )


def test_without_editable_paths_the_same_attack_fools_pytest(tmp_path: Path, marker: str) -> None:
    """The attack is real: with no allowlist the shadowing files reach the judge and win."""
    repo = pytest_repo(tmp_path)
    run, store = runner(tmp_path, repo, "pytest", marker, sandbox="host", judge=pytest_judge())
    with store:
        state = run.start("make slow_sum fast")
    assert [v.version for v in state.versions] == [0, 1]


def test_with_no_sandbox_here_a_run_is_refused_unless_host_is_asked_for(
    tmp_path: Path, marker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = toy_repo(tmp_path)
    only_git = tmp_path / "bin"
    only_git.mkdir()
    (only_git / "git").symlink_to(shutil.which("git") or "git")
    monkeypatch.setenv("PATH", str(only_git))
    run, store = runner(tmp_path, repo, "daemon", marker, sandbox="auto", judge=toy_judge())
    with store:
        with pytest.raises(UsageError) as refused:
            run.start("make slow_sum fast")
        assert store.runs(kind="evolve") == []
    message = str(refused.value)
    assert "bubblewrap (bwrap) is not installed" in message
    assert "security.sandbox: host" in message
    assert "\n" not in message
