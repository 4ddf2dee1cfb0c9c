"""The secret scan (`validation.secret_scan`): credential-looking strings found in every answer,
however they are hidden, in time linear in the answer's size; recorded by kind and place only,
redacted from the transcript, and a winner that had one flagged in the comment and on the page."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest

from freemad.dashboard.reading.sources import RunData
from freemad.dashboard.views.html_pages import render_run
from freemad.debate import run_debate
from freemad.debate.debate_record import DebateResult
from freemad.debate.transcript import render_markdown, transcript_data
from freemad.debate.validation import confidence_of, scan_secrets
from freemad.github.comments import render_debate
from freemad.redact import SECRET_SHAPES, Redactor, argv_for_log, find_secrets, redact_secrets
from tests.conftest import ScriptedAgent, generation, keep, scripted_config

try:  # Python 3.11 and later
    from re import _constants as sre_constants  # type: ignore[attr-defined]
    from re import _parser  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants  # type: ignore[no-redef]
    import sre_parse as _parser  # type: ignore[no-redef]

# Repetitions as the parser names them (possessive ones exist from Python 3.11 on).
REPEATS = tuple(
    getattr(sre_constants, name)
    for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
    if hasattr(sre_constants, name)
)
AWS = "AKIA" + "IOSFODNN7EXAMPLE"  # AWS's documented example key id, built so no scanner trips here
PARTS = (AWS[:9], AWS[9:])


def kinds(text: str) -> list[str]:
    return [secret.kind for secret in find_secrets(text)]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (f"aws_key_id = '{AWS}'", "aws_access_key_id"),
        ("token ghp_" + "a1B2" * 9, "github_token"),
        ("gho_" + "Zz09" * 9, "github_token"),
        ("github_pat_" + "11AB_" * 10, "github_token"),
        ("glpat-" + "x1y2z3" * 4, "gitlab_token"),
        ("xoxb-123456789012-abcdefghij", "slack_token"),
        ("sk-proj-" + "Ab1" * 12, "openai_key"),
        ("sk-ant-api03-" + "Q9w" * 12, "anthropic_key"),
        ("AIza" + "Sy" * 17 + "Q", "google_api_key"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", "private_key"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn", "private_key"),
        ('password = "Xk9fj2Lq8Zp3Rt7Y"', "assigned_secret"),
        ("api_key: q8Fz3LmP0vX7bN2cR5tY", "assigned_secret"),
    ],
)
def test_each_shape_is_found(text: str, kind: str) -> None:
    assert kinds(text) == [kind]
    assert kind in redact_secrets(text)
    assert "[REDACTED" in redact_secrets(text)


@pytest.mark.parametrize(
    "text",
    [
        "use sk-learn for this",
        "use sk-\nlearn for this, it is the risk-free choice",
        'password = os.environ["DB_PASSWORD"]',
        'password = "changeme-changeme"',  # no digits: a placeholder, not a key
        "token = get_token_from_the_vault()",
        "AKIA is how AWS key ids start",
        "The answer is 42.",
    ],
)
def test_what_only_resembles_a_secret_is_not_one(text: str) -> None:
    assert find_secrets(text) == []
    assert redact_secrets(text) == text


def test_a_key_in_a_code_fence_is_found_at_its_line_and_column() -> None:
    text = f"Here:\n```python\nKEY = '{AWS}'\n```\n"
    [secret] = find_secrets(text)
    assert (secret.kind, secret.line, secret.column) == ("aws_access_key_id", 3, 8)
    assert text[secret.start : secret.end] == AWS
    assert redact_secrets(text) == "Here:\n```python\nKEY = '[REDACTED aws_access_key_id]'\n```\n"


@pytest.mark.parametrize(
    "text",
    [
        f'KEY = ("{PARTS[0]}"\n       "{PARTS[1]}")',  # implicit concatenation
        f'KEY = "{PARTS[0]}" + \\\n    "{PARTS[1]}"',  # a continued line
        f"# {PARTS[0]}\n# {PARTS[1]}",  # a comment block
        f"> {PARTS[0]}\n> {PARTS[1]}",  # a quoted block
        f"{PARTS[0]}\r\n{PARTS[1]}",  # Windows line ends
    ],
)
def test_a_key_cut_over_lines_is_found_and_both_halves_redacted(text: str) -> None:
    assert kinds(text) == ["aws_access_key_id"]
    shown = redact_secrets(text)
    assert PARTS[0] not in shown and PARTS[1] not in shown
    assert "[REDACTED aws_access_key_id]" in shown


@pytest.mark.parametrize(
    "text",
    [
        "ＡＫＩＡ" + AWS[4:],  # full-width letters
        "\u0410K\u0406A" + AWS[4:],  # Cyrillic А and І
        AWS[:6] + "\u200b" + AWS[6:],  # a zero-width space inside
        AWS[:6] + "\u00ad\u2060" + AWS[6:],  # a soft hyphen and a word joiner
        "gh\u0440_" + "a1B2" * 9,  # Cyrillic р
    ],
)
def test_look_alike_and_invisible_characters_do_not_hide_a_key(text: str) -> None:
    [secret] = find_secrets(text)
    assert (secret.start, secret.end) == (0, len(text))
    assert redact_secrets(text).startswith("[REDACTED ")
    assert redact_secrets(text).endswith("]")


def test_the_text_around_a_disguised_key_keeps_its_places() -> None:
    text = f"é—ü: Ｘ {AWS[:6]}\u200b{AWS[6:]} ok"
    [secret] = find_secrets(text)
    assert text[secret.start : secret.end] == f"{AWS[:6]}\u200b{AWS[6:]}"
    assert redact_secrets(text) == "é—ü: Ｘ [REDACTED aws_access_key_id] ok"


def test_a_key_block_is_redacted_whole_even_without_its_end() -> None:
    body = "MIIEowIBAAKCAQEA\nq8Fz3LmP0vX7bN2c\n"
    text = f"x\n-----BEGIN EC PRIVATE KEY-----\n{body}-----END EC PRIVATE KEY-----\ny"
    assert redact_secrets(text) == "x\n[REDACTED private_key]\ny"
    cut = f"x\n-----BEGIN PRIVATE KEY-----\n{body}"
    assert redact_secrets(cut) == "x\n[REDACTED private_key]"


def _repeats(pattern: str) -> list[tuple[int, Any]]:
    """Every repetition's bounds in a regular expression, nested ones too."""
    found: list[tuple[int, Any]] = []

    def walk(items: Any) -> None:
        for op, arg in items:
            if op in REPEATS:
                found.append((arg[0], arg[1]))
                walk(arg[2])
            elif op == sre_constants.SUBPATTERN:
                walk(arg[-1])
            elif op == sre_constants.BRANCH:
                for branch in arg[1]:
                    walk(branch)
            elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
                walk(arg[1])

    walk(_parser.parse(pattern))
    return found


