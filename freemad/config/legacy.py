"""The reference implementation's config spellings, read as ours: each one leaves a note for a
one-line deprecation warning. Pure: a dict in, a dict and notes out.

Every spelling here is one the reference implementation's own example configs use. A key that
means nothing to FREE-MAD is dropped with a note saying why; it is never dropped silently.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

from freemad.config.strict import Loc

_NO_KEYS = (
    "ignored: FREE-MAD never reads or passes API keys (each agent CLI logs in by itself, "
    "and an agent's environment reaches its process)"
)
_NOT_COMPONENT = re.compile(r"[^A-Za-z0-9_]")


@dataclass(frozen=True, slots=True)
class LegacyNote:
    """An old spelling at `loc` (in the file as written), and how it was read."""

    loc: Loc
    message: str
    read_as: Loc | None = None  # where the value now lives, for error messages about it


def upgrade(data: dict[str, Any]) -> tuple[dict[str, Any], list[LegacyNote]]:
    """`data` with every reference spelling rewritten to ours, and a note for each one."""
    data = copy.deepcopy(data)
    notes: list[LegacyNote] = []
    _rename(data, ("topology",), "hub_agent", "hub", notes)
    security = _section(data, ("security",))
    for key in ("api_key_source", "api_key_name"):
        if security is not None and key in security:
            security.pop(key)
            notes.append(LegacyNote(("security", key), _NO_KEYS))
    _null_concurrency(data, notes)
    cache = _section(data, ("cache",))
    if cache is not None and "max_entries" in cache and cache["max_entries"] is None:
        cache.pop("max_entries")
        notes.append(
            LegacyNote(
                ("cache", "max_entries"),
                "null (no limit) is not supported: the default, 1000 entries, applies; "
                "write a number",
            )
        )
    _upgrade_evolve(data, notes)
    return data, notes


def _section(data: dict[str, Any], loc: Loc) -> dict[str, Any] | None:
    current: Any = data
    for part in loc:
        if not isinstance(current, dict):
            return None
        current = current.get(part)
    return current if isinstance(current, dict) else None


def _dotted(loc: Loc) -> str:
    return ".".join(str(part) for part in loc)


def _rename(data: dict[str, Any], where: Loc, old: str, new: str, notes: list[LegacyNote]) -> None:
    section = _section(data, where)
    if section is None or old not in section:
        return
    value = section.pop(old)
    if new in section:
        notes.append(
            LegacyNote((*where, old), f"ignored: {_dotted((*where, new))} is given as well")
        )
        return
    section[new] = value
    notes.append(
        LegacyNote(
            (*where, old),
            f"deprecated (the reference implementation's name): read as {_dotted((*where, new))}",
            (*where, new),
        )
    )


def _null_concurrency(data: dict[str, Any], notes: list[LegacyNote]) -> None:
    budget = _section(data, ("budget",))
    if budget is None or "max_concurrent_agents" not in budget:
        return
    if budget["max_concurrent_agents"] is not None:
        return
    agents = data.get("agents")
    count = len(agents) if isinstance(agents, list) else 0
    if count:
        budget["max_concurrent_agents"] = count
        read = f"read as {count}, one process per agent"
    else:
        budget.pop("max_concurrent_agents")
        read = "the default applies"
    notes.append(
        LegacyNote(
            ("budget", "max_concurrent_agents"),
            f"null (no limit) is deprecated: {read}; write a number",
        )
    )


def _upgrade_evolve(data: dict[str, Any], notes: list[LegacyNote]) -> None:
    if _section(data, ("evolve",)) is None:
        return
    _rename(data, ("evolve", "variation"), "kind", "mode", notes)
    variation = _section(data, ("evolve", "variation"))
    if variation is not None and variation.get("debate_agent_ids") == []:
        # The reference's empty list meant every agent; ours says that with null.
        variation["debate_agent_ids"] = None
        notes.append(
            LegacyNote(
                ("evolve", "variation", "debate_agent_ids"),
                "an empty list (every agent) is deprecated: read as null; leave it out",
            )
        )
    judge = _section(data, ("evolve", "judge"))
    stop = _section(data, ("evolve", "stop"))
    for where, section, key in (
        (("evolve", "judge"), judge, "gate"),
        (("evolve", "stop"), stop, "target"),
    ):
        items = section.get(key) if section is not None else None
        if isinstance(items, list):
            for index, item in enumerate(items):
                text = _predicate_text(item)
                if text is not None:
                    items[index] = text
                    notes.append(
                        LegacyNote(
                            (*where, key, index),
                            f"a predicate written as a mapping is deprecated: read as {text!r}; "
                            "write it as that string",
                        )
                    )
    stages = judge.get("stages") if judge is not None else None
    if isinstance(stages, list):
        for index, stage in enumerate(stages):
            _exit_code_provides(stage, index, notes)
    budget = _section(data, ("evolve", "worker_budget"))
    if budget is not None and "max_minutes" in budget:
        minutes = budget.pop("max_minutes")
        loc: Loc = ("evolve", "worker_budget", "max_minutes")
        if "timeout_sec" in budget:
            notes.append(LegacyNote(loc, "ignored: evolve.worker_budget.timeout_sec is given"))
        elif isinstance(minutes, (int, float)) and not isinstance(minutes, bool):
            budget["timeout_sec"] = minutes * 60
            notes.append(
                LegacyNote(
                    loc,
                    f"deprecated: read as evolve.worker_budget.timeout_sec: {_number(minutes * 60)}",
                    ("evolve", "worker_budget", "timeout_sec"),
                )
            )
        else:
            budget["timeout_sec"] = minutes  # its type error is then reported under our name
            notes.append(
                LegacyNote(loc, "deprecated: read as evolve.worker_budget.timeout_sec (seconds)")
            )


def _predicate_text(item: Any) -> str | None:
    """`{component: x, op: ">", value: 0}` as `"x > 0"`; None for anything else."""
    if not isinstance(item, dict) or set(item) != {"component", "op", "value"}:
        return None
    value = item["value"]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return f"{item['component']} {item['op']} {_number(value)}"


def _number(value: float) -> str:
    """Exactly the number given: 100000 stays 100000, 0.1 stays 0.1."""
    return str(value) if isinstance(value, int) else repr(float(value))


def _exit_code_provides(stage: Any, index: int, notes: list[LegacyNote]) -> None:
    """The reference's exit_code stages measure nothing: pass or fail. Ours measure one component
    (1.0 on exit 0); a stage without `provides` gets one named after it."""
    if not isinstance(stage, dict) or "provides" in stage:
        return
    name = stage.get("name")
    if stage.get("parse", "exit_code") != "exit_code" or not isinstance(name, str) or not name:
        return
    component = _NOT_COMPONENT.sub("_", name)
    if component[0].isdigit():
        component = f"_{component}"
    stage["provides"] = [component]
    notes.append(
        LegacyNote(
            ("evolve", "judge", "stages", index),
            f"an exit_code stage without provides is deprecated: read as provides: [{component}] "
            "(1 on exit 0; a failing stage still rejects the candidate)",
            ("evolve", "judge", "stages", index, "provides"),
        )
    )


__all__ = ["LegacyNote", "upgrade"]
