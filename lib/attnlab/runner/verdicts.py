"""The one decision rule every claims table uses (stated in ``docs/verdicts.md``, calibrated by
:mod:`attnlab.runner.calibration`).

A :class:`Verdict` is one of four words with its reason and the evidence a claims row shows beside it: the
estimate, its interval, n, the null it was judged against, the margin (for equivalence claims), the smallest
effect the test could have detected, and the rule's name. The words mean:

- **holds**: the 95% interval excludes the null on the claimed side (and clears the claim's smallest effect
  of interest, where it states one);
- **does not hold**: the interval lies on the opposite side of the null, or, for a claim of an effect, inside
  an equivalence margin fixed before the run;
- **inconclusive**: neither, with the reason (the mean on the other side, the interval containing the null)
  and the effect the test could have detected;
- **not testable here**: degenerate evidence (fewer than two independent units, zero spread from a floor or
  ceiling, a non-finite value from a diverged run, too few or too close x values for a trend), or a model that
  learned nothing (:func:`above_chance` and the papers' own gates).

The rules, one per kind of claim: :func:`mean_rule` (a mean against a null), :func:`paired_rule`
(differences of two conditions paired by name: seed, window), :func:`equivalence_rule` ("similar", "nearly
constant", "at no cost": two one-sided tests against a margin stated before the run), :func:`slope_rule` (a
trend: one slope per unit, then the mean rule), :func:`share_rule` (a fraction of heads or layers against a
threshold, Wilson interval), :func:`every_unit` ("in every layer": an intersection-union test),
:func:`exact_rule` (a deterministic quantity against a bound: an identity up to rounding).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, TypedDict, TypeVar, Unpack

import numpy as np
from scipy import special

from attnlab.runner.stats import LEVEL, as_values, binomial_interval, mean_interval, t_quantile, z_quantile

HOLDS = "holds"
DOES_NOT_HOLD = "does not hold"
INCONCLUSIVE = "inconclusive"
NOT_TESTABLE = "not testable here"
VERDICTS = (HOLDS, DOES_NOT_HOLD, INCONCLUSIVE, NOT_TESTABLE)
POWER = 0.80  # the detectable effect: the smallest true effect a rule calls "holds" this often
ALPHA_SIDE = (1 - LEVEL) / 2  # each word's error at its boundary: a 95% interval is two one-sided 2.5% tests

Side = Literal["above", "below"]
K = TypeVar("K", bound=Hashable)  # the name of a unit (seed, window, layer)
Values = Sequence[float] | np.ndarray  # one value per unit (or per x value)

# Rule names, as the claims tables' ``rule`` column prints them.
MEAN = "mean: 95% t interval vs null"
PAIRED = "paired by name: 95% t interval of the differences vs null"
EQUIVALENCE = "equivalence: 95% t interval inside +-margin (two one-sided tests)"
SLOPE = "slope per unit, then 95% t interval vs null"
SHARE = "share: 95% Wilson interval vs threshold"
EVERY = "every unit: each 95% interval clears the null; one refutes at 95%/k"
EXACT = "exact: a deterministic value vs a fixed bound"
GATE = "gate: the model must beat its trivial baseline"
RANK = "rank among many draws of the null: Monte Carlo p < 2.5% on either side"
ORDER = "slope over layers vs the slopes of permuted layer orders: p < 2.5% on either side"
#: The mean rule against a published value at a margin of zero (QK-speed's DTAP cell against the authors'):
#: the 95% t interval over seeds refutes on either side and never holds.
AT_REFERENCE = "the authors' value at margin 0: does not hold when the 95% t interval over seeds excludes it"


@dataclass(frozen=True)
class Verdict:
    """A verdict word, why, and the evidence: the estimate, its 95% interval, how many independent units it
    rests on, the null (or threshold) it was judged against, the equivalence margin where the claim has one,
    the smallest effect (distance from the null) the test detects with 80% power, and the rule's name."""

    word: str
    why: str = ""
    estimate: float = math.nan
    low: float = math.nan
    high: float = math.nan
    n: int = 0
    null: float = math.nan
    margin: float = math.nan
    detectable: float = math.nan
    rule: str = ""
    #: One-sided p-value of the claim against its null (small: evidence that it holds; "holds" <=> p < 2.5%
    #: for every interval rule); NaN where no test was run (not testable, exact, gates).
    p: float = math.nan
    #: One-sided p-value of the refuting test ("does not hold" <=> p_refute < 2.5%), NaN where there is none.
    p_refute: float = math.nan
    #: The detectable effect at another power (``power -> effect``): composite rules ask each part for the
    #: power it needs so that the whole row reaches 80%. Not part of the evidence a row prints.
    power_effect: Callable[[float], float] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.word not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}; got {self.word!r}")
        if isinstance(self.n, bool) or not isinstance(self.n, (int, np.integer)) or self.n < 0:
            raise ValueError(f"a verdict's n counts units (an integer >= 0); got {self.n!r}")
        for name in ("p", "p_refute"):
            value = getattr(self, name)
            if not math.isnan(value) and not 0.0 <= value <= 1.0:
                raise ValueError(f"a verdict's {name} is a probability in [0, 1] (or NaN); got {value!r}")
        if math.isfinite(self.low) and math.isfinite(self.high) and self.low > self.high:
            raise ValueError(f"a verdict's interval needs low <= high; got [{self.low}, {self.high}]")

    def __str__(self) -> str:
        return f"{self.word}: {self.why}" if self.why else self.word