def test_every_pattern_is_bounded_so_no_answer_makes_it_backtrack() -> None:
    """Linear time by construction: each repetition has an upper bound (at most 255), so the
    work at each place in an answer is bounded whatever the answer is."""
    from freemad.redact import _ASSIGNMENT

    patterns = [pattern for _kind, pattern in SECRET_SHAPES] + [_ASSIGNMENT.pattern]
    for pattern in patterns:
        repeats = _repeats(pattern)
        assert all(high != sre_constants.MAXREPEAT and high <= 255 for _low, high in repeats), (
            pattern
        )


@pytest.mark.parametrize(
    "filler",
    [
        "a" * 1_000_000,  # one endless word
        " \t" * 500_000,  # endless blanks
        "token=" * 170_000,  # endless near-assignments
        "-----BEGIN RSA PRIVATE KEY-----" * 32_000,  # headers with no END line
        "x\n" * 500_000,  # endless short lines to join
        "\u200b" * 500_000,  # endless invisible characters
        "sk-" * 300_000,  # endless prefixes
    ],
)
def test_a_megabyte_answer_is_scanned_and_a_key_at_its_end_still_found(filler: str) -> None:
    text = filler + f"\nKEY = '{AWS}'\n"
    found = find_secrets(text)
    assert found[-1].kind == "aws_access_key_id" or found[-1].kind == "private_key"
    assert AWS not in redact_secrets(text, found)


def test_the_report_names_the_kind_and_place_never_the_key() -> None:
    # An answer built so that any preview (the name it is assigned to, the text around it, its
    # first characters) would show the key: the key is the name, and is also the value.
    text = f"{AWS} = '{AWS}'  # {AWS[:10]}\npassword_{AWS} = \"{AWS}q8Fz3LmP\""
    report = scan_secrets([("x", 0, text)])
    shown = json.dumps(report)
    assert report["passed"] is False
    assert {f["kind"] for f in report["found"]} == {"aws_access_key_id"}
    assert AWS not in shown and AWS[4:12] not in shown and AWS[-8:] not in shown
    assert all(set(f) == {"kind", "line", "column", "agent", "round"} for f in report["found"])
    assert AWS not in redact_secrets(text) and AWS[4:12] not in redact_secrets(text)


def test_a_text_merged_into_one_answer_reports_each_find_once() -> None:
    text = f"KEY = '{AWS}'"
    report = scan_secrets([("x", 0, text), ("y", 0, text + "  "), ("z", 1, "fine")])
    assert report["found"] == [
        {"kind": "aws_access_key_id", "line": 1, "column": 8, "agent": "x", "round": 0}
    ]
    assert scan_secrets([("x", 0, "fine")]) == {"passed": True, "found": []}


def test_a_find_lowers_the_answers_confidence() -> None:
    clean, flagged = {"passed": True, "found": []}, {"passed": False, "found": [{}]}
    assert confidence_of({"language": None, "security": clean}) == 1.0
    assert confidence_of({"language": None, "security": flagged}) == 0.0
    assert confidence_of({"language": "python", "syntax_ok": True, "security": flagged}) == 0.5
    sandboxed = {"language": "python", "syntax_ok": True, "sandbox": {"ok": True}}
    assert confidence_of({**sandboxed, "security": flagged}) == pytest.approx(2 / 3)
    assert confidence_of({"language": None}) is None


