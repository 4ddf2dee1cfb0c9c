"""`freemad eval simulate`: hand-worked trajectories, the runtime's own decision, seeds, the CLI's
errors and the committed figures."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from freemad.cli.eval_simulate import caption, simulate
from freemad.cli.run import run_cli
from freemad.core.answer_identity import answer_id, canonicalize
from freemad.core.scoring import Weights, score_moves
from freemad.debate import run_debate
from freemad.eval.simulate import (
    METHODS,
    Scenario,
    Trajectory,
    decide,
    majority,
    moves_of,
    play_item,
    run,
    sweep,
    sweep_chart_svg,
    wilson_interval,
)
from tests.conftest import ScriptedAgent, generation, keep, revise, scripted_config

ROOT = Path(__file__).resolve().parents[2]


def trajectory(*rounds: str) -> Trajectory:
    """`trajectory("AAB", "ABB")`: one string per round, one letter per agent."""
    agents = tuple(f"agent{i + 1}" for i in range(len(rounds[0])))
    return Trajectory(agents, tuple(tuple(r) for r in rounds))


def scores(t: Trajectory) -> dict[str, float]:
    return score_moves(moves_of(t), Weights()).raw


def test_two_agents_conforming_away_from_the_right_answer_lose_the_vote_not_the_score() -> None:
    t = trajectory("AAA", "ABB")
    # A: 3*20 + 20/2 - 2*25/2 = 45;  B: 2*30/2 = 30
    assert scores(t) == {"A": 45.0, "B": 30.0}
    chosen = decide(t, Weights(), random.Random(0))
    assert chosen == {
        "freemad": "A",
        "majority_final": "B",
        "majority_initial": "A",
        "single": "A",
    }


def test_one_switch_out_of_a_two_to_one_lead_is_followed_by_the_score() -> None:
    # The paper's weights reward the move itself: A = 2*20 + 10 - 12.5, B = 20 + 10 + 15.
    t = trajectory("AAB", "ABB")
    assert scores(t) == {"A": 37.5, "B": 45.0}
    assert decide(t, Weights(), random.Random(0))["freemad"] == "B"


def test_a_late_switch_weighs_less_than_the_rounds_before_it() -> None:
    t = trajectory("AAB", "AAB", "ABB")
    board = scores(t)
    # A: 2*20 + 2*20/2 + 20/3 - 25/3;  B: 20 + 20/2 + 20/3 + 30/3
    assert board["A"] == pytest.approx(60 - 5 / 3)
    assert board["B"] == pytest.approx(46 + 2 / 3)
    assert decide(t, Weights(), random.Random(0))["freemad"] == "A"


def test_the_decision_is_the_runtimes_on_the_same_trajectories() -> None:
    """Simulated trajectories replayed by scripted agents through run_debate: same scores, same winner."""
    rng = random.Random(7)
    scenarios = [
        Scenario(agents=4, conformity=0.8, malicious=1, rounds=2),
        Scenario(agents=5, p_correct=0.4, conformity=0.5, malicious=2, independent="rederive"),
    ]
    for scenario in scenarios:
        for _ in range(6):
            t = play_item(scenario, rng)
            ports = {agent: ScriptedAgent(agent) for agent in t.agents}
            for index, agent in enumerate(t.agents):
                ports[agent].script(generation(t.rounds[0][index]))
                for before, now in zip(t.rounds[:-1], t.rounds[1:], strict=True):
                    same = before[index] == now[index]
                    ports[agent].script(keep() if same else revise(now[index]))
            result = run_debate(
                "q", scripted_config(t.agents), rounds=len(t.rounds) - 1, agents=ports
            )
            ours = score_moves(moves_of(t), scenario.weights).raw
            assert result.raw_scores == pytest.approx({_ident(a): s for a, s in ours.items()})
            assert list(result.raw_scores) == [_ident(a) for a in ours]  # first-appearance order
            chosen = decide(t, scenario.weights, random.Random(0))["freemad"]
            assert result.final_answer_id == _ident(chosen)


def _ident(label: str) -> str:
    return answer_id(canonicalize(label, "whitespace"))


def test_majority_ties_are_drawn_by_the_generator() -> None:
    assert majority(list("AAB"), random.Random(0)) == "A"
    drawn = {majority(list("ABAB"), random.Random(seed)) for seed in range(20)}
    assert drawn == {"A", "B"}
    assert majority(list("ABAB"), random.Random(3)) == majority(list("BABA"), random.Random(3))


def test_right_agents_that_never_move_make_every_method_right() -> None:
    outcome = run(Scenario(agents=5, p_correct=1.0, conformity=0.0, malicious=0), 200, 0)
    for method in METHODS:
        assert outcome.methods[method].correct == 200
    assert outcome.freemad_only == outcome.majority_final_only == 0


def test_a_malicious_majority_wins_every_vote_but_not_the_single_honest_agent() -> None:
    outcome = run(Scenario(agents=3, p_correct=1.0, conformity=1.0, malicious=2), 100, 0)
    acc = {m: a.accuracy for m, a in outcome.methods.items()}
    # The honest agent conforms to the two malicious ones in round 1.
    assert acc == {"freemad": 0.0, "majority_final": 0.0, "majority_initial": 0.0, "single": 1.0}


def test_all_malicious_is_always_wrong() -> None:
    outcome = run(Scenario(agents=2, malicious=2), 50, 0)
    assert all(a.correct == 0 for a in outcome.methods.values())


def test_one_malicious_agent_among_right_ones_only_wins_when_they_conform() -> None:
    # 3 right agents and 1 malicious: the right answer leads 3 to 1 in every round.
    outcome = run(Scenario(agents=4, p_correct=1.0, conformity=1.0, malicious=1), 100, 0)
    assert all(a.correct == 100 for a in outcome.methods.values())


def test_the_same_seed_gives_the_same_numbers_and_another_seed_others() -> None:
    scenario = Scenario(agents=5, p_correct=0.6, conformity=0.7, malicious=1)
    assert run(scenario, 300, 5).as_dict() == run(scenario, 300, 5).as_dict()
    assert run(scenario, 300, 5).methods != run(scenario, 300, 6).methods


def test_wilson_interval() -> None:
    low, high = wilson_interval(5, 10)
    assert (round(low, 4), round(high, 4)) == (0.2366, 0.7634)
    assert wilson_interval(0, 10)[0] == 0.0
    assert wilson_interval(10, 10)[1] == 1.0


def cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        run_cli(simulate, args, "freemad eval simulate")
    out, err = capsys.readouterr()
    code = exited.value.code
    return (code if isinstance(code, int) else 1), out, err


def test_the_table_and_the_json_say_the_same(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--items", "200", "--seed", "3", "--malicious", "0"]
    code, table, _ = cli(args, capsys)
    assert code == 0
    code, text, _ = cli([*args, "--json"], capsys)
    assert code == 0
    report = json.loads(text)
    assert report["settings"]["items"] == 200
    assert list(report["methods"]) == list(METHODS)
    for name, method in report["methods"].items():
        assert method["total"] == 200
        low, high = method["interval"]
        assert low <= method["accuracy"] <= high
        line = next(row for row in table.splitlines() if row.startswith(name + " "))
        assert line.split()[1:4] == [str(method["correct"]), "200", f"{method['accuracy']:.3f}"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--p-correct", "1.5"], "--p-correct"),
        (["--agents", "0"], "--agents"),
        (["--agents", "3", "--malicious", "4"], "malicious must be between 0 and agents (3)"),
        (["--weights", "20,25"], "expected exactly 4 weights"),
        (["--weights", "20,-1,30,20"], "non-negative"),
        (["--sweep", "speed=1,2"], "--sweep takes PARAMETER"),
        (["--sweep", "malicious=0,0.5"], "malicious must be a whole number"),
        (["--sweep", "malicious=0,9"], "malicious must be between"),
        (["--options", "1"], "--options"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(
    args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(args, capsys)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("freemad eval simulate: error: ")
    assert says in err
    assert "Traceback" not in err


def test_a_sweep_draws_a_well_formed_chart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "chart.svg"
    args = ["--items", "50", "--sweep", "malicious=0,1,2", "--svg", str(path), "--json"]
    code, out, _ = cli(args, capsys)
    assert code == 0
    assert [p["value"] for p in json.loads(out)["points"]] == [0, 1, 2]
    root = ET.fromstring(path.read_text(encoding="utf-8"))
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert len(root.findall("{http://www.w3.org/2000/svg}polyline")) == len(METHODS)
    points = sweep(Scenario(), "malicious", [0, 1, 2], 50, 0)
    assert path.read_text(encoding="utf-8") == sweep_chart_svg(
        "malicious", points, _caption_without("malicious", 50)
    )


def _caption_without(varied: str, items: int) -> str:
    return caption(Scenario(), items, 0, varied=varied)


def test_the_committed_figures_are_what_the_script_makes(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "simulation_figure.py"), "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.startswith("| non-conformers |")
    for made in sorted(tmp_path.glob("*.svg")):
        committed = ROOT / "docs" / "images" / made.name
        assert made.read_bytes() == committed.read_bytes(), f"regenerate {committed}"
    assert {p.name for p in tmp_path.glob("*.svg")} == {
        "simulation-keep.svg",
        "simulation-rederive.svg",
    }