class VerdictEvidence(TypedDict, total=False):
    """The evidence fields of a :class:`Verdict`, as keyword arguments."""

    estimate: float
    low: float
    high: float
    n: int
    null: float
    margin: float
    detectable: float
    rule: str
    p: float
    p_refute: float
    power_effect: Callable[[float], float] | None


def t_tail(t: float, df: int) -> float:
    """P(T >= t) for Student's t with ``df`` degrees of freedom (a one-sided p-value)."""
    return float(special.stdtr(df, -t))


def z_tail(z: float) -> float:
    """P(Z >= z) for the standard normal (a one-sided p-value)."""
    return float(special.ndtr(-z))


def not_testable(why: str, **evidence: Unpack[VerdictEvidence]) -> Verdict:
    """A "not testable here" verdict with ``why`` and whatever evidence there is."""
    return Verdict(NOT_TESTABLE, why, **evidence)


def _check_side(side: object) -> None:
    """A ValueError unless ``side`` is "above" or "below" (any other word once read as "below")."""
    if side not in ("above", "below"):
        raise ValueError(f"side must be 'above' or 'below'; got {side!r}")


def _toward(x: float, side: Side, null: float) -> float:
    """``x`` measured from ``null`` towards the claimed side (positive: on the claimed side)."""
    _check_side(side)
    return (x - null) if side == "above" else (null - x)


def _number(name: str, value: object, who: str) -> float:
    """``value`` as a float (a Python, numpy or 0-d torch number), else a ValueError naming the parameter."""
    if isinstance(value, (str, bytes, bool)) or value is None:
        raise ValueError(f"{who}(): {name} must be a number; got {value!r}")
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{who}(): {name} must be a number; got {value!r:.80}") from None


def _check_finite(name: str, value: object, who: str) -> None:
    """A ValueError naming the parameter unless ``value`` is a finite number (a NaN null or bound would give
    a verdict judged against nothing)."""
    if not math.isfinite(_number(name, value, who)):
        raise ValueError(f"{who}(): {name} must be finite; got {value!r}")


def check_within(
    who: str, name: str, values: object, low: float, high: float, *, positive: bool = False
) -> None:
    """A ValueError naming ``who`` and ``name`` unless every one of ``values`` (a number, or a sequence or
    mapping of them) lies in [``low``, ``high``] (and above 0 with ``positive``): an impossible input (a share
    above 1, an R^2 above 1, a percentage for a fraction, a time of 0 s) is refused, never judged. NaN passes:
    the rules judge a diverged run as not testable."""
    items = values.values() if isinstance(values, Mapping) else values
    xs = as_values([items] if isinstance(items, numbers.Real) else items, who)  # type: ignore[arg-type]
    outside = [x for x in xs if x < low or x > high or (positive and x <= 0)]
    if outside:
        where = "be above 0" if positive and high == math.inf else f"lie in [{low:g}, {high:g}]"
        raise ValueError(f"{who}(): {name} must {where}; got {outside[:3]}")


