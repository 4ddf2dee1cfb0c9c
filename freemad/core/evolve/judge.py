"""The evolve judge: predicates, judge-stage parsing, measurements and the admission rule. No I/O.

A candidate is measured by running the judge's stages (the runtime does that); each stage's
exit status and stdout become a `StageOutcome`, the outcomes a `Measurement`, and `judge`
decides from the measurement alone whether the candidate becomes the new incumbent. Every
doubt fails closed: a stage that times out, exits non-zero or prints anything but the one JSON
object it must print fails, and a failed stage rejects the candidate by itself.
"""

from __future__ import annotations

import json
import math
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Direction = Literal["maximize", "minimize"]
ParseMode = Literal["exit_code", "json_stdout"]

# Component names are identifiers, so a predicate's text can never be ambiguous.
COMPONENT_PATTERN = r"[A-Za-z_][A-Za-z0-9_]*"
_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_PREDICATE = re.compile(rf"\s*({COMPONENT_PATTERN})\s*(==|!=|<=|>=|<|>)\s*({_NUMBER})\s*")
_OPERATORS: dict[str, Callable[[float, float], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


class StageSpec(Protocol):
    """What parsing needs of a judge stage (freemad.config.evolve_section.StageConfig fits)."""

    @property
    def name(self) -> str: ...
    @property
    def parse(self) -> ParseMode: ...
    @property
    def provides(self) -> Sequence[str]: ...
    @property
    def timeout_sec(self) -> float: ...


class ComparatorSpec(Protocol):
    """One comparator entry (freemad.config.evolve_section.ComparatorEntry fits)."""

    @property
    def component(self) -> str: ...
    @property
    def direction(self) -> Direction: ...
    @property
    def epsilon(self) -> float: ...
    @property
    def max_regress(self) -> float | None: ...


class JudgeSpec(Protocol):
    """What admission needs of the judge (freemad.config.evolve_section.JudgeConfig fits)."""

    @property
    def gate(self) -> Sequence[str]: ...
    @property
    def comparator(self) -> Sequence[ComparatorSpec]: ...


@dataclass(frozen=True, slots=True)
class Predicate:
    """`COMPONENT OP NUMBER`, as used by the gate and the stop targets."""

    component: str
    op: str
    value: float

    def holds(self, components: Mapping[str, float]) -> bool:
        """False when the component was not measured: an unmeasured value proves nothing."""
        if self.component not in components:
            return False
        return _OPERATORS[self.op](components[self.component], self.value)

    def __str__(self) -> str:
        return f"{self.component} {self.op} {_num(self.value)}"


def parse_predicate(text: str) -> Predicate:
    """Parse `COMPONENT OP NUMBER` (OP one of == != < <= > >=); ValueError says what is wrong."""
    match = _PREDICATE.fullmatch(text)
    if match is None:
        raise ValueError(
            f"{text!r} is not a predicate; expected COMPONENT OP NUMBER with OP one of "
            "== != < <= > >=, e.g. 'runtime_ms < 500'"
        )
    value = float(match.group(3))
    if not math.isfinite(value):
        raise ValueError(f"{text!r}: {match.group(3)} is not a finite number")
    return Predicate(match.group(1), match.group(2), value)


@dataclass(frozen=True, slots=True)
class StageOutcome:
    """One judge stage's result; `reason` says why it failed ("" when ok)."""

    name: str
    ok: bool
    components: dict[str, float] = field(default_factory=dict)
    reason: str = ""


def parse_stage(
    stage: StageSpec, exit_code: int | None, stdout: str, timed_out: bool
) -> StageOutcome:
    """Turn a finished stage process into an outcome. `exit_code` is None when the process
    was killed (by a signal or the deadline) and never reported a status."""

    def failed(reason: str) -> StageOutcome:
        return StageOutcome(stage.name, False, {}, reason)

    if timed_out:
        return failed(f"timed out after {_num(stage.timeout_sec)} s")
    if exit_code is None:
        return failed("ended without an exit status (killed by a signal?)")
    if exit_code != 0:
        return failed(f"exited with status {exit_code}")
    if stage.parse == "exit_code":
        return StageOutcome(stage.name, True, {stage.provides[0]: 1.0})
    try:
        components = _components_from_stdout(stdout, stage.provides)
    except ValueError as exc:
        return failed(str(exc))
    return StageOutcome(stage.name, True, components)


_EXPECTED = 'one JSON object {"components": {...}}'


def _components_from_stdout(stdout: str, provides: Sequence[str]) -> dict[str, float]:
    text = stdout.strip()
    if not text:
        raise ValueError(f"printed nothing on stdout; expected {_EXPECTED}")
    decoder = json.JSONDecoder(object_pairs_hook=_no_duplicate_keys)
    try:
        data, end = decoder.raw_decode(text)
    except _DuplicateKeyError as exc:
        raise ValueError(f"the JSON repeats the key {exc.args[0]!r}") from None
    except json.JSONDecodeError:
        raise ValueError(
            f"stdout is not JSON (it starts with {_excerpt(text)}); expected {_EXPECTED} "
            "and nothing else"
        ) from None
    rest = text[end:].strip()
    if rest:
        what = "a second JSON value" if rest[0] in "{[" else f"text ({_excerpt(rest)})"
        raise ValueError(f"printed {what} after the JSON object; expected {_EXPECTED} only")
    if not isinstance(data, dict):
        raise ValueError(f"printed a JSON {_json_kind(data)}; expected {_EXPECTED}")
    if set(data) != {"components"}:
        keys = ", ".join(sorted(map(repr, data))) or "none"
        raise ValueError(f"the object's keys must be exactly 'components', got {keys}")
    found = data["components"]
    if not isinstance(found, dict):
        raise ValueError(f"components is a JSON {_json_kind(found)}, not an object")
    missing = [name for name in provides if name not in found]
    if missing:
        raise ValueError(f"missing component(s) {', '.join(missing)}")
    extra = sorted(set(found) - set(provides))
    if extra:
        raise ValueError(
            f"undeclared component(s) {', '.join(extra)}; the stage provides {', '.join(provides)}"
        )
    return {name: _finite(name, found[name]) for name in provides}


class _DuplicateKeyError(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _DuplicateKeyError(key)
        seen[key] = value
    return seen


def _finite(name: str, value: Any) -> float:
    # bool is an int to Python, but `true` is not a measurement.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"component {name} is {_excerpt(json.dumps(value))}, not a number")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise ValueError(f"component {name} is {value!r}, not a finite number")
    return number


def _json_kind(value: Any) -> str:
    kinds = {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else kinds.get(type(value), "value")


def _excerpt(text: str, limit: int = 30) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


# The failed "stage" of a candidate whose worker failed before it changed anything: its tooling
# (the CLI could not start, crashed, is not logged in or ran out of time), or its reply (one
# that could not be used). A config's stage cannot be named so (freemad.config.evolve_section).
WORKER_STAGE = "<worker>"
REPLY_STAGE = "<worker reply>"
WORKER_STAGES = (WORKER_STAGE, REPLY_STAGE)


@dataclass(frozen=True, slots=True)
class Measurement:
    """A candidate as the judge saw it: every stage's components, or the first failure."""

    ok: bool
    components: dict[str, float] = field(default_factory=dict)
    failed_stage: str | None = None
    reason: str = ""


def measure(outcomes: Iterable[StageOutcome]) -> Measurement:
    """Fold stage outcomes in order; the first failed stage fails the whole candidate (the
    components measured before it are kept, for the report). No outcome at all is a failure."""
    components: dict[str, float] = {}
    ran = False
    for outcome in outcomes:
        ran = True
        if not outcome.ok:
            return Measurement(False, components, outcome.name, outcome.reason)
        components.update(outcome.components)
    if not ran:
        return Measurement(False, {}, None, "no judge stage ran")
    return Measurement(True, components)


# Applied in order: a path may hold hex ids and numbers, a hex id may hold digits. Numbers and
# hex ids share one placeholder, since a short git id can be all digits. A run of seven or more
# hex letters counts as an id too (git can print `fffaced`); few words are made of a-f alone.
_HEX = r"[0-9a-fA-F]"
_VOLATILE = (
    (re.compile(r"[^\s'\"(),;\[\]{}]*[/\\][^\s'\"(),;\[\]{}]*"), "<path>"),
    (re.compile(rf"\b{_HEX}{{8}}(?:-{_HEX}{{4}}){{3}}-{_HEX}{{12}}\b"), "#"),
    (re.compile(rf"\b0[xX]{_HEX}+\b"), "#"),
    (
        re.compile(rf"(?<![\w.])(?=\w*[a-fA-F]){_HEX}{{7,}}(?![\w.]|[+-]\d)"),
        "#",
    ),
    (re.compile(r"(?<![A-Za-z0-9_.])[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"), "#"),
)
_SIGNATURE_LIMIT = 200


def failure_signature(measurement: Measurement) -> str:
    """A short string equal for "the same failure": the failed stage and its reason with numbers,
    hex ids and paths blanked out. "" when the measurement succeeded."""
    if measurement.ok:
        return ""
    reason = measurement.reason
    for pattern, placeholder in _VOLATILE:
        reason = pattern.sub(placeholder, reason)
    reason = " ".join(reason.split())
    return f"{measurement.failed_stage or '-'}: {reason}"[:_SIGNATURE_LIMIT]


@dataclass(frozen=True, slots=True)
class Verdict:
    admitted: bool
    reason: str


def judge(
    candidate: Measurement,
    incumbent: Measurement | None,
    best_ever: Mapping[str, float],
    config: JudgeSpec,
) -> Verdict:
    """Admit iff every stage succeeded, the gate holds, the comparator finds the candidate
    strictly better than the incumbent beyond epsilon, and no component with `max_regress`
    is worse than the best ever by more than that. The baseline (no incumbent) needs only the
    first two."""
    if not candidate.ok:
        stage = candidate.failed_stage
        where = "the judge" if not stage else f"stage {stage}"
        where = "the worker" if stage in WORKER_STAGES else where
        return Verdict(False, f"{where} failed: {candidate.reason}")
    for text in config.gate:
        gate = parse_predicate(text)
        if not gate.holds(candidate.components):
            return Verdict(False, f"gate {gate} does not hold: {_value(gate, candidate)}")
    if incumbent is None:
        return Verdict(True, "baseline: every stage succeeded and the gate holds")
    if not incumbent.ok:
        raise ValueError("the incumbent must be a successful measurement")
    better = _compare(candidate.components, incumbent.components, config.comparator)
    if not better.admitted:
        return better
    regress = _regression(candidate.components, best_ever, config.comparator)
    return regress or better


def _compare(
    candidate: Mapping[str, float],
    incumbent: Mapping[str, float],
    comparator: Sequence[ComparatorSpec],
) -> Verdict:
    """Lexicographic: the first component outside epsilon decides."""
    ties: list[str] = []
    for entry in comparator:
        name, eps = entry.component, entry.epsilon
        if name not in candidate or name not in incumbent:
            return Verdict(False, f"{name} was not measured on both candidate and incumbent")
        new, old = candidate[name], incumbent[name]
        gain = new - old if entry.direction == "maximize" else old - new
        pair = f"{name} {_num(new)}"
        if gain > eps:
            return Verdict(True, f"{pair} is better than {_num(old)} beyond epsilon {_num(eps)}")
        if gain < -eps:
            return Verdict(False, f"{pair} is worse than {_num(old)} beyond epsilon {_num(eps)}")
        ties.append(f"{pair} is not better than {_num(old)} beyond epsilon {_num(eps)}")
    return Verdict(False, "no improvement: " + "; ".join(ties))


def _regression(
    candidate: Mapping[str, float],
    best: Mapping[str, float],
    comparator: Sequence[ComparatorSpec],
) -> Verdict | None:
    for entry in comparator:
        name, limit = entry.component, entry.max_regress
        if limit is None or name not in best:
            continue
        if name not in candidate:
            return Verdict(False, f"{name} was not measured, so its regression is unknown")
        new, top = candidate[name], best[name]
        loss = top - new if entry.direction == "maximize" else new - top
        if loss > limit:
            return Verdict(
                False,
                f"{name} {_num(new)} regresses by {_num(loss)} from the best ever "
                f"{_num(top)}, more than max_regress {_num(limit)}",
            )
    return None


def best_ever(
    history: Iterable[Measurement], comparator: Sequence[ComparatorSpec]
) -> dict[str, float]:
    """The best value each comparator component has reached, each on its own, over `history`
    (the admitted measurements; failed ones are skipped)."""
    best: dict[str, float] = {}
    for measurement in history:
        if not measurement.ok:
            continue
        for entry in comparator:
            value = measurement.components.get(entry.component)
            if value is None:
                continue
            pick = max if entry.direction == "maximize" else min
            old = best.get(entry.component)
            best[entry.component] = value if old is None else pick(old, value)
    return best


def _value(predicate: Predicate, measurement: Measurement) -> str:
    value = measurement.components.get(predicate.component)
    if value is None:
        return f"{predicate.component} was not measured"
    return f"{predicate.component} is {_num(value)}"


def _num(value: float) -> str:
    """A float as people read it in a reason: 412.0, 0.25, 1e-06."""
    return repr(float(value))
