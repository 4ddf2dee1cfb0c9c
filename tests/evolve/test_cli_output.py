"""What `freemad evolve ...` prints for a run, and the one iteration count that `start`,
`status` and `report` share."""

from __future__ import annotations

import json
import shlex

import click
from click.testing import CliRunner

from freemad.cli.options import output_options
from freemad.cli.show import show_evolve
from freemad.core.evolve.fold import fold
from freemad.evolve.run_report import render_report
from tests.evolve.test_run_report import RunBuilder, realistic_run


def shown(events: list, *args: str) -> str:
    @click.command()
    @click.option("--config", "config_path")
    @output_options
    def show(config_path: str | None) -> None:
        show_evolve(fold("r1", events))

    result = CliRunner().invoke(show, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_start_and_report_count_the_same_iterations() -> None:
    events = realistic_run()
    view = fold("r1", events).view()
    markdown, _ = render_report("r1", events, svg_name="score.svg")
    assert view["iterations_judged"] == 7  # iterations 1-7; the seed's baseline is not one
    assert f"- Iterations: {view['iterations_judged']} after the seed's baseline;" in markdown
    assert "judged: 8 candidate(s), the baseline included" in markdown  # 0-7, all judged


def test_a_run_with_only_its_baseline_has_no_iterations() -> None:
    events = RunBuilder().judged(0, admitted=True, runtime=5.0).events
    markdown, _ = render_report("r1", events, svg_name="score.svg")
    assert fold("r1", events).view()["iterations_judged"] == 0
    assert "- Iterations: 0 after the seed's baseline;" in markdown


def test_a_waiting_run_asks_with_the_commands_that_answer_it() -> None:
    events = realistic_run()
    asked = next(i for i, (kind, _) in enumerate(events) if kind == "waiting_for_human")
    text = shown(events[: asked + 1], "--config", "my evolve.yaml", "--text")
    assert text.startswith("evolve run r1: waiting_for_human, 6 iteration(s), 3 version(s)\n")
    assert "The run asks:\n  Go on?\n" in text
    commands = [shlex.split(line) for line in text.splitlines() if "evolve answer" in line]
    assert commands == [
        ["freemad", "evolve", "answer", "r1", "DIRECTION", "--config", "my evolve.yaml"],
        ["freemad", "evolve", "answer", "r1", "--decline", "--config", "my evolve.yaml"],
    ]


def test_json_is_the_view_and_the_default_off_a_terminal() -> None:
    events = realistic_run()
    assert json.loads(shown(events)) == fold("r1", events).view()
    assert json.loads(shown(events, "--json"))["iterations_judged"] == 7
    text = shown(events, "--text")
    assert "stopped (max_iterations), 7 iteration(s)" in text
    assert "incumbent: v2 from iteration 5" in text and "freemad evolve report r1" in text