def check_count(who: str, name: str, k: object, n: object, low: int = 0) -> None:
    """A ValueError naming ``who`` unless ``k`` and ``n`` are integers with ``low`` <= ``k`` <= ``n``: a count
    of heads (or layers) with a property among ``n``; more than there are is impossible."""
    whole = all(isinstance(c, (int, np.integer)) and not isinstance(c, bool) for c in (k, n))
    if not whole or not low <= k <= n:  # type: ignore[operator]
        raise ValueError(f"{who}(): {name} must be a whole number in [{low}, n = {n}]; got {k!r}")


def _degenerate(xs: list[float]) -> str:
    """Why values cannot carry an interval, or "" when they can."""
    if not all(math.isfinite(x) for x in xs):
        return "a run diverged: a value is not finite"
    if len(xs) < 2:
        return "one unit only, no interval"
    if max(xs) == min(xs):
        return f"no spread between the {len(xs)} units (a floor or ceiling)"
    return ""


def mean_rule(
    values: Values,
    side: Side,
    null: float = 0.0,
    *,
    smallest: float = 0.0,
    margin: float = math.nan,
) -> Verdict:
    """The claim "the mean lies ``side`` ``null``", from one value per independent unit (seed, window, item).

    holds: the 95% t interval lies on the claimed side of ``null`` by more than ``smallest`` (the claim's
    smallest effect of interest; 0 by default). does not hold: the interval lies entirely on the other side,
    or inside ``null`` +- ``margin`` (an equivalence margin fixed before the run; none by default).
    inconclusive otherwise. not testable here: fewer than two values, zero spread, or a non-finite value.
    ``detectable``: ``smallest`` + (t_.975 + t_.80) s / sqrt(n), the true effect the rule calls "holds" with
    80% power."""
    xs = as_values(values, "mean_rule")
    if not xs:
        raise ValueError("no values to judge")
    _check_finite("null", null, "mean_rule")
    _check_finite("smallest", smallest, "mean_rule")
    if smallest < 0 or margin < 0:
        raise ValueError(f"smallest and margin must be >= 0; got {smallest}, {margin}")
    degenerate = _degenerate(xs)
    mean = float(np.mean(xs))
    if degenerate:
        return Verdict(NOT_TESTABLE, degenerate, mean, n=len(xs), null=null, margin=margin, rule=MEAN)
    est = mean_interval(xs)
    df = est.n - 1
    se = est.sd / math.sqrt(est.n)

    def power_effect(power: float) -> float:
        return smallest + (t_quantile(0.5 + LEVEL / 2, df) + t_quantile(power, df)) * se

    d = _toward(est.mean, side, null)
    p_refute = t_tail(-d / se, df)  # the mean far on the other side
    if math.isfinite(margin):  # or inside +-margin: two one-sided tests
        p_refute = min(p_refute, max(t_tail((d + margin) / se, df), t_tail((margin - d) / se, df)))
    evidence: VerdictEvidence = {
        "estimate": est.mean, "low": est.low, "high": est.high, "n": est.n, "null": null, "margin": margin,
        "detectable": power_effect(POWER), "rule": MEAN, "p": t_tail((d - smallest) / se, df),
        "p_refute": p_refute, "power_effect": power_effect,
    }  # fmt: skip
    detectable = evidence["detectable"]
    near, far = sorted((_toward(est.low, side, null), _toward(est.high, side, null)))
    if near > smallest:
        extra = f" by more than the smallest effect of interest {smallest:g}" if smallest else ""
        return Verdict(HOLDS, f"the 95% interval excludes the null{extra}", **evidence)
    if far < 0:
        return Verdict(DOES_NOT_HOLD, "the 95% interval lies on the other side of the null", **evidence)
    if math.isfinite(margin) and -margin < near and far < margin:
        return Verdict(DOES_NOT_HOLD, f"the 95% interval lies inside the margin +-{margin:g}", **evidence)
    if _toward(est.mean, side, null) <= 0:
        why = "the mean lies on the other side of the null, the 95% interval contains it"
    elif near > 0:
        why = f"the 95% interval excludes the null but not the smallest effect of interest {smallest:g}"
    else:
        why = "the 95% interval contains the null"
    return Verdict(INCONCLUSIVE, f"{why}; detectable effect {detectable:.3g}", **evidence)