def test_a_logged_command_line_hides_the_same_shapes() -> None:
    logged = argv_for_log(["agent", "--note", "AIza" + "Sy" * 17 + "Q", f"k={AWS}"])
    assert "AIza" not in logged and AWS not in logged


def debate(winner_text: str, other: str = "Forty-two.", **validation: Any) -> DebateResult:
    ports = {
        "x": ScriptedAgent("x").script(generation(winner_text, f"I kept {AWS}"), keep()),
        "y": ScriptedAgent("y").script(generation(winner_text), keep(f"mine, not {AWS}")),
        "z": ScriptedAgent("z").script(generation(other), keep()),
    }
    config = scripted_config(ports, validation=validation)
    return run_debate("give the config", config, rounds=1, agents=ports)


WINNER = f"```python\nAWS_KEY = '{AWS}'\n```"


@pytest.fixture(scope="module")
def flagged() -> DebateResult:
    return debate(WINNER)


def test_a_winner_with_a_key_is_flagged_and_the_key_is_nowhere(flagged: DebateResult) -> None:
    winner = flagged.final_answer_id
    assert winner is not None and flagged.status == "completed"
    [flag] = flagged.flags
    assert (flag.kind, flag.answer_id, flag.kinds) == ("secret", winner, ["aws_access_key_id"])
    security = flagged.validation[winner]["security"]
    assert security["passed"] is False
    assert security["found"][0] | {"agent": "x"} == {
        "kind": "aws_access_key_id",
        "line": 2,
        "column": 12,
        "agent": "x",
        "round": 0,
    }
    # Python that parses, but a key in it: half the checks passed.
    assert flagged.validator_confidence == 0.5 == flagged.answer_confidence[winner]
    others = [a for a in flagged.answer_confidence if a != winner]
    assert [flagged.answer_confidence[a] for a in others] == [1.0]
    assert flagged.final_solution == "```python\nAWS_KEY = '[REDACTED aws_access_key_id]'\n```"
    transcript = json.dumps(transcript_data(flagged, Redactor([])))
    assert AWS not in transcript and AWS not in flagged.model_dump_json()
    assert "[REDACTED aws_access_key_id]" in transcript


def test_the_scan_never_changes_the_scores_or_the_winner(flagged: DebateResult) -> None:
    off = debate(WINNER, secret_scan=False)
    assert off.scores == flagged.scores
    assert off.final_answer_id == flagged.final_answer_id
    assert off.flags == [] and AWS in (off.final_solution or "")
    assert all("security" not in entry for entry in off.validation.values())
    assert off.validator_confidence == 1.0


def test_a_key_in_an_answer_that_lost_is_redacted_but_flags_nothing() -> None:
    result = debate("Forty-two.", other=f"use {AWS}")
    assert result.flags == []
    loser = next(a for a, e in result.validation.items() if not e["security"]["passed"])
    assert loser != result.final_answer_id
    assert AWS not in result.model_dump_json()


def test_the_comment_warns_and_never_shows_the_key(flagged: DebateResult) -> None:
    comment = render_debate(flagged, None)
    assert "> [!WARNING]" in comment
    assert comment.index("[!WARNING]") < comment.index("**Winner:**")
    assert "looks like a credential (aws_access_key_id); it is redacted here" in comment
    assert "AWS_KEY = '[REDACTED aws_access_key_id]'" in comment
    assert AWS not in comment and PARTS[1] not in comment
    assert "[!WARNING]" not in render_debate(debate("Forty-two.", other="Forty-three."), None)


def test_the_debate_page_warns_and_never_shows_the_key(flagged: DebateResult) -> None:
    data = transcript_data(flagged, Redactor([]))
    page = render_run(RunData("debate", flagged.run_id, transcript=data))
    text = html.unescape(page)
    warning = re.search(
        r'<p class="question secret-flag" role="alert"><strong>Warning:</strong> ([^<]*)</p>', page
    )
    assert warning is not None and "looks like a credential (aws_access_key_id)" in html.unescape(
        warning.group(1)
    )
    assert text.index("Warning:") < text.index("'[REDACTED aws_access_key_id]'")
    assert "possible secret: aws_access_key_id" in text
    assert AWS not in text and PARTS[1] not in text
    markdown = render_markdown(flagged.model_dump(mode="json"))
    assert "- **Warning:** the winning answer holds" in markdown and AWS not in markdown
    clean = transcript_data(debate("Forty-two.", other="Forty-three."), Redactor([]))
    assert "secret-flag" not in render_run(RunData("debate", "r", transcript=clean))


def test_a_transcript_from_before_the_scan_still_renders(flagged: DebateResult) -> None:
    data = transcript_data(flagged, Redactor([]))
    for field in ("flags", "answer_confidence", "tie_broken_by"):
        del data[field]
    for entry in data["validation"].values():
        entry.pop("security", None)
    before = DebateResult.model_validate(data)
    assert before.flags == [] and "[!WARNING]" not in render_debate(before, None)
    page = render_run(RunData("debate", flagged.run_id, transcript=data))
    assert "secret-flag" not in page and "<h2>Winner</h2>" in page
