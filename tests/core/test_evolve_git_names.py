"""An evolve lineage's names and commit messages, exactly as git will carry them."""

from __future__ import annotations

from freemad.core.evolve.git_names import branch_name, commit_message, tag_name


def test_the_branch_and_the_tags_name_the_run_and_the_version() -> None:
    assert branch_name("r1") == "freemad/evolve/r1"
    assert tag_name("r1", 3) == "evolve/r1/v3"


def test_a_commit_message_is_the_goal_on_one_line_then_the_trailers() -> None:
    message = commit_message(
        "  speed   up\nthe   parser ", "r1", 2, 7, {"runtime ms": 412, "accuracy": 0.5}
    )
    assert message == (
        "evolve v2: speed up the parser\n"
        "\n"
        "Evolve-Run: r1\n"
        "Evolve-Version: v2\n"
        "Evolve-Iteration: 7\n"
        "Evolve-Score: runtime_ms=412.0, accuracy=0.5\n"
    )


def test_no_goal_and_no_components_say_so() -> None:
    assert commit_message(" \n ", "r", 1, 0, {}) == (
        "evolve v1: (no goal)\n\nEvolve-Run: r\nEvolve-Version: v1\n"
        "Evolve-Iteration: 0\nEvolve-Score: none\n"
    )


def test_a_goal_that_fits_the_first_line_is_kept_whole() -> None:
    goal = "x" * 61  # "evolve v1: " is 11 characters: 72 in all
    assert commit_message(goal, "r", 1, 1, {}).split("\n")[0] == f"evolve v1: {goal}"


def test_a_longer_goal_is_cut_to_the_first_line_with_an_ellipsis() -> None:
    first = commit_message("y" * 62, "r", 1, 1, {}).split("\n")[0]
    assert first == "evolve v1: " + "y" * 58 + "..."
    assert len(first) == 72
    # The cut does not leave a space before the ellipsis.
    first = commit_message("a" * 57 + " " + "b" * 10, "r", 1, 1, {}).split("\n")[0]
    assert first == "evolve v1: " + "a" * 57 + "..."


def test_a_first_line_limit_shorter_than_the_subject_still_keeps_a_little_goal() -> None:
    assert commit_message("abcdef", "r", 1, 1, {}, first_line_limit=10).split("\n")[0] == (
        "evolve v1: a..."
    )
    assert commit_message("abcd", "r", 1, 1, {}, first_line_limit=10).split("\n")[0] == (
        "evolve v1: abcd"
    )
    assert commit_message("abcdef", "r", 1, 1, {}, first_line_limit=20).split("\n")[0] == (
        "evolve v1: abcdef"
    )
