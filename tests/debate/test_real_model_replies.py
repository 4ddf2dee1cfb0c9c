"""What real models do to the contract, held in the debate: they echo the prompt, repeat one
line, ignore the format, and refuse prompts past their context window. Each has one outcome."""

from __future__ import annotations

from freemad.agents.agent_port import CallResult, CallStatus
from freemad.debate import run_debate
from freemad.debate.prompts import PromptBook, estimate_tokens
from freemad.debate.turns import tighter_cap
from tests.conftest import ScriptedAgent, generation, keep, make_config, scripted_config


def agents(**scripts: list[str | CallResult]) -> dict[str, ScriptedAgent]:
    return {name: ScriptedAgent(name).script(*replies) for name, replies in scripts.items()}


# What SmolLM2-135M gave back for the old prompt's angle-bracket slots, and what a small model
# copies of the new prompt's filled example.
OLD_ECHO = "SOLUTION:\n" + "<your complete answer to the requirement>\n\nSOLUTION:\n" * 20
REPEATED = "SOLUTION:\n" + "The answer is five.\n" * 10
EXAMPLE_COPY = (
    "SOLUTION:\n24\n\nREASONING:\n"
    "A spider has 8 legs, and 3 times 8 is 24; adding 8 three times gives 24 too.\n"
)


def test_an_echo_of_the_prompt_or_one_line_repeated_is_never_an_answer() -> None:
    ports = agents(
        x=[EXAMPLE_COPY, REPEATED],
        y=[generation("B"), keep()],
        z=[generation("C"), keep()],
    )
    result = run_debate("q", scripted_config(ports), rounds=1, agents=ports)
    turn = result.transcript[0].agents["x"]
    assert turn.status == "failed" and turn.error is not None and turn.attempts == 2
    assert turn.error.detail == "the solution repeats one line 10 times ('The answer is five.')"
    # The retry told the model what was wrong with the first reply.
    assert (
        "the reply repeats the prompt's own text (1 of its 1 lines)" in ports["x"].calls[1].prompt
    )
    assert len(result.scores) == 2
    ports = agents(x=[OLD_ECHO, OLD_ECHO], y=[generation("B"), keep()])
    result = run_debate("q", scripted_config(ports), rounds=0, agents=ports)
    error = result.transcript[0].agents["x"].error
    assert error is not None
    # The old template's slot and its marker, over and over: a repetition, whatever it says.
    assert error.detail == (
        "the solution repeats one line 20 times ('<your complete answer to the requirement>')"
    )


def free_form_config(ports: dict[str, ScriptedAgent], **agent: object) -> object:
    return make_config(
        [
            {"id": name, "cli_command": "scripted", "free_form_replies": True, **agent}
            for name in ports
        ]
    )


def test_a_free_form_agent_without_markers_is_read_and_said_to_be() -> None:
    code = "```python\ndef fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n```"
    ports = agents(
        x=[f"Here you go:\n{code}\n", "I still think so.\nMy answer stands."],
        y=[generation("B"), keep()],
    )
    result = run_debate("q", free_form_config(ports), rounds=1, agents=ports)
    first, second = (result.transcript[r].agents["x"] for r in (0, 1))
    assert first.status == "ok" and first.response is not None
    assert first.response.solution == f"Here you go:\n{code}"
    assert first.response.recovered == "no SOLUTION: line; the whole reply is the solution"
    assert second.response is not None and second.response.decision == "revise"
    assert second.response.recovered == "no DECISION: line; the whole reply revises to its answer"
    # Not free-form: the same reply is unparseable, as the contract says.
    ports = agents(x=["Here you go, no markers", "still none"], y=[generation("B"), keep()])
    strict = run_debate("q", scripted_config(ports), rounds=1, agents=ports)
    assert strict.transcript[0].agents["x"].status == "failed"


def test_a_free_form_critique_that_repeats_its_answer_keeps_it() -> None:
    ports = agents(
        x=["SOLUTION:\nfour\n\nREASONING:\ncounted", "  four  \n"], y=[generation("B"), keep()]
    )
    result = run_debate("q", free_form_config(ports), rounds=1, agents=ports)
    turn = result.transcript[1].agents["x"]
    assert turn.action == "keep" and turn.response is not None
    assert turn.response.recovered == "no DECISION: line; the whole reply is its answer"


