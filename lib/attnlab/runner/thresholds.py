"""Every threshold, margin and smallest effect a claims table is judged with, in one registry: its value,
what it means, where it comes from, the commit that fixed its value, the first claims table that used it, and
whether a table of the same paper had already been seen when it was fixed.

A threshold from the paper's own text or number (``origin="paper"``) or from the claim's words ("the
majority": one half) is not a choice made on our data. One of this project's own (``"ours"``,
``"convention"``) fixed after an earlier table of its paper had been seen (``seen_before``) may have been
chosen knowing a result; :func:`posthoc` says so in the row's reason and judges the row at the plain null as
well. The commits come from ``git log -S <name>`` (the commit that set the current value) and ``git log --
figures/cpu/<paper>/claims.csv``; ``docs/verdicts.md`` prints the registry.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from attnlab.runner.blocks import write_block
from attnlab.runner.verdicts import Verdict

Origin = Literal["paper", "claim's words", "convention", "ours"]


@dataclass(frozen=True)
class Threshold:
    """One registered threshold (see the module's docstring)."""

    key: str  # <paper>.<NAME>, the constant's name in the paper's rules
    value: float | tuple[float, float]  # a threshold or margin, or a band (low, high)
    meaning: str
    origin: Origin
    fixed_in: str  # the commit that set the current value
    first_table: str  # the first committed cpu claims table judged with it
    seen_before: str = ""  # the paper's earlier cpu table already committed when it was fixed ("" for none)

    @property
    def posthoc(self) -> bool:
        """Whether the value is this project's choice, fixed after a table of its paper had been seen."""
        return self.origin in ("ours", "convention") and bool(self.seen_before)


_T = Threshold
REGISTRY: dict[str, Threshold] = {
    t.key: t
    for t in (
        # Contribution weights (first cpu table ea7c3a1, 2026-11-29)
        _T(
            "contribution_weights.FIRST_TOKEN_ATTENTION",
            0.3,
            "Fig. 1 'a large attention mass': the first token's mean attention above this",
            "ours",
            "fbfcd07",
            "0abea16",
            "ea7c3a1",
        ),
        _T(
            "contribution_weights.TAIL_CORRELATION",
            0.3,
            "'driven by attention and alignment jointly': the tail's "
            "correlation with each above this (a 'moderate' correlation)",
            "convention",
            "fbfcd07",
            "0abea16",
            "ea7c3a1",
        ),
        _T(
            "contribution_weights.HEAD_MAJORITY",
            0.5,
            "'the majority of heads': a share above one half",
            "claim's words",
            "fbfcd07",
            "0abea16",
            "ea7c3a1",
        ),
        _T(
            "contribution_weights.ANTI_ALIGNMENT",
            0.1,
            "'anti-aligned': the sink's mean cosine below -0.1 (set after the cpu run's -0.041 was seen); "
            "retired: it judges no row since anti-alignment is judged by sign and against ordinary positions",
            "ours",
            "98cea2c",
            "6186839",
            "ea7c3a1",
        ),
        _T(
            "contribution_weights.SATURATION_SHARE",
            0.5,
            "gate: curves saturated when the smallest fraction gives "
            "more than this share of the largest fraction's effect for every measure",
            "ours",
            "e9ad98a",
            "0abea16",
            "ea7c3a1",
        ),
        # QK-speed (first cpu table 5490e55, 2026-11-29)
        _T(
            "qk_speed.MIN_GAIN",
            0.05,
            "'sharper': the smallest rise in attention mass of interest",
            "ours",
            "5490e55",
            "5490e55",
        ),
        _T(
            "qk_speed.MIN_ACCURACY",
            0.95,
            "Fig. 2 'predicts correctly': accuracy above this",
            "ours",
            "aa97830",
            "c7bc171",
            "5490e55",
        ),
        _T(
            "qk_speed.WEAK_MASS",
            0.5,
            "Fig. 2 'with weak attention': distinct-token mass below one half",
            "claim's words",
            "aa97830",
            "c7bc171",
            "5490e55",
        ),
        _T(
            "qk_speed.SAME_ACCURACY_POINTS",
            2.0,
            "'at the same accuracy' (synthetic): equivalence margin in accuracy points",
            "convention",
            "aa97830",
            "c7bc171",
            "5490e55",
        ),
        _T(
            "qk_speed.SIMILAR_POINTS",
            2.0,
            "'similar accuracy / F1' (real data): equivalence margin in points (4.5 in the first table)",
            "convention",
            "4f178b9",
            "3f1f9bd",
            "5490e55",
        ),
        _T(
            "qk_speed.GOOD_FIT",
            0.95,
            "Fig. 4 'grows like log t': R^2 of mu_OV ~ log t above this",
            "ours",
            "aa97830",
            "c7bc171",
            "5490e55",
        ),
        _T(
            "qk_speed.LEARNS_AGREEMENT",
            0.9,
            "SVA 'learns agreement': accuracy above this (the authors reach 0.92-0.93)",
            "paper",
            "aa97830",
            "c7bc171",
            "5490e55",
        ),
        _T(
            "qk_speed.SVA_CHANCE",
            0.5,
            "SVA chance on a balanced two-class task",
            "claim's words",
            "ab31ca9",
            "33309de",
            "5490e55",
        ),
        _T(
            "qk_speed.QA_FLOOR",
            0.05,
            "gate: SQuAD 'learns the task' above this exact-match rate",
            "ours",
            "ab31ca9",
            "33309de",
            "5490e55",
        ),
        _T(
            "qk_speed.DOMINANCE",
            2.0,
            "Fig. 4: a term of the first integral dominates at this many times the other",
            "ours",
            "ab31ca9",
            "33309de",
            "5490e55",
        ),
        _T(
            "qk_speed.QK_STILL",
            0.01,
            "a QK circuit 'did not leave its init': at most this attention mass moved",
            "ours",
            "38bb940",
            "be033ed",
            "5490e55",
        ),
        # S-D routing (first cpu table ea7c3a1, 2026-11-29)
        _T(
            "sd_routing.MAJORITY",
            0.5,
            "'filtering dominates', 'lower rank': the typical head, a share above one half",
            "claim's words",
            "fbfcd07",
            "0abea16",
            "ea7c3a1",
        ),
        _T(
            "sd_routing.CHEAP_PCT",
            2.0,
            "'nearly free': equivalence margin in % PPL (the paper's +0.3 PPL is ~1 %)",
            "ours",
            "a439d46",
            "ea7c3a1",
        ),
        _T(
            "sd_routing.CATASTROPHIC_PCT",
            20.0,
            "'catastrophic': a PPL increase above this %",
            "ours",
            "a439d46",
            "ea7c3a1",
        ),
        _T(
            "sd_routing.LINEAR_TOLERANCE_PCT",
            5.0,
            "the paper's '< 5 % PPL' for leading linear layers",
            "paper",
            "a439d46",
            "ea7c3a1",
        ),
        _T(
            "sd_routing.STABLE_TOLERANCE",
            1e-6,
            "the largest real part of an eigenvalue of S - D counted as <= 0 (rounding)",
            "convention",
            "0bde1c8",
            "1ffb90e",
            "ea7c3a1",
        ),
        _T(
            "sd_routing.D_MOVED_CV",
            0.25,
            "gate: D 'moved' from its initialisation when its mean CV is above this",
            "ours",
            "95eb220",
            "3bc1fe6",
            "ea7c3a1",
        ),
        _T(
            "sd_routing.MIN_SIZES",
            3,
            "a trend over sizes needs three sizes",
            "convention",
            "95eb220",
            "3bc1fe6",
            "ea7c3a1",
        ),
        _T(
            "sd_routing.MIN_SIZE_RATIO",
            8.0,
            "and sizes spanning at least this factor in parameters",
            "convention",
            "95eb220",
            "3bc1fe6",
            "ea7c3a1",
        ),
        _T(
            "sd_routing.CLOSE_PCT",
            1.4,
            "'stays close to the baseline' (ELU+1 on the first layers): equivalence margin in % PPL",
            "paper",
            "95eb220",
            "3bc1fe6",
            "ea7c3a1",
        ),
        _T(
            "sd_routing.ONE_PLANE",
            (1.5, 2.5),
            "the head-mean ranks (rank units) counted as one rotation plane",
            "ours",
            "0bde1c8",
            "1ffb90e",
            "ea7c3a1",
        ),
        _T(
            "sd_routing.FEW_DIMENSIONS",
            (1.5, 3.5),
            "routing 'in 2-3 dimensions': the band of head-mean ranks, half a plane either side",
            "ours",
            "0bde1c8",
            "1ffb90e",
            "ea7c3a1",
        ),
        _T(
            "sd_routing.ALLOCATION_MARGIN_PCT",
            1.0,
            "'at least as good as a control': margin in % PPL",
            "ours",
            "7168262",
            "6fd96c2",
            "ea7c3a1",
        ),
        # Synthesis (first cpu table ff66458, 2026-12-01)
        _T(
            "synthesis.MIN_RATIOS",
            3,
            "a trend over the QK/OV ratio sweep needs three ratios",
            "convention",
            "187074e",
            "3bc1fe6",
            "ff66458",
        ),
        # XSA (first cpu table c13caed, 2026-11-29)
        _T(
            "xsa.ORTHOGONAL_TOLERANCE",
            1e-5,
            "Alg. 1: the largest |cos(z_i, v_i)| counted as rounding",
            "convention",
            "08a8e3b",
            "8fc6bfa",
            "c13caed",
        ),
        _T(
            "xsa.OVERHEAD_LIMIT",
            1.10,
            "Fig. 2 'minimal overhead': XSA/SA time or memory ratio at most this",
            "ours",
            "08a8e3b",
            "8fc6bfa",
            "c13caed",
        ),
        _T(
            "xsa.STEADY_SLOPE_MARGIN",
            0.01,
            "Fig. 4 'nearly constant': equivalence margin on the gap's slope per "
            "doubling of the learning rate",
            "ours",
            "187074e",
            "3f1f9bd",
            "c13caed",
        ),
        _T(
            "xsa.EARLY_WARMUPS",
            3,
            "gap over training: the early gap is read no sooner than this many warm-ups",
            "ours",
            "2bffb22",
            "3043ab0",
            "c13caed",
        ),
    )
}


def _entry(key: str) -> Threshold:
    if key not in REGISTRY:
        raise KeyError(f"{key!r} is not in attnlab.runner.thresholds.REGISTRY; register it there first")
    return REGISTRY[key]


def value(key: str) -> float:
    """The registered value of ``key`` (``<paper>.<NAME>``); a KeyError names the registry."""
    found = _entry(key).value
    if isinstance(found, tuple):
        raise TypeError(f"{key} is a band {found}: read it with band()")
    return found


def band(key: str) -> tuple[float, float]:
    """The registered band ``(low, high)`` of ``key``."""
    found = _entry(key).value
    if not isinstance(found, tuple):
        raise TypeError(f"{key} is a single value {found}: read it with value()")
    return found


def shown(found: float | tuple[float, float]) -> str:
    """A registered value as the docs and reasons print it (a band as low-high)."""
    return f"{found[0]:g}-{found[1]:g}" if isinstance(found, tuple) else f"{found:g}"


def posthoc(key: str, at_threshold: Verdict, at_plain_null: Verdict) -> Verdict:
    """The row's verdict at the registered threshold ``key``; where that threshold is
    :attr:`Threshold.posthoc`,
    its reason says so (with the commit) and gives the verdict at the plain null (``at_plain_null``, the same
    claim judged with no chosen threshold: 0, chance, the other condition)."""
    t = _entry(key)
    for name, verdict in (("at_threshold", at_threshold), ("at_plain_null", at_plain_null)):
        if not isinstance(verdict, Verdict):
            raise TypeError(f"posthoc(): {name} must be a Verdict; got {verdict!r}")
    if not t.posthoc:
        return at_threshold
    note = (
        f"; threshold {shown(t.value)} ({key.split('.')[1]}) fixed in {t.fixed_in} after table "
        f"{t.seen_before} had been seen; at the plain null ({at_plain_null.null:g}): {at_plain_null.word}"
    )
    return replace(at_threshold, why=at_threshold.why + note)


def markdown() -> str:
    """The registry as the docs print it."""
    lines = [
        "| threshold | value | meaning | origin | fixed in | first table | table seen before | post hoc |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for t in REGISTRY.values():
        lines.append(
            f"| `{t.key}` | {shown(t.value)} | {t.meaning} | {t.origin} | {t.fixed_in} | {t.first_table} | "
            f"{t.seen_before or '-'} | {'yes' if t.posthoc else 'no'} |"
        )
    return "\n".join(lines) + "\n"


BLOCK_START = "<!-- thresholds:start (python -m attnlab.runner.thresholds --write docs/verdicts.md) -->"
BLOCK_END = "<!-- thresholds:end -->"


def write_docs(path: Path) -> bool:
    """Replace the registry block of ``path`` with :func:`markdown`; True if it changed."""
    return write_block(path, BLOCK_START, BLOCK_END, markdown())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="print (or --write into a Markdown file) the registry")
    parser.add_argument("--write", type=Path, help="rewrite the registry block of this Markdown file")
    args = parser.parse_args(argv)
    if args.write:
        print(f"{args.write}: {'updated' if write_docs(args.write) else 'unchanged'}")
    else:
        print(markdown())


if __name__ == "__main__":
    main()