def paired(a: Mapping[K, float], b: Mapping[K, float]) -> list[float]:
    """``a[k] - b[k]`` for every name ``k`` (seed, window), in ``a``'s order. Pairs by name, never by
    position: names in one mapping only are an error."""
    if not (hasattr(a, "keys") and hasattr(b, "keys")):  # a mapping or a pandas Series, never a list
        kinds = f"{type(a).__name__} and {type(b).__name__}"
        raise ValueError(
            f"paired(): each condition is a mapping {{unit: value}}, paired by name; got {kinds}"
        )
    if set(a) != set(b):
        only = sorted(map(str, set(a) ^ set(b)))
        raise ValueError(f"paired(): the conditions do not share their units; only in one: {only}")
    first, second = as_values([a[k] for k in a], "paired"), as_values([b[k] for k in a], "paired")
    return [x - y for x, y in zip(first, second, strict=True)]


def paired_rule(
    a: Mapping[K, float],
    b: Mapping[K, float],
    side: Side,
    null: float = 0.0,
    *,
    smallest: float = 0.0,
    margin: float = math.nan,
) -> Verdict:
    """The claim "``a`` - ``b`` lies ``side`` ``null``", from two conditions measured on the same units
    (``{seed: value}``), paired by name (:func:`paired`) and judged by :func:`mean_rule`."""
    verdict = mean_rule(paired(a, b), side, null, smallest=smallest, margin=margin)
    return replace(verdict, rule=PAIRED)


def equivalence_rule(values: Values, margin: float, null: float = 0.0) -> Verdict:
    """An equivalence claim ("similar", "nearly constant", "at no cost"): the mean of ``values`` (one per
    unit, e.g. paired differences) lies within ``null`` +- ``margin``, a margin stated with the claim before
    the run (never derived from the variants' own spread).

    Two one-sided tests on the 95% interval: holds when it lies inside the margin; does not hold when it lies
    entirely outside it; otherwise inconclusive. not testable here as for :func:`mean_rule`. ``detectable``:
    the narrowest margin the test confirms with 80% power when the true difference is exactly ``null``,
    (t_.975 + t_.90) s / sqrt(n)."""
    if not 0 < margin < math.inf:
        raise ValueError(f"an equivalence claim needs a finite margin > 0; got {margin}")
    _check_finite("null", null, "equivalence_rule")
    xs = as_values(values, "equivalence_rule")
    if not xs:
        raise ValueError("no values to judge")
    degenerate = _degenerate(xs)
    if degenerate:
        return Verdict(NOT_TESTABLE, degenerate, float(np.mean(xs)), n=len(xs), null=null, margin=margin,
                       rule=EQUIVALENCE)  # fmt: skip
    est = mean_interval(xs)
    df = est.n - 1
    se = est.sd / math.sqrt(est.n)

    def power_effect(power: float) -> float:
        return (t_quantile(0.5 + LEVEL / 2, df) + t_quantile(1 - (1 - power) / 2, df)) * se

    d = est.mean - null
    detectable = power_effect(POWER)
    evidence: VerdictEvidence = {
        "estimate": est.mean, "low": est.low, "high": est.high, "n": est.n, "null": null, "margin": margin,
        "detectable": detectable, "rule": EQUIVALENCE,
        "p": max(t_tail((d + margin) / se, df), t_tail((margin - d) / se, df)),  # inside: both one-sided
        "p_refute": min(t_tail((d - margin) / se, df), t_tail(-(d + margin) / se, df)),  # outside, one side
        "power_effect": power_effect,
    }  # fmt: skip
    if null - margin < est.low and est.high < null + margin:
        return Verdict(HOLDS, f"the 95% interval lies inside the margin +-{margin:g}", **evidence)
    if est.low > null + margin or est.high < null - margin:
        return Verdict(DOES_NOT_HOLD, f"the 95% interval lies outside the margin +-{margin:g}", **evidence)
    why = f"the 95% interval reaches past the margin +-{margin:g}; detectable margin {detectable:.3g}"
    return Verdict(INCONCLUSIVE, why, **evidence)