def test_a_prompt_past_the_context_is_cut_and_sent_once_more() -> None:
    refused = CallResult(
        CallStatus.CONTEXT_EXCEEDED,
        detail="exit status 1: Error: Requested tokens (1350) exceed context window of 512",
    )
    long = "x" * 3000
    ports = agents(
        a=[generation(long), refused, keep()],
        b=[generation("B" * 3000), keep()],
    )
    result = run_debate("q", scripted_config(ports), rounds=1, agents=ports)
    turn = result.transcript[1].agents["a"]
    assert turn.status == "ok" and turn.attempts == 2 and turn.truncated_prompt
    first, again = ports["a"].calls[1].prompt, ports["a"].calls[2].prompt
    assert estimate_tokens(again) < estimate_tokens(first) and "cut by FREE-MAD" in again
    # Refused twice, it fails with the cause named; it is never retried a third time.
    ports = agents(a=[generation(long), refused, refused], b=[generation("B"), keep()])
    result = run_debate("q", scripted_config(ports), rounds=1, agents=ports)
    turn = result.transcript[1].agents["a"]
    assert turn.error is not None and turn.error.cause == "context_exceeded"
    assert len(ports["a"].calls) == 3


def test_a_known_small_window_gets_the_compact_prompt_within_it() -> None:
    ports = agents(a=[generation("A" * 4000), keep()], b=[generation("B" * 4000), keep()])
    config = make_config(
        [{"id": n, "cli_command": "scripted", "context_window": 512} for n in ports]
    )
    result = run_debate("q", config, rounds=1, agents=ports)
    prompt = ports["a"].calls[1].prompt
    book = PromptBook("anti_conformity")
    assert estimate_tokens(prompt) <= (book.window_cap(512) or 0)
    assert prompt.startswith("Critique round 1 of a debate") and "DECISION:" in prompt
    assert result.transcript[1].agents["a"].truncated_prompt
    # The retry's note fits in what the cap leaves.
    assert estimate_tokens(book.clarify(prompt, "x" * 120)) <= 512 * 3 // 4


def test_the_cap_after_a_refusal_follows_what_the_model_counted() -> None:
    book = PromptBook("anti_conformity")
    sent = "x" * 4000  # estimated 1000 tokens
    said = "Error: Requested tokens (2000) exceed context window of 512"
    window = book.window_cap(512) or 0
    assert tighter_cap(book, said, sent) == window * 1000 // 2000  # it counted twice as many
    assert tighter_cap(book, "maximum context length is 512 tokens", sent) == window
    assert tighter_cap(book, "prompt is too long", sent) == 500
    assert tighter_cap(book, "context window of 100000", sent) == 999  # always shorter


def test_the_retry_after_an_unparseable_reply_stays_within_the_budget() -> None:
    # A 512-token model under budget.max_tokens_per_agent_per_round: 300: the first critique
    # prompt fitted and the retry, with its note, passed both (issue 42: 525 > 512).
    long_problem = "not markers " * 50  # the problem the note names is bounded too
    ports = agents(
        a=[generation("A" * 4000), long_problem, long_problem],
        b=[generation("B" * 4000), keep()],
    )
    config = make_config(
        [{"id": n, "cli_command": "scripted", "context_window": 512} for n in ports],
        budget={"max_tokens_per_agent_per_round": 300},
    )
    result = run_debate("q", config, rounds=1, agents=ports)
    turn = result.transcript[1].agents["a"]
    assert turn.attempts == 2 and turn.error is not None and turn.error.cause == "unparseable"
    first, retry = ports["a"].calls[1].prompt, ports["a"].calls[2].prompt
    assert "could not be parsed" in retry and first in retry
    assert [estimate_tokens(p) <= 300 for p in (first, retry)] == [True, True]
    # Without a window of its own, the budget alone bounds both calls the same way.
    ports = agents(a=[generation("A" * 4000), "no", "no"], b=[generation("B" * 4000), keep()])
    config = scripted_config(ports, budget={"max_tokens_per_agent_per_round": 300})
    run_debate("q", config, rounds=1, agents=ports)
    assert max(estimate_tokens(call.prompt) for call in ports["a"].calls[1:]) <= 300


