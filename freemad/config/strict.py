"""The base of every config model: strict (unknown keys are errors) and self-documenting."""

from __future__ import annotations

import shlex
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

Loc = tuple[str | int, ...]


class StrictModel(BaseModel):
    """Unknown keys are errors: a typo must never be silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


class LocatedValueError(ValueError):
    """A cross-field problem that names the key at fault, relative to the model that raised it."""

    def __init__(self, loc: Loc, message: str) -> None:
        super().__init__(message)
        self.loc = loc


NonNegative = Annotated[float, Field(ge=0)]
Positive = Annotated[float, Field(gt=0)]
PositiveInt = Annotated[int, Field(gt=0)]


def doc(text: str, default: Any, **kwargs: Any) -> Any:
    """A field with its one-line description (the JSON Schema's and configs/ALL_KEYS.yaml's).
    A callable default (list, dict, a model class) is a factory, called once per instance."""
    if callable(default):
        return Field(default_factory=default, description=text, **kwargs)
    return Field(default, description=text, **kwargs)


def split_command(value: str) -> list[str]:
    """A command line as argv words (shlex, never a shell); a line that gives none is an error."""
    try:
        words = shlex.split(value)
    except ValueError as exc:
        raise ValueError(f"cannot split into words: {exc}") from None
    if not words:
        raise ValueError("is empty")
    return words
