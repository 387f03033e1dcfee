"""How often each rule of :mod:`attnlab.runner.verdicts` says each word when the truth is known: simulated
data under a true null, a true effect and a true equivalence, at the sample sizes the notebooks use.

The two errors a reader cares about, each at most 5 % by design (plus Monte Carlo error):

- a false "holds": the claim is false, at its least favourable point (the true effect exactly at the null,
  or, for an equivalence claim, exactly at the margin);
- a false "does not hold": the claim is true, at its least favourable point (the true effect just on the
  claimed side of the null, or just inside the margin), whose limit is the same boundary.

The power rows check the detectable effect each row prints: at a true effect of that size, "holds" comes out
about 80 % of the time. ``python -m attnlab.runner.calibration --write docs/verdicts.md`` rewrites the table
in the docs (between its markers); a test keeps the two equal and checks the bounds.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from attnlab.runner import verdicts as v
from attnlab.runner.blocks import write_block
from attnlab.runner.composite import ALL_OF, all_of
from attnlab.runner.stats import LEVEL, t_quantile

SIMULATIONS = 4000
SEED = 20261202
ERROR_BOUND = 0.05  # the largest false "holds" or false "does not hold" rate a rule may have
TABLE_START = "<!-- calibration:start (python -m attnlab.runner.calibration --write docs/verdicts.md) -->"
TABLE_END = "<!-- calibration:end -->"


@dataclass(frozen=True)
class Scenario:
    """One simulated truth: ``draw(rng)`` returns one verdict on fresh data. ``errors`` names the words whose
    rate is bounded by ``ERROR_BOUND`` here (at a boundary both "holds" and "does not hold" are: the claim is
    false on one side of it and true on the other); none for a power row, whose "holds" rate is its power."""

    rule: str
    truth: str
    errors: tuple[str, ...]
    draw: Callable[[np.random.Generator], v.Verdict]


def _detectable(n: int, sd: float = 1.0) -> float:
    """The mean rule's detectable effect at the true spread: (t_.975 + t_.80) sd / sqrt(n)."""
    return (t_quantile(0.5 + LEVEL / 2, n - 1) + t_quantile(v.POWER, n - 1)) * sd / math.sqrt(n)


def _mean_draw(n: int, effect: float) -> Callable[[np.random.Generator], v.Verdict]:
    """The mean rule on ``n`` values drawn around ``effect`` (sd 1), against a null of 0."""
    return lambda r: v.mean_rule(r.normal(effect, 1.0, n), "above")


def _share_draw(n: int, t: float) -> Callable[[np.random.Generator], v.Verdict]:
    """The share rule on ``n`` units, each a success with probability ``t``, against the threshold ``t``."""
    return lambda r: v.share_rule(int(r.binomial(n, t)), n, t)


def scenarios() -> list[Scenario]:
    """The simulated truths: for each rule, its false-holds and false-does-not-hold boundaries and a power
    row, at the unit counts the notebooks use (3-10 seeds, 32 windows, 270 heads, 8 layers)."""
    out = []
    for n in (3, 5, 10, 32):
        out += [
            Scenario(f"mean (n={n})", "effect = null", (v.HOLDS, v.DOES_NOT_HOLD), _mean_draw(n, 0.0)),
            Scenario(f"mean (n={n})", "effect = detectable", (), _mean_draw(n, _detectable(n))),
        ]  # fmt: skip

    def pairs(r: np.random.Generator, n: int, diff: float) -> v.Verdict:
        seed_effect = r.normal(0.0, 3.0, n)  # shared by both conditions of a seed: pairing removes it
        a = {f"s{i}": seed_effect[i] + diff + r.normal(0.0, 0.7) for i in range(n)}
        b = {f"s{i}": seed_effect[i] + r.normal(0.0, 0.7) for i in range(n)}
        return v.paired_rule(a, b, "above")

    out += [
        Scenario("paired (n=5)", "difference = 0", (v.HOLDS, v.DOES_NOT_HOLD), lambda r: pairs(r, 5, 0.0)),
        Scenario("paired (n=5)", "difference = detectable", (),
                 lambda r: pairs(r, 5, _detectable(5, math.sqrt(0.98)))),
    ]  # fmt: skip
    margin = 1.0
    out += [
        Scenario("equivalence (n=10, margin 1 sd)", "difference = margin", (v.HOLDS, v.DOES_NOT_HOLD),
                 lambda r: v.equivalence_rule(r.normal(margin, 1.0, 10), margin)),
        Scenario("equivalence (n=10, margin 1 sd)", "difference = 0", (),
                 lambda r: v.equivalence_rule(r.normal(0.0, 1.0, 10), margin)),
    ]  # fmt: skip
    layers = np.arange(8.0)

    def trend(r: np.random.Generator, slope: float) -> v.Verdict:
        ys = {s: slope * layers + r.normal(0.0, 1.0, len(layers)) for s in range(5)}
        return v.slope_rule(layers, ys, "above")

    slope_sd = 1.0 / math.sqrt(float(((layers - layers.mean()) ** 2).sum()))  # a fitted slope's spread
    out += [
        Scenario("slope (5 seeds x 8 layers)", "slope = 0", (v.HOLDS, v.DOES_NOT_HOLD),
                 lambda r: trend(r, 0.0)),
        Scenario("slope (5 seeds x 8 layers)", "slope = detectable", (),
                 lambda r: trend(r, _detectable(5, slope_sd))),
    ]  # fmt: skip
    for n, threshold in ((270, 0.5), (32, 0.5), (20, 0.9)):
        name = f"share (n={n}, threshold {threshold:g})"
        out += [
            Scenario(name, "share = threshold", (v.HOLDS, v.DOES_NOT_HOLD), _share_draw(n, threshold)),
        ]  # fmt: skip

    def units(r: np.random.Generator, means: list[float]) -> v.Verdict:
        return v.every_unit({f"layer {i}": r.normal(m, 1.0, 5) for i, m in enumerate(means)}, "above")

    out += [
        Scenario("every unit (8 units x 5 seeds)", "one unit at the null, seven far above", (v.HOLDS,),
                 lambda r: units(r, [0.0] + [10.0] * 7)),
        Scenario("every unit (8 units x 5 seeds)", "every unit at the null", (v.DOES_NOT_HOLD,),
                 lambda r: units(r, [0.0] * 8)),
        Scenario("every unit (8 units x 5 seeds)", "every unit at 2x detectable", (),
                 lambda r: units(r, [2 * _detectable(5)] * 8)),
    ]  # fmt: skip
    return out + composite_scenarios() + fixed_model_scenarios()