def test_degenerate_replies_never_win_even_without_critique_rounds() -> None:
    # Seen with SmolLM2 and --rounds 0: ~50 bare `SOLUTION:` lines won with score 40.
    markers = "SOLUTION:\n" * 50
    blank = "SOLUTION:\n   \n\t\n\nREASONING:\n \n"
    for reply in (markers, blank):
        ports = agents(x=[reply, reply], y=[generation("B")])
        result = run_debate("q", scripted_config(ports), rounds=0, agents=ports)
        turn = result.transcript[0].agents["x"]
        assert turn.status == "failed" and turn.error is not None
        assert turn.error.cause == "unparseable" and turn.attempts == 2
        assert list(result.scores) == [result.final_answer_id]  # y's answer alone is scored
        assert result.winning_agents == ["y"]
        assert turn.replies == [reply, reply]  # what it said is kept all the same


def test_a_critique_round_nobody_answers_stops_early_with_the_winner_so_far() -> None:
    # SmolLM2 critiques "The other two agents are correct." 28 times, each agent, twice:
    # round 0's answers stand (each agent kept its own), and no third round is spent on it.
    echo = "SOLUTION:\n" + "The other two agents are correct.\n" * 28
    ports = agents(
        a=[generation("fib = 1"), echo, echo],
        b=[generation("fib = 1"), echo, echo],
        c=[generation("fib = 2"), echo, echo],
    )
    result = run_debate("q", scripted_config(ports), rounds=2, agents=ports)
    assert result.status == "completed" and result.error is None
    assert result.early_stop_reason == "quorum"
    assert result.early_stop_note == (
        "only 0 of 3 agents answered in round 1; deadlines.min_agents is 1: the winner is "
        "chosen over the 2 round(s) so far"
    )
    assert [r.round for r in result.transcript] == [0, 1]
    assert {t.action for t in result.transcript[1].agents.values()} == {"carried_forward"}
    assert result.winning_agents == ["a", "b"]  # two held it from round 0 on
    assert all(len(port.calls) == 3 for port in ports.values())  # no round 2
    # Round 0 without a quorum is still a failed debate: there is nothing to choose from.
    ports = agents(a=[echo, echo], b=[echo, echo])
    failed = run_debate("q", scripted_config(ports), rounds=1, agents=ports)
    assert failed.status == "failed" and failed.final_answer_id is None
    assert failed.error == "only 0 of 2 agents answered in round 0; deadlines.min_agents is 1"


def test_a_reply_that_runs_on_into_the_prompt_is_cut_where_the_echo_begins() -> None:
    # SmolLM2 answered, then went on writing the prompt's own lines as a document would.
    ran_on = (
        "SOLUTION:\n2\n\nREASONING:\nTwo cats have 2 legs, and 2 times 2 is 4.\n\n"
        "That was only an example. The requirement to answer now:\n\n<requirement>\n"
        "How many legs do two dogs have together?\n</requirement>\n"
    )
    ports = agents(x=[ran_on], y=[generation("B")])
    result = run_debate("q", scripted_config(ports), rounds=0, agents=ports)
    turn = result.transcript[0].agents["x"]
    assert turn.status == "ok" and turn.response is not None and turn.attempts == 1
    assert turn.response.solution == "2"
    assert turn.response.reasoning == "Two cats have 2 legs, and 2 times 2 is 4."
    assert turn.response.recovered == (
        "the reply ran on into the prompt's own text; cut where that began"
    )
    assert turn.replies == [ran_on]  # what it said is kept whole
    # An echo from the first line on is no answer: nothing came before it to keep.
    book = PromptBook("anti_conformity")
    echo = book.generate("q").split("<requirement>")[0]
    ports = agents(x=[echo, echo], y=[generation("B")])
    turn = run_debate("q", scripted_config(ports), rounds=0, agents=ports).transcript[0].agents["x"]
    assert turn.status == "failed" and turn.error is not None
    assert turn.error.detail.startswith("the reply repeats the prompt's own text")
