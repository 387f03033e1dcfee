"""Checks of configuration dataclass fields (``GPTConfig``, ``TrainConfig``): each raises
:class:`attnlab.errors.ConfigError` naming the class, the field, what it must be and what it got."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeGuard

from attnlab.errors import ConfigError


def _fail(cfg: object, name: str, must: str) -> None:
    raise ConfigError(f"{type(cfg).__name__}.{name} must be {must}, got {getattr(cfg, name)!r}")


def _check(cfg: object, names: tuple[str, ...], ok: Callable[[object], bool], must: str) -> None:
    for name in names:
        if not ok(getattr(cfg, name)):
            _fail(cfg, name, must)


def is_int(value: object) -> TypeGuard[int]:
    """An int that is not a bool (a bool is not a count here)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> TypeGuard[float]:
    """A finite int or float that is not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def positive_ints(cfg: object, *names: str) -> None:
    """Each field is an int >= 1."""
    _check(cfg, names, lambda v: is_int(v) and v >= 1, "a positive integer")


def non_negative_ints(cfg: object, *names: str) -> None:
    """Each field is an int >= 0."""
    _check(cfg, names, lambda v: is_int(v) and v >= 0, "an integer >= 0")


def optional_positive_ints(cfg: object, *names: str) -> None:
    """Each field is None or an int >= 1."""
    _check(cfg, names, lambda v: v is None or (is_int(v) and v >= 1), "a positive integer")


def positive_floats(cfg: object, *names: str) -> None:
    """Each field is a finite number > 0."""
    _check(cfg, names, lambda v: is_number(v) and v > 0, "a finite number > 0")


def non_negative_floats(cfg: object, *names: str) -> None:
    """Each field is a finite number >= 0."""
    _check(cfg, names, lambda v: is_number(v) and v >= 0, "a finite number >= 0")


def bools(cfg: object, *names: str) -> None:
    """Each field is True or False."""
    _check(cfg, names, lambda v: isinstance(v, bool), "True or False")


def one_of(cfg: object, name: str, allowed: tuple) -> None:
    """The field is one of ``allowed``."""
    if getattr(cfg, name) not in allowed:
        _fail(cfg, name, f"one of {list(allowed)}")