def _correlated_parts(r: np.random.Generator, means: list[float], n: int, rho: float) -> list[np.ndarray]:
    """``len(means)`` parts measured on the same ``n`` units (seeds, windows), each unit's values correlated
    ``rho`` across parts (a seed that runs high in one part runs high in the others), sd 1."""
    shared = r.normal(0.0, 1.0, n)
    return [m + math.sqrt(rho) * shared + math.sqrt(1 - rho) * r.normal(0.0, 1.0, n) for m in means]


def composite_scenarios() -> list[Scenario]:
    """:func:`~attnlab.runner.composite.all_of` over k mean-rule parts, at the part counts the tables use (two
    parts, two conditions x two steps, five conditions, six models, four models x four offsets), the parts
    correlated as parts measured on the same seeds are (rho = 0.5; models are independent, rho = 0, and so
    are the sixteen, where the printed detectable is exact: one model's offsets correlate, which makes it
    conservative there): a false "does not hold" with every part exactly at its null, a false "holds" with one
    part at its null and the rest far on the claimed side, and the power at the detectable effect the row
    prints (each part at its effect for power 0.8 ** (1/k))."""
    out = []
    for k, n, rho in ((2, 5, 0.5), (3, 5, 0.5), (4, 10, 0.5), (5, 5, 0.5), (6, 32, 0.0), (16, 5, 0.0)):
        name = f"all of {k} parts (n={n}, rho={rho:g})"
        per_part = _detectable_at(n, v.POWER ** (1 / k))
        truths = (
            ("every part at its null", (v.DOES_NOT_HOLD,), [0.0] * k),
            ("one part at its null, the rest far above", (v.HOLDS,), [0.0] + [10.0] * (k - 1)),
            ("every part at the printed detectable", (), [per_part] * k),
        )
        out += [Scenario(name, truth, errors, _all_of_draw(means, n, rho)) for truth, errors, means in truths]
    return out


def _all_of_draw(means: list[float], n: int, rho: float) -> Callable[[np.random.Generator], v.Verdict]:
    """:func:`~attnlab.runner.composite.all_of` of mean-rule parts around ``means``
    (:func:`_correlated_parts`)."""

    def draw(r: np.random.Generator) -> v.Verdict:
        parts = _correlated_parts(r, means, n, rho)
        return all_of({f"part {i}": v.mean_rule(x, "above") for i, x in enumerate(parts)})

    return draw


def _detectable_at(n: int, power: float, sd: float = 1.0) -> float:
    """The mean rule's effect at ``power`` for ``n`` units of spread ``sd``."""
    return (t_quantile(0.5 + LEVEL / 2, n - 1) + t_quantile(power, n - 1)) * sd / math.sqrt(n)