def slopes(x: Values, ys_by_unit: Mapping[K, Values]) -> dict[K, float]:
    """The least-squares slope of each unit's ``ys`` against ``x`` (NaN where a y is not finite; exactly 0
    where the ys are constant)."""
    xs = np.asarray(x, float)
    out: dict[K, float] = {}
    for unit, ys in ys_by_unit.items():
        y = np.asarray(ys, float)
        if y.shape != xs.shape:
            raise ValueError(f"slopes(): unit {unit!r} has {len(y)} values for {len(xs)} x values")
        # the closed form, so that a unit at a floor or ceiling (constant y) has a slope of exactly 0
        dx = xs - xs.mean()
        out[unit] = float((dx * (y - y.mean())).sum() / (dx * dx).sum()) if np.isfinite(y).all() else math.nan
    return out


def slope_rule(
    x: Values,
    ys_by_unit: Mapping[K, Values],
    side: Side,
    null: float = 0.0,
    *,
    min_points: int = 3,
    min_ratio: float | None = None,
    smallest: float = 0.0,
    margin: float = math.nan,
) -> Verdict:
    """A trend claim ("grows with depth", "widens with length"): one least-squares slope of y against ``x``
    per unit (seed), judged by :func:`mean_rule` (the evidence is the mean slope per unit of ``x``). not
    testable here with fewer than ``min_points`` distinct x values, or, given ``min_ratio``, when max(x) /
    min(x) is below it (a size range too narrow to carry a trend)."""
    xs = np.asarray(x, float)
    distinct = len(np.unique(xs))
    if distinct < min_points:
        return not_testable(f"{distinct} distinct x values; a trend needs {min_points}", n=len(ys_by_unit),
                            null=null, rule=SLOPE)  # fmt: skip
    if min_ratio is not None and xs.max() / xs.min() < min_ratio:
        ratio = float(xs.max() / xs.min())
        return not_testable(f"x spans {ratio:.3g}x; a trend needs {min_ratio:g}x", n=len(ys_by_unit),
                            null=null, rule=SLOPE)  # fmt: skip
    per_unit = list(slopes(xs, ys_by_unit).values())
    return replace(mean_rule(per_unit, side, null, smallest=smallest, margin=margin), rule=SLOPE)


def share_rule(successes: int, n: int, threshold: float, side: Side = "above") -> Verdict:
    """A share claim ("the majority of heads are convex", "most layers"): the share ``successes / n`` with its
    95% Wilson interval against ``threshold``. holds: the interval lies on the claimed side; does not hold: on
    the other; inconclusive otherwise. not testable here with no units. ``detectable``: (z_.975 + z_.80)
    sqrt(t (1 - t) / n) at the threshold t (3 / n, the rule of three, at t = 0 or 1)."""
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"a share's threshold lies in [0, 1]; got {threshold}")
    if not all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in (successes, n)):
        raise ValueError(f"a share counts whole units; got successes={successes!r}, n={n!r}")
    if n < 0 or not 0 <= successes <= max(n, 0):
        raise ValueError(f"a share needs 0 <= successes <= n units; got successes={successes}, n={n}")
    if n < 1:
        return not_testable("no units to count", n=0, null=threshold, rule=SHARE)
    est = binomial_interval(successes, n)
    spread = threshold * (1 - threshold)

    def power_effect(power: float) -> float:
        return (z_quantile(0.5 + LEVEL / 2) + z_quantile(power)) * math.sqrt(spread / n) if spread else 3 / n

    near, far = sorted((_toward(est.low, side, threshold), _toward(est.high, side, threshold)))
    if spread:  # the score test the Wilson interval inverts
        z = _toward(est.mean, side, threshold) / math.sqrt(spread / n)
        p, p_refute = z_tail(z), z_tail(-z)
    else:  # a threshold of 0 or 1: a single unit past it decides
        p, p_refute = (0.0 if near > 0 else 1.0), (0.0 if far < 0 else 1.0)
    detectable = power_effect(POWER)
    evidence: VerdictEvidence = {
        "estimate": est.mean, "low": est.low, "high": est.high, "n": n, "null": threshold,
        "detectable": detectable, "rule": SHARE, "p": p, "p_refute": p_refute, "power_effect": power_effect,
    }  # fmt: skip
    if near > 0:
        return Verdict(HOLDS, "the 95% interval excludes the threshold", **evidence)
    if far < 0:
        return Verdict(DOES_NOT_HOLD, "the 95% interval lies on the other side of the threshold", **evidence)
    return Verdict(
        INCONCLUSIVE, f"the 95% interval contains the threshold; detectable {detectable:.3g}", **evidence
    )


