"""The checks of a precision and an equivalence margin as they are given (one clause naming the rule)."""

from __future__ import annotations

import math

from llama4spec.errors import UserError


def _number(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def precision_problem(value, where: str = "precision") -> str | None:
    if not _number(value) or not 0 < value < 1:
        return (f"{where}: {value!r} is no relative half-width; give a number between 0 and 1 "
                "(0.05: the ratio within +-5%)")
    return None


def margin_problem(value, where: str = "margin") -> str | None:
    if not _number(value) or not 0 <= value < 1:
        return (f"{where}: {value!r} is no equivalence margin; give a fraction from 0 to below 1 (0.02: within "
                f"+-2%)")
    return None


def check_precision(value) -> None:
    if (problem := precision_problem(value)) is not None:
        raise UserError(problem)


def check_margin(value) -> None:
    if (problem := margin_problem(value)) is not None:
        raise UserError(problem)
