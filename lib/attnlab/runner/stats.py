"""Mean-and-spread summaries: the one place where seeds become an estimate with a 95% interval."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

# Two-sided 95% quantiles of Student's t by degrees of freedom (1-30 exact to 3 decimals, then 40, 60, 120).
_T95 = {
    1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
    11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093,
    20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048,
    29: 2.045, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980,
}  # fmt: skip


def t95(df: int) -> float:
    """The two-sided 95% quantile of Student's t with ``df`` degrees of freedom (linear in 1/df between the
    tabulated points, 1.96 in the limit)."""
    if df < 1:
        raise ValueError(f"t95() needs df >= 1, got {df}")
    if df in _T95:
        return _T95[df]
    known = sorted(_T95) + [math.inf]
    hi = next(k for k in known if k > df)
    lo = max(k for k in known if k < df)
    q_lo, q_hi = _T95[lo], _T95.get(hi, 1.959964)
    w = (1 / lo - 1 / df) / (1 / lo - (0 if hi == math.inf else 1 / hi))
    return q_lo + w * (q_hi - q_lo)


@dataclass(frozen=True)
class Estimate:
    """The mean of ``n`` values (one per seed, window or item) with its two-sided interval (Student's t).
    With one value the interval is undefined (NaN at both ends)."""

    mean: float
    low: float
    high: float
    n: int
    sd: float


def mean_interval(values: Sequence[float]) -> Estimate:
    """Mean and 95% interval of ``values`` by Student's t (the seeds are few: a normal interval would be too
    narrow). Raises ValueError on no values or a non-finite one."""
    xs = [float(v) for v in values]
    if not xs:
        raise ValueError("mean_interval() needs at least one value")
    if not all(math.isfinite(x) for x in xs):
        raise ValueError(f"mean_interval() got a non-finite value: {xs}")
    mean = statistics.fmean(xs)
    if len(xs) < 2:
        return Estimate(mean, math.nan, math.nan, 1, math.nan)
    sd = statistics.stdev(xs)
    half = t95(len(xs) - 1) * sd / math.sqrt(len(xs))
    return Estimate(mean, mean - half, mean + half, len(xs), sd)


def estimate(values: Sequence[float]) -> Estimate:
    """:func:`mean_interval` of ``values``; where one is not finite (a diverged run), their plain mean with no
    interval or spread, so that a claim is still judged and printed."""
    xs = [float(v) for v in values]
    if all(math.isfinite(x) for x in xs):
        return mean_interval(xs)
    return Estimate(statistics.fmean(xs), math.nan, math.nan, len(xs), math.nan)


def binomial_interval(successes: int, n: int) -> Estimate:
    """A proportion ``successes / n`` with its 95% Wilson score interval (sound at 0 and 1 and for small n,
    unlike the normal interval). ``sd`` is the binomial standard error sqrt(p (1 - p) / n)."""
    if n < 1 or not 0 <= successes <= n:
        raise ValueError(f"binomial_interval() needs 0 <= successes <= n and n >= 1; got {successes}, {n}")
    z = 1.959964
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return Estimate(p, max(0.0, centre - half), min(1.0, centre + half), n, math.sqrt(p * (1 - p) / n))