def every_unit(values_by_unit: Mapping[K, Values], side: Side, null: float = 0.0) -> Verdict:
    """A claim about every unit ("above zero in every layer", "at every learning rate"), from several values
    per unit (one per seed). An intersection-union test: holds when every unit's 95% interval lies on the
    claimed side; does not hold when some unit's interval at 1 - 0.05/k (k units, Bonferroni) lies on the
    other side, so a true claim is refuted at most 5% of the time; not testable when a unit is and nothing
    refutes; otherwise inconclusive, naming the open units. Evidence: the unit whose interval reaches least
    far towards the claimed side (its mean and 95% interval), n = units."""
    if not values_by_unit:
        raise ValueError("no units to judge")
    empty = [str(u) for u, v in values_by_unit.items() if not len(v)]
    if empty:
        raise ValueError(f"every_unit(): no values to judge at unit(s) {empty}")
    k = len(values_by_unit)
    verdicts = {u: mean_rule(v, side, null) for u, v in values_by_unit.items()}
    refuted = []
    for unit, values in values_by_unit.items():
        if verdicts[unit].word == NOT_TESTABLE:
            continue
        est = mean_interval(values, level=1 - (1 - LEVEL) / k)
        if max(_toward(est.low, side, null), _toward(est.high, side, null)) < 0:
            refuted.append(unit)
    testable = [v for v in verdicts.values() if v.word != NOT_TESTABLE]
    evidence: VerdictEvidence
    if testable:
        reach = {u: min(_toward(w.low, side, null), _toward(w.high, side, null)) for u, w in verdicts.items()}
        worst_unit = min((u for u in verdicts if verdicts[u].word != NOT_TESTABLE), key=reach.__getitem__)
        w = verdicts[worst_unit]
        evidence = {"estimate": w.estimate, "low": w.low, "high": w.high, "detectable": w.detectable}
    else:
        worst_unit, evidence = None, {}
    evidence |= {"n": k, "null": null, "rule": EVERY}
    if len(testable) == k:  # intersection-union: the largest p; a refutation Bonferroni-adjusted over k units
        evidence |= {
            "p": max(w.p for w in testable),
            "p_refute": min(1.0, k * min(w.p_refute for w in testable)),
        }
    names = lambda units: ", ".join(map(str, units))  # noqa: E731
    if refuted:  # the evidence shown is the refuting unit's, whose interval lies on the other side
        r = verdicts[refuted[0]]
        evidence |= {"estimate": r.estimate, "low": r.low, "high": r.high, "detectable": r.detectable}
        return Verdict(DOES_NOT_HOLD, f"the interval lies on the other side of the null at {names(refuted)}",
                       **evidence)  # fmt: skip
    untestable = [u for u, v in verdicts.items() if v.word == NOT_TESTABLE]
    if untestable:
        why = f"not testable at {names(untestable)} ({verdicts[untestable[0]].why})"
        return Verdict(NOT_TESTABLE, why, **evidence)
    open_units = [u for u, v in verdicts.items() if v.word != HOLDS]
    if not open_units:
        return Verdict(
            HOLDS, f"every unit's 95% interval excludes the null (weakest: {worst_unit})", **evidence
        )
    return Verdict(INCONCLUSIVE, f"the 95% interval contains the null at {names(open_units)}", **evidence)


