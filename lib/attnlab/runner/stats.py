"""Mean-and-spread summaries: the one place where seeds become an estimate with an interval (Student's t for
means, Wilson's score interval for shares)."""

from __future__ import annotations

import math
import numbers
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy import stats as scipy_stats

LEVEL = 0.95  # every interval this project prints is two-sided 95% unless a rule says otherwise


def _check_probability(name: str, q: object, who: str) -> None:
    """A ValueError unless ``q`` is a number strictly between 0 and 1 (a quantile's level, an interval's
    coverage): outside it scipy answers NaN or an infinite bound, which an interval would carry silently."""
    if isinstance(q, bool) or not isinstance(q, numbers.Real) or not 0 < float(q) < 1:
        raise ValueError(f"{who}() needs {name} strictly between 0 and 1; got {q!r}")


@cache
def t_quantile(q: float, df: int) -> float:
    """The ``q`` quantile of Student's t with ``df`` degrees of freedom (``t_quantile(0.975, 4)`` = 2.776)."""
    _check_probability("q", q, "t_quantile")
    if df < 1:
        raise ValueError(f"t_quantile() needs df >= 1, got {df}")
    return float(scipy_stats.t.ppf(q, df))


@cache
def z_quantile(q: float) -> float:
    """The ``q`` quantile of the standard normal (``z_quantile(0.975)`` = 1.960)."""
    _check_probability("q", q, "z_quantile")
    return float(scipy_stats.norm.ppf(q))


def as_values(values: Iterable[object], who: str) -> list[float]:
    """``values`` as floats, one per unit: a ValueError naming ``who`` for a mapping (whose keys, the units'
    names, would be judged), a string (whose digits would be), or an entry that is not one number (a list, an
    array row, None, text)."""
    if isinstance(values, (str, bytes, Mapping)):
        kind = "a mapping: pass its .values()" if isinstance(values, Mapping) else "text"
        raise ValueError(f"{who}() needs one number per unit; got {kind} ({values!r:.80})")
    xs = []
    for i, v in enumerate(values):
        if isinstance(v, (str, bytes)) or v is None:
            raise ValueError(f"{who}() needs one number per unit; value {i} is {v!r}")
        try:
            xs.append(float(v))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise ValueError(
                f"{who}() needs one number per unit (a 1-D sequence); value {i} is {v!r:.80}"
            ) from None
    return xs


@dataclass(frozen=True)
class Estimate:
    """The mean of ``n`` values (one per seed, window or item) with its two-sided interval (Student's t).
    With one value the interval is undefined (NaN at both ends)."""

    mean: float
    low: float
    high: float
    n: int
    sd: float


def mean_interval(values: Iterable[float], level: float = LEVEL) -> Estimate:
    """Mean and two-sided ``level`` interval of ``values`` by Student's t (the seeds are few: a normal
    interval would be too narrow). Raises ValueError on no values or a non-finite one."""
    _check_probability("level", level, "mean_interval")
    xs = as_values(values, "mean_interval")
    if not xs:
        raise ValueError("mean_interval() needs at least one value")
    if not all(math.isfinite(x) for x in xs):
        raise ValueError(f"mean_interval() got a non-finite value: {xs}")
    mean = statistics.fmean(xs)
    if len(xs) < 2:
        return Estimate(mean, math.nan, math.nan, 1, math.nan)
    sd = statistics.stdev(xs)
    half = t_quantile(0.5 + level / 2, len(xs) - 1) * sd / math.sqrt(len(xs))
    return Estimate(mean, mean - half, mean + half, len(xs), sd)


def estimate(values: Sequence[float]) -> Estimate:
    """:func:`mean_interval` of ``values``; where one is not finite (a diverged run), their plain mean with no
    interval or spread, so that a claim is still judged and printed."""
    xs = as_values(values, "estimate")
    if all(math.isfinite(x) for x in xs):
        return mean_interval(xs)
    return Estimate(statistics.fmean(xs), math.nan, math.nan, len(xs), math.nan)


def binomial_interval(successes: int, n: int, level: float = LEVEL) -> Estimate:
    """A proportion ``successes / n`` with its two-sided ``level`` Wilson score interval (sound at 0 and 1 and
    for small n, unlike the normal interval; it never leaves [0, 1]). ``sd`` is the binomial standard error
    sqrt(p (1 - p) / n)."""
    _check_probability("level", level, "binomial_interval")
    if not all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in (successes, n)):
        raise ValueError(f"binomial_interval() counts whole units; got successes={successes!r}, n={n!r}")
    if n < 1 or not 0 <= successes <= n:
        raise ValueError(f"binomial_interval() needs 0 <= successes <= n and n >= 1; got {successes}, {n}")
    z = z_quantile(0.5 + level / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # exactly 0 and 1 at the ends: centre - half rounds to 4e-19 at no successes, "above" a chance of 0
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Estimate(p, low, high, n, math.sqrt(p * (1 - p) / n))
