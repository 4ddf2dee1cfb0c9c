"""The verb table: every `/freemad` verb has one entry, with the permission the rules demand, and
the behaviours stay apart from the router."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import pytest

import freemad.github.behaviours
from freemad.core.commands import VERBS, Command
from freemad.core.permissions import Actor, Permission, may_act
from freemad.github.verbs import VERBS as TABLE
from freemad.github.verbs import verb_of

# From the least permission up.
RANKED: tuple[Permission, ...] = tuple(reversed(get_args(Permission)))
BEHAVIOURS = Path(freemad.github.behaviours.__file__).parent


def test_every_verb_of_the_grammar_has_an_entry_and_nothing_else_does() -> None:
    assert {key.split()[0] for key in TABLE} == set(VERBS)


@pytest.mark.parametrize("key", list(TABLE))
def test_each_entry_needs_the_permission_the_rules_demand(key: str) -> None:
    verb = key.split(maxsplit=1)[0]
    least = next(p for p in RANKED if may_act(Actor("alice", "User"), p, verb).allowed)
    assert TABLE[key].needs == least


def test_approve_publish_has_an_entry_of_its_own() -> None:
    assert verb_of(Command("approve", stage="publish")) is TABLE["approve publish"]
    assert verb_of(Command("approve", stage="plan_review")) is TABLE["approve"]
    assert verb_of(Command("approve")) is TABLE["approve"]
    assert verb_of(Command("stop")) is TABLE["stop"]


def test_only_commands_that_touch_a_run_mark_the_comment() -> None:
    assert [key for key, verb in TABLE.items() if not verb.marks_comment] == ["help"]


@pytest.mark.parametrize("module", sorted(BEHAVIOURS.glob("*.py")), ids=lambda p: p.name)
def test_a_behaviour_never_imports_the_router_or_the_table(module: Path) -> None:
    tree = ast.parse(module.read_text(encoding="utf-8"))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not imported & {"freemad.github.router", "freemad.github.verbs"}