def exact_rule(value: float, bound: float, side: Side, *, n: int, what: str = "the value") -> Verdict:
    """A deterministic quantity (an algebraic identity up to rounding, a count) against a fixed bound: holds
    when ``value`` lies on ``side`` of ``bound``, does not hold otherwise; not testable when it is not a
    number. No sampling, so no interval: use it only where reruns give the same value."""
    if not math.isfinite(bound) or isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"an exact rule needs a finite bound and a whole n >= 0; got bound={bound}, n={n!r}")
    if not math.isfinite(_number(what, value, "exact_rule")):
        return not_testable(f"{what} is not a number", n=n, null=bound, rule=EXACT)
    holds = _toward(value, side, bound) > 0
    word, rel = (HOLDS, side) if holds else (DOES_NOT_HOLD, "below" if side == "above" else "above")
    why = (
        f"{what} {value:.3g} lies {rel} the bound {bound:g}"
        if holds
        else f"{what} {value:.3g} is not {side} {bound:g}"
    )
    return Verdict(word, why, value, n=n, null=bound, rule=EXACT)


def above_chance(correct: int, n: int, chance: float) -> Verdict | None:
    """The gate before an accuracy claim: None when the 95% Wilson interval of ``correct / n`` lies above
    ``chance`` (the claim can be judged); otherwise a "not testable here" verdict saying the model is not
    above chance, with the accuracy, its interval and the chance level as evidence. A model that learned
    nothing supports no claim about what it learned."""
    if not 0.0 <= chance < 1.0:
        raise ValueError(f"chance must lie in [0, 1); got {chance}")
    est = binomial_interval(correct, n)
    if est.low > chance:
        return None
    interval = f"95% interval {est.low:.3f}-{est.high:.3f}"
    why = f"accuracy {est.mean:.3f} ({interval}) is not above chance {chance:.3f}"
    return Verdict(NOT_TESTABLE, why, est.mean, est.low, est.high, n, chance, rule=GATE)


def gated(gate: Verdict | None, verdict: Verdict, who: str = "") -> Verdict:
    """``verdict``, unless a gate failed (``gate`` is a "not testable here" verdict): then the gate, its
    reason prefixed with ``who`` (e.g. "SA: accuracy ... is not above chance")."""
    if gate is None:
        return verdict
    if gate.word != NOT_TESTABLE:
        raise ValueError(f"a gate is None or not testable; got {gate.word!r}")
    return replace(gate, why=f"{who}: {gate.why}" if who else gate.why)


def _monte_carlo(observed: float, draws: np.ndarray, side: Side, null: float) -> tuple[float, float]:
    """One-sided Monte Carlo p-values of ``observed`` among ``draws`` of the null (the observation counted
    among them, so a p-value is never 0): towards ``side`` (the claim) and away from it (the refutation)."""
    here = _toward(observed, side, null)
    towards = (draws - null) if side == "above" else (null - draws)
    n = len(draws)
    return float((1 + (towards >= here).sum()) / (n + 1)), float((1 + (towards <= here).sum()) / (n + 1))


