"""Checks of configuration dataclass fields (``GPTConfig``, ``TrainConfig``): each raises
:class:`attnlab.errors.ConfigError` naming the class, the field, what it must be and what it got."""

from __future__ import annotations

import math

from attnlab.errors import ConfigError


def _fail(cfg: object, name: str, must: str) -> None:
    raise ConfigError(f"{type(cfg).__name__}.{name} must be {must}, got {getattr(cfg, name)!r}")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def positive_ints(cfg: object, *names: str) -> None:
    """Each field is an int >= 1 (a bool is not an int here)."""
    for name in names:
        value = getattr(cfg, name)
        if not _is_int(value) or value < 1:
            _fail(cfg, name, "a positive integer")


def non_negative_ints(cfg: object, *names: str) -> None:
    """Each field is an int >= 0."""
    for name in names:
        value = getattr(cfg, name)
        if not _is_int(value) or value < 0:
            _fail(cfg, name, "an integer >= 0")


def optional_positive_ints(cfg: object, *names: str) -> None:
    """Each field is None or an int >= 1."""
    for name in names:
        if getattr(cfg, name) is not None:
            positive_ints(cfg, name)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def positive_floats(cfg: object, *names: str) -> None:
    """Each field is a finite number > 0."""
    for name in names:
        value = getattr(cfg, name)
        if (
            not isinstance(value, (int, float))
            or isinstance(value, bool)
            or not math.isfinite(value)
            or value <= 0
        ):
            _fail(cfg, name, "a finite number > 0")


def non_negative_floats(cfg: object, *names: str) -> None:
    """Each field is a finite number >= 0."""
    for name in names:
        value = getattr(cfg, name)
        if (
            not isinstance(value, (int, float))
            or isinstance(value, bool)
            or not math.isfinite(value)
            or value < 0
        ):
            _fail(cfg, name, "a finite number >= 0")


def bools(cfg: object, *names: str) -> None:
    """Each field is True or False."""
    for name in names:
        if not isinstance(getattr(cfg, name), bool):
            _fail(cfg, name, "True or False")


def one_of(cfg: object, name: str, allowed: tuple) -> None:
    """The field is one of ``allowed``."""
    if getattr(cfg, name) not in allowed:
        _fail(cfg, name, f"one of {list(allowed)}")
