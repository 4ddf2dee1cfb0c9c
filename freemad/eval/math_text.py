"""Math answers as text, without sympy: the last `\\boxed{...}` of a solution, the normal form
two answers are first compared by (and majorities count), and the plain expression sympy is
later given. Pure functions.

The normal form: the boxed content (else the text after a last "answer is"/"Answer:", else the
last line), with `$`, `\\left`/`\\right`, spacing commands (`\\!`, `\\,`, `\\;`, `\\quad`), `\\text{}`
wrappers, a trailing full stop and every space removed, and `\\dfrac`/`\\tfrac` made `\\frac`.
"""

from __future__ import annotations

import re

_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")
_STATED = re.compile(r"(?i)(?:final answer|answer)\s*(?:is)?\s*[:=]?\s*(.+)$")
_SPACING = re.compile(r"\\(?:[!,;:]|quad|qquad)|\\(?:left|right)(?![A-Za-z])|\$")
_TEXT = re.compile(r"\\(?:text|textbf|mathrm|mbox)\s*\{([^{}]*)\}")
_DEGREES = re.compile(r"\^\s*\{?\\circ\}?")
MAX_CHARS = 400  # longer answers are compared as text only, never handed to sympy


def last_boxed(text: str) -> str | None:
    """The content of the last `\\boxed{...}` (or `\\fbox{...}`), braces balanced; None when there
    is none or it never closes."""
    found = None
    for match in _BOX.finditer(text):
        depth, start = 1, match.end()
        for index in range(start, len(text)):
            if text[index] == "{":
                depth += 1
            elif text[index] == "}":
                depth -= 1
                if depth == 0:
                    found = text[start:index]
                    break
    return found


def answer_of(text: str) -> str | None:
    """Where a math answer is in `text`: the last box, else a last stated answer, else the last
    non-blank line."""
    boxed = last_boxed(text)
    if boxed is not None:
        return boxed
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        stated = _STATED.search(line)
        if stated:
            return stated.group(1)
    return lines[-1] if lines else None


def math_normal(text: str) -> str | None:
    """The normal form of a math answer (the module says which); None when empty."""
    found = answer_of(text)
    if found is None:
        return None
    found = _TEXT.sub(r"\1", found)
    found = _DEGREES.sub("", found)
    found = _SPACING.sub("", found)
    found = found.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    found = "".join(found.split()).rstrip(".")
    return found or None


_COMMANDS = {
    "\\cdot": "*",
    "\\times": "*",
    "\\div": "/",
    "\\pi": "pi",
    "\\infty": "oo",
    "\\ln": "log",
    "\\log": "log",
    "\\sin": "sin",
    "\\cos": "cos",
    "\\tan": "tan",
    "\\%": "",
    "%": "",
}
_FRAC = re.compile(r"\\frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_FRAC_SHORT = re.compile(r"\\frac\s*(\d)\s*(\d)")
_ROOT = re.compile(r"\\sqrt\s*\[([^\]]*)\]\s*\{([^{}]*)\}")
_SQRT = re.compile(r"\\sqrt\s*\{([^{}]*)\}")
_SQRT_SHORT = re.compile(r"\\sqrt\s*(\d+|[A-Za-z])")
_LEFTOVER = re.compile(r"\\[A-Za-z]+")


def plain_expression(normal: str) -> str | None:
    """A math normal form as text sympy's `parse_expr` reads (`\\frac{a}{b}` to `(a)/(b)`, `^` to
    `**`, braces to parentheses); None when a command is left that it does not know."""
    if len(normal) > MAX_CHARS:
        return None
    text = normal
    for _ in range(8):  # nested fractions and roots, innermost first
        before = text
        text = _FRAC.sub(r"((\1)/(\2))", text)
        text = _ROOT.sub(r"((\2)**(1/(\1)))", text)
        text = _SQRT.sub(r"sqrt(\1)", text)
        if text == before:
            break
    text = _FRAC_SHORT.sub(r"((\1)/(\2))", text)
    text = _SQRT_SHORT.sub(r"sqrt(\1)", text)
    for command in sorted(_COMMANDS, key=len, reverse=True):
        text = text.replace(command, _COMMANDS[command])
    if _LEFTOVER.search(text):
        return None
    text = text.replace("{", "(").replace("}", ")").replace("^", "**")
    text = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", text)  # 1,000 is a thousand
    return text or None