def rank_rule(observed: float, draws: Values, side: Side, *, what: str = "the value") -> Verdict:
    """A statistic of one fixed model against its distribution under a null that can be drawn many times
    (random weights of the same shapes, shuffled keys): holds when ``observed`` lies beyond all but 2.5% of
    ``draws`` on the claimed side (Monte Carlo p < 2.5%), does not hold when it lies as far on the other side.
    The row shows the observed value, the null's median as ``null`` and the null's central 95% as the
    interval, n = draws. Never one draw: with fewer than 79 draws the p-value cannot reach 2.5%, and the row
    is not testable. ``detectable``: the distance from the median to the null's 97.5% (or 2.5%) quantile,
    which an observation must pass."""
    _check_side(side)
    _number("the observed value", observed, "rank_rule")
    xs = np.asarray(draws, float)
    if xs.ndim != 1:
        raise ValueError(f"rank_rule(): draws must be one value per draw (1-D); got shape {xs.shape}")
    if len(xs) < 79:
        return not_testable(
            f"{len(xs)} draws of the null; a 2.5% Monte Carlo test needs 79",
            estimate=observed,
            n=len(xs),
            rule=RANK,
        )
    if not (math.isfinite(observed) and np.isfinite(xs).all()):
        return not_testable(f"{what} or a draw of its null is not finite", n=len(xs), rule=RANK)
    median = float(np.median(xs))
    low, high = (float(q) for q in np.quantile(xs, [ALPHA_SIDE, 1 - ALPHA_SIDE]))
    p, p_refute = _monte_carlo(observed, xs, side, median)
    edge = high if side == "above" else low
    evidence: VerdictEvidence = {
        "estimate": observed,
        "low": low,
        "high": high,
        "n": len(xs),
        "null": median,
        "detectable": abs(edge - median),
        "rule": RANK,
        "p": p,
        "p_refute": p_refute,
    }
    if p < ALPHA_SIDE:
        return Verdict(
            HOLDS, f"{what} {observed:.3g} lies beyond all but {p:.1%} of {len(xs)} null draws", **evidence
        )
    if p_refute < ALPHA_SIDE:
        return Verdict(
            DOES_NOT_HOLD,
            f"{what} {observed:.3g} lies on the other side of all but {p_refute:.1%} of {len(xs)} null draws",
            **evidence,
        )
    return Verdict(
        INCONCLUSIVE,
        f"{what} {observed:.3g} lies inside the null's central 95% [{low:.3g}, {high:.3g}]",
        **evidence,
    )


def order_rule(x: Values, y: Values, side: Side, *, permutations: int = 9999, seed: int = 0) -> Verdict:
    """A trend over the layers of one fixed model ("grows with depth"): the least-squares slope of ``y`` (one
    value per layer, e.g. a mean over windows) against ``x`` (the layer index), judged against the slopes of
    ``permutations`` seeded random reorderings of the layers (the null: no relation between depth and y).
    The layers are the units, never the windows behind each value. holds: the slope lies beyond all but 2.5%
    of the permuted slopes on the claimed side; does not hold: as far on the other side; not testable with
    fewer than 5 layers (4! = 24 orders cannot reach 2.5%) or a constant y. Interval: the permuted slopes'
    central 95%; ``detectable``: its half-width on the claimed side."""
    _check_side(side)
    if not isinstance(permutations, int) or permutations < 79:
        raise ValueError(
            f"order_rule(): permutations must be an integer >= 79 (a 2.5% test); got {permutations!r}"
        )
    xs, ys = np.asarray(x, float), np.asarray(y, float)
    if xs.ndim != 1 or ys.ndim != 1:
        raise ValueError(
            f"order_rule(): x and y must be one value per layer (1-D); got {xs.shape}, {ys.shape}"
        )
    if xs.shape != ys.shape:
        raise ValueError(f"order_rule(): {len(xs)} x values, {len(ys)} y values")
    if len(xs) < 5:  # 4! = 24 orders: the most extreme one still has p = 1/24 > 2.5%
        return not_testable(f"{len(xs)} layers; a permutation trend needs 5", n=len(xs), null=0.0, rule=ORDER)
    if not np.isfinite(ys).all():
        return not_testable("a value is not finite", n=len(xs), null=0.0, rule=ORDER)
    if not np.isfinite(xs).all() or xs.max() == xs.min():
        return not_testable(
            "the layers' x values are not finite or all equal", n=len(xs), null=0.0, rule=ORDER
        )
    if ys.max() == ys.min():
        return not_testable(f"no spread between the {len(ys)} layers", n=len(xs), null=0.0, rule=ORDER)
    dx = xs - xs.mean()

    def slope(values: np.ndarray) -> np.ndarray:
        return (values - values.mean(axis=-1, keepdims=True)) @ dx / (dx @ dx)

    rng = np.random.default_rng(seed)
    shuffled = slope(rng.permuted(np.tile(ys, (permutations, 1)), axis=1))
    observed = float(slope(ys))
    verdict = rank_rule(observed, shuffled, side, what="the slope")
    return replace(verdict, null=0.0, n=len(xs), rule=ORDER, estimate=observed)