def fixed_model_scenarios() -> list[Scenario]:
    """The rules for one fixed model: a statistic against 200 draws of random weights
    (:func:`~attnlab.runner.verdicts.rank_rule`; under the null the model is one more draw), and a trend
    over 8 or 24 layers against permuted layer orders (:func:`~attnlab.runner.verdicts.order_rule`, 999
    permutations here; under the null the layers are exchangeable)."""
    layers8, layers24 = np.arange(8.0), np.arange(24.0)

    def ranked(r: np.random.Generator, shift: float) -> v.Verdict:
        return v.rank_rule(float(r.normal(shift, 1.0)), r.normal(0.0, 1.0, 200), "above")

    def ordered(r: np.random.Generator, x: np.ndarray, slope: float) -> v.Verdict:
        return v.order_rule(
            x, slope * x + r.normal(0.0, 1.0, len(x)), "above", permutations=999, seed=int(r.integers(2**31))
        )

    return [
        Scenario(
            "rank (200 null draws)",
            "the model is one more draw",
            (v.HOLDS, v.DOES_NOT_HOLD),
            lambda r: ranked(r, 0.0),
        ),
        Scenario(
            "order (8 layers)", "no trend", (v.HOLDS, v.DOES_NOT_HOLD), lambda r: ordered(r, layers8, 0.0)
        ),
        Scenario(
            "order (24 layers)", "no trend", (v.HOLDS, v.DOES_NOT_HOLD), lambda r: ordered(r, layers24, 0.0)
        ),
        Scenario("order (24 layers)", "slope = 0.1 sd per layer", (), lambda r: ordered(r, layers24, 0.1)),
    ]


#: The calibration rows of each rule a claims row may name (its ``rule`` column starts with the key); rules
#: without sampling error (gates, exact values, sanity checks) have no error rate to calibrate.
FAMILIES = {
    v.MEAN: "mean", v.PAIRED: "paired", v.EQUIVALENCE: "equivalence", v.SLOPE: "slope", v.SHARE: "share",
    v.EVERY: "every unit", v.RANK: "rank", v.ORDER: "order", ALL_OF.split("{")[0]: "all of",
    v.AT_REFERENCE: "mean",  # the mean rule's t interval, refuting on either side (<= 2.5 % per side)
}  # fmt: skip
#: Rules without sampling error: exact bounds, gates, sanity checks; and a row with no rule (nothing was run).
UNSAMPLED = ("exact", "gate", "sanity check")


def family(rule: str) -> str | None:
    """The calibration rows (``rule`` column of :func:`calibrate`) that cover a claims row's ``rule``; "" for
    a rule without sampling error; None for a rule the calibration does not cover."""
    if rule.startswith(UNSAMPLED) or rule in ("", "nan"):
        return ""
    parts = re.match(r"all of (\d+) parts", rule)
    if parts:  # calibrated per number of parts
        return parts.group(0)
    return next((name for prefix, name in FAMILIES.items() if rule.startswith(prefix)), None)


def calibrate(simulations: int = SIMULATIONS, seed: int = SEED) -> pd.DataFrame:
    """The rate of each word per scenario over ``simulations`` draws (seeded: the same table on every
    machine), with the Monte Carlo standard error of the checked rate."""
    rows = []
    for i, sc in enumerate(scenarios()):
        rng = np.random.default_rng([seed, i])
        words = [sc.draw(rng).word for _ in range(simulations)]
        rates = {w: words.count(w) / simulations for w in v.VERDICTS}
        # the larger error, or the power
        checked = max(sc.errors, key=rates.__getitem__) if sc.errors else v.HOLDS
        rate = rates[checked]
        rows.append(
            {
                "rule": sc.rule,
                "truth": sc.truth,
                "checks": " and ".join(f"false '{w}'" for w in sc.errors) if sc.errors else "power",
                **{w: rates[w] for w in v.VERDICTS},
                "rate": rate,
                "mc_se": math.sqrt(rate * (1 - rate) / simulations),
            }
        )
    return pd.DataFrame(rows)


def markdown(table: pd.DataFrame, simulations: int = SIMULATIONS) -> str:
    """The calibration table as the docs print it."""
    head = "| rule | truth | checks | " + " | ".join(v.VERDICTS) + " | checked rate ± MC error |"
    lines = [
        f"Rates over {simulations:,} simulated runs per row (seed {SEED}); an error row must stay at or "
        f"below {ERROR_BOUND:.0%} plus Monte Carlo error (the checked rate is the larger of its two errors); "
        "a power row's checked rate is its share of 'holds' (at the detectable effect the claims rows print: "
        "near 80 %).",
        "",
        head,
        "|---|---|---|---|---|---|---|---|",
    ]
    for _, row in table.iterrows():
        rates = " | ".join(f"{row[w]:.3f}" for w in v.VERDICTS)
        checked = f"{row['rate']:.3f} ± {row['mc_se']:.3f}"
        lines.append(f"| {row['rule']} | {row['truth']} | {row['checks']} | {rates} | {checked} |")
    return "\n".join(lines) + "\n"


def write_docs(path: Path, table: pd.DataFrame) -> bool:
    """Replace the calibration block of ``path``; True if it changed."""
    return write_block(path, TABLE_START, TABLE_END, markdown(table))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--simulations", type=int, default=SIMULATIONS)
    parser.add_argument("--write", type=Path, help="rewrite the calibration block of this Markdown file")
    args = parser.parse_args(argv)
    table = calibrate(args.simulations)
    print(markdown(table, args.simulations))
    if args.write:
        print(f"{args.write}: {'updated' if write_docs(args.write, table) else 'unchanged'}")


if __name__ == "__main__":
    main()
